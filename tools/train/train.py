#!/usr/bin/python3
"""Train cabin's tiny assistant model (llama architecture) on the generated corpus.

Data: every training dialogue is rendered in the phi-3 chat layout and tokenized exactly as
cabin's C tokenizer would (spm_tokenizer.Tokenizer); dialogues are packed, in corpus order, into
sessions of at most --ctx tokens (one <s> per session, the dialogues following each other as
one long conversation, never split). Only reply tokens and each reply's closing <|end|> carry
loss (and, with --user-weight W > 0, the user's text and its <|end|>, weighted W), the action's
tokens (<act>...</act>) weighted --action-weight times the sentence's (the loss is the weighted
mean, so the logged figure is that weighted mean). Batches take sessions in a fixed shuffled
order (seeded), so a run is reproducible.

Writes build/train/model.pt (state dict + config) and build/train/train_log.txt.

--bf16 1 runs the forward pass under torch.autocast(bfloat16) (about 2.5x faster on this
AVX512-BF16 CPU; weights, optimizer state and loss stay float32). --dropout P drops the
attention and FFN outputs with probability P before they join the residual stream (training
only; the exported model has no trace of it). Both are off by default; `make model` turns them on.

usage: train.py [--steps N] [--batch B] [--lr LR] [--dim D --layers L --heads H --kv-heads K --ffn F]
                [--bf16 0|1] [--min-lr FRACTION] [--dropout P] [--init CKPT]
                [--ema DECAY[,DECAY...] --ema-start STEP]
"""
import argparse
import os
import sys

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")   # spinning OpenMP threads lose badly on a busy 2-core machine
# glibc's malloc as a training step wants it: a step allocates and frees tensors of 1-16 MB
# (activations, logits) hundreds of times; by default the large ones are mmap'ed and unmapped each
# time and every page of them faults again. Keep freed memory in the heap (mmap only above 32 MB,
# never trim) and back the heap with transparent huge pages: about 20% off a step here. glibc reads
# GLIBC_TUNABLES at process start, so the script runs itself again with them set.
if __name__ == "__main__" and "GLIBC_TUNABLES" not in os.environ:
    os.environ["GLIBC_TUNABLES"] = ("glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432:"
                                    "glibc.malloc.trim_threshold=68719476736")
    os.execv(sys.executable, [sys.executable] + sys.argv)
import json
import math
import random
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spm_tokenizer  # noqa: E402
import model as model_module  # noqa: E402
from model import Config, TinyLlama  # noqa: E402


def best_fit_sessions(lengths, room):
    """Dialogue lengths -> sessions (lists of dialogue indices, each in corpus order) whose
    lengths sum to at most room: best fit decreasing (longest dialogue first, each into the
    fullest session it still fits, ties to the earliest session). Sessions in the order of their
    first dialogue. Deterministic."""
    by_room = [[] for _ in range(room + 1)]   # sessions with this much room left (a stack each)
    sessions = []
    for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        n = min(lengths[i], room)
        r = next((r for r in range(n, room + 1) if by_room[r]), None)
        if r is None:
            sessions.append([])
            s = len(sessions) - 1
            r = room
        else:
            s = by_room[r].pop()
        sessions[s].append(i)
        by_room[r - n].append(s)
        by_room[r - n].sort(reverse=True)     # pop() takes the earliest session
    for s in sessions:
        s.sort()
    sessions.sort(key=lambda s: s[0])
    return sessions


def pack_sessions(tok, corpus_path, ctx, fit="order"):
    """-> ids (n_seq, ctx) int64, roles (n_seq, ctx) uint8 (0 no loss, 1 reply, 2 action, 3 user
    text: spm_tokenizer.encode_session). Each session is <s> and whole dialogues (one longer than
    a session is cut). fit "order": consecutive dialogues until the next does not fit (a quarter
    of a 256-token session is padding); "best": best_fit_sessions (under 1% padding).
    Padding is </s> with no loss."""
    dialogues = []
    with open(corpus_path) as f:
        for line in f:
            ids, tgt = tok.encode_session(json.loads(line)["turns"])
            assert ids[0] == spm_tokenizer.BOS
            dialogues.append((ids[1:ctx], tgt[1:ctx]))     # one <s> per session, added below
    if fit == "best":
        groups = best_fit_sessions([len(d[0]) for d in dialogues], ctx - 1)
    else:
        assert fit == "order", fit
        groups, cur, used = [], [], 0
        for i, (ids, _) in enumerate(dialogues):
            if cur and used + len(ids) > ctx - 1:
                groups.append(cur)
                cur, used = [], 0
            cur.append(i)
            used += len(ids)
        if cur:
            groups.append(cur)
    n = len(groups)
    ids_arr = np.full((n, ctx), spm_tokenizer.EOS, dtype=np.int64)
    tgt_arr = np.zeros((n, ctx), dtype=np.uint8)
    for row, group in enumerate(groups):
        ids = [spm_tokenizer.BOS] + [t for i in group for t in dialogues[i][0]]
        tgt = [0] + [t for i in group for t in dialogues[i][1]]
        ids_arr[row, :len(ids)] = ids
        tgt_arr[row, :len(tgt)] = tgt
    return ids_arr, tgt_arr


class WeightedCrossEntropy(torch.autograd.Function):
    """sum_i w_i (logsumexp(logits_i) - logits_i[y_i]) for logits (N, V) float32, targets y (N,)
    int64, weights w (N,) float32. The forward keeps softmax(logits) for the backward, which is
    w_i g (softmax_i - onehot(y_i)): torch 1.13's cross_entropy backward (log_softmax_backward)
    alone took ~7% of a training step here; this whole loss takes 5.5 ms (4080 x 1024 logits,
    against 18 ms for F.cross_entropy forward and backward). The backward reuses the kept softmax
    in place, so it cannot run twice (no retain_graph)."""

    @staticmethod
    def forward(ctx, logits, y, w):
        m = logits.max(-1, keepdim=True).values
        p = (logits - m).exp_()
        s = p.sum(-1, keepdim=True)
        nll = (s.log() + m).squeeze(-1) - logits.gather(1, y[:, None]).squeeze(-1)
        p.div_(s)
        ctx.save_for_backward(p, y, w)
        return (nll * w).sum()

    @staticmethod
    def backward(ctx, g):
        p, y, w = ctx.saved_tensors
        p[torch.arange(len(y)), y] -= 1.0
        p.mul_((w * g)[:, None])
        return p, None, None


def reply_loss(model, x, roles, action_weight, user_weight, bf16, teacher=None, distill=0.0):
    """The training loss of one batch: x (B, T) token ids, roles (B, T) uint8 (pack_sessions);
    position i predicts x[:, i + 1] with weight 1 (reply), action_weight (action) or
    user_weight (user text) by the role of that token, and the loss is the weighted mean.
    Logits are computed only where a weight is not zero (about half the positions: prompts and
    padding carry none), which saves that part of the output product, its float32 copy and the
    softmax. bf16: the model's matrix products under bfloat16 autocast.
    teacher, distill > 0: plus distill times the mean KL(teacher || model) over the reply tokens
    of the turns not marked new (roles 1 and 2; a new turn's are 5 and 6, trained as 1 and 2), so
    that what the model is taught afresh moves what it already does as little as it can
    (learning without forgetting). A teacher turn's reply (roles 9 and 10) has no
    cross-entropy, only the KL: texts the model is not taught on, where it keeps the teacher's
    answers."""
    role = roles[:, 1:].long()
    kind = role & 3                                   # 5, 6 (a new turn's reply) train as 1, 2
    held = role >= 8                                  # a teacher turn's reply: the KL alone
    w = torch.where(kind == 2, action_weight, torch.where(kind == 3, user_weight, 1.0)) * (role > 0) * ~held
    w = w.reshape(-1).float()
    sel = torch.nonzero((w > 0) | held.reshape(-1)).squeeze(1)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bool(bf16)):
        h = model.hidden(x[:, :-1])
        logits = model.logits(h.reshape(-1, h.shape[-1]).index_select(0, sel))
    w = w.index_select(0, sel)
    loss = WeightedCrossEntropy.apply(logits.float(), x[:, 1:].reshape(-1).index_select(0, sel), w) / w.sum().clamp_min(1.0)
    if teacher is None or distill <= 0:
        return loss
    kept = ((role == 1) | (role == 2) | held).reshape(-1).index_select(0, sel)
    if not bool(kept.any()):
        return loss
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bool(bf16)):
        th = teacher.hidden(x[:, :-1])
        tl = teacher.logits(th.reshape(-1, th.shape[-1]).index_select(0, sel[kept]))
    log_t = torch.log_softmax(tl.float(), -1)
    log_s = torch.log_softmax(logits.float()[kept], -1)
    return loss + distill * (log_t.exp() * (log_t - log_s)).sum(-1).mean()


def ema_update(averages, params, decay):
    """One step of an exponential moving average of weights: averages <- decay * averages +
    (1 - decay) * params, in place (lists of float32 tensors of the same shapes); None starts
    the average at params. Returns the averages."""
    with torch.no_grad():
        if averages is None:
            return [p.detach().clone() for p in params]
        torch._foreach_mul_(averages, decay)
        torch._foreach_add_(averages, [p.detach() for p in params], alpha=1 - decay)
    return averages


def lr_at(step, steps, lr, warmup, min_frac=0.1):
    if step < warmup:
        return lr * (step + 1) / warmup
    p = (step - warmup) / max(1, steps - warmup)
    return lr * (min_frac + (1 - min_frac) * 0.5 * (1 + math.cos(math.pi * p)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default="build/corpus/train.jsonl")
    ap.add_argument("--vocab", default="build/tokenizer/vocab.json")
    ap.add_argument("--out", default="build/train/model.pt")
    ap.add_argument("--log", default="build/train/train_log.txt")
    ap.add_argument("--steps", type=int, default=1000, help="all optimizer steps")
    ap.add_argument("--long-steps", type=int, default=80,
                    help="the last steps, on sessions of --ctx tokens (the others on --short-ctx)")
    ap.add_argument("--batch", type=int, default=4, help="sessions per step at --ctx")
    ap.add_argument("--short-ctx", type=int, default=256)
    ap.add_argument("--short-batch", type=int, default=16)
    ap.add_argument("--pack", choices=("order", "best"), default="order",
                    help="how dialogues fill sessions: consecutive ones in corpus order, or best "
                         "fit decreasing (no padding to speak of: more tokens per step)")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=40)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--ffn", type=int, default=704)
    ap.add_argument("--ctx", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--action-weight", type=float, default=3.0,
                    help="loss weight of the action tokens relative to the sentence's")
    ap.add_argument("--user-weight", type=float, default=0.0,
                    help="loss weight of the user's text (predicting requests as a language model; "
                    "0: not trained on)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bf16", type=int, default=0,
                    help="1: matrix products in bfloat16 (torch.autocast; weights, optimizer and "
                    "loss stay float32): about 2.5x faster on this AVX512-BF16 CPU")
    ap.add_argument("--min-lr", type=float, default=0.1, help="final learning rate / peak")
    ap.add_argument("--init", default="", help="start from this checkpoint's weights (same shape) "
                    "instead of random ones: to continue a run with more steps")
    ap.add_argument("--distill", type=float, default=0.0,
                    help="with --init: this times KL(the --init model || the model) over the replies of "
                    "the turns not marked new, added to the loss (reply_loss)")
    ap.add_argument("--dropout", type=float, default=0.0,
                    help="residual dropout while training (attention and FFN outputs)")
    ap.add_argument("--ema", default="",
                    help="comma-separated decays, e.g. 0.998,0.999: also keep an exponential moving "
                    "average of the weights for each, from --ema-start on, written beside --out as "
                    "NAME.ema<decay>.pt (same layout as --out)")
    ap.add_argument("--ema-start", type=int, default=0, help="first step the averages see")
    a = ap.parse_args()
    model_module.RESIDUAL_DROPOUT = a.dropout

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    random.seed(a.seed)
    np.random.seed(a.seed)

    tok = spm_tokenizer.load(a.vocab)
    t0 = time.time()
    # Two packings of the same corpus: short sessions for most steps (attention is cheap there),
    # full --ctx sessions for the last --long-steps so every position up to ctx is trained.
    packs = {}
    for ctx in sorted({a.short_ctx, a.ctx}):
        ids_arr, tgt_arr = pack_sessions(tok, a.corpus, ctx, a.pack)
        packs[ctx] = (ids_arr, tgt_arr)
        print("train: %d sessions of %d tokens (%d tokens, %d targets) packed in %.1f s"
              % (len(ids_arr), ctx, int((ids_arr != spm_tokenizer.EOS).sum()), int((tgt_arr > 0).sum()),
                 time.time() - t0), flush=True)
    n_short = a.steps - a.long_steps
    plan = []   # per step: (ctx, row indices)
    for ctx, n_steps, bs in ((a.short_ctx, n_short, a.short_batch), (a.ctx, a.long_steps, a.batch)):
        if n_steps <= 0:
            continue
        n_seq = len(packs[ctx][0])
        order_rng = np.random.RandomState(a.seed + ctx)
        order = []
        while len(order) < n_steps * bs:   # a new seeded permutation per pass over the corpus
            order.extend(order_rng.permutation(n_seq).tolist())
        plan += [(ctx, order[i * bs:(i + 1) * bs]) for i in range(n_steps)]

    cfg = Config(vocab=tok.n_vocab, dim=a.dim, n_layer=a.layers, n_head=a.heads,
                 n_kv_head=a.kv_heads, ffn=a.ffn, ctx=a.ctx)
    for name, v in (("dim", cfg.dim), ("ffn", cfg.ffn), ("head_dim", cfg.head_dim),
                    ("vocab", cfg.vocab), ("kv dim", cfg.n_kv_head * cfg.head_dim)):
        assert v % 32 == 0, "%s %d is not a multiple of 32" % (name, v)
    model = TinyLlama(cfg)
    if a.init:
        ck = torch.load(a.init, map_location="cpu")
        assert ck["config"] == cfg.to_dict(), "--init checkpoint has another shape"
        model.load_state_dict(ck["state"])
        print("train: starting from %s (step %s)" % (a.init, ck.get("step")), flush=True)
    teacher = None
    if a.distill > 0:
        assert a.init, "--distill needs --init (the model to stay close to)"
        teacher = TinyLlama(cfg)
        teacher.load_state_dict(ck["state"])
        teacher.eval()
        for p in teacher.parameters():
            p.requires_grad_(False)
    n_params = sum(p.numel() for p in model.parameters())
    print("train: model %s, %d parameters" % (json.dumps(cfg.to_dict()), n_params), flush=True)

    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)

    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    log = open(a.log, "w")
    log.write("# step ctx loss lr elapsed_s\n")
    # Weight averages: one float32 copy of the parameters per decay, updated after each optimizer
    # step from --ema-start on (seeded with that step's weights).
    names, params = zip(*model.named_parameters())
    ema_decays = [float(d) for d in a.ema.split(",") if d.strip()]
    ema_weights = {}
    ema_base = a.out[:-3] if a.out.endswith(".pt") else a.out

    def save_ema(step, el):
        for d, copies in ema_weights.items():
            state = dict(model.state_dict(), **dict(zip(names, copies)))   # buffers as they are
            torch.save({"config": cfg.to_dict(), "state": state, "step": step + 1, "ema_decay": d,
                        "ema_start": a.ema_start, "train_s": el}, "%s.ema%s.pt" % (ema_base, d))

    t_start = time.time()
    ema = None
    model.train()
    for step in range(a.steps):
        lr = lr_at(step, a.steps, a.lr, a.warmup, a.min_lr)
        for g in opt.param_groups:
            g["lr"] = lr
        ctx, idx = plan[step]
        x = torch.from_numpy(packs[ctx][0][idx])
        t = torch.from_numpy(packs[ctx][1][idx])
        loss = reply_loss(model, x, t, a.action_weight, a.user_weight, a.bf16, teacher, a.distill)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if ema_decays and step >= a.ema_start:
            for d in ema_decays:
                ema_weights[d] = ema_update(ema_weights.get(d), params, d)
        lv = loss.item()
        ema = lv if ema is None else 0.95 * ema + 0.05 * lv
        el = time.time() - t_start
        log.write("%d %d %.5f %.6f %.1f\n" % (step, ctx, lv, lr, el))
        if step % 20 == 0 or step == a.steps - 1:
            log.flush()
            print("step %5d/%d  ctx %4d  loss %.4f (ema %.4f)  lr %.2e  %.0f s  (%.2f s/step)"
                  % (step, a.steps, ctx, lv, ema, lr, el, el / (step + 1)), flush=True)
        if step % 200 == 199 or step == a.steps - 1:
            torch.save({"config": cfg.to_dict(), "state": model.state_dict(), "step": step + 1,
                        "loss_ema": ema, "train_s": el}, a.out)
            save_ema(step, el)
    log.close()
    print("train: done, %d steps, final loss (ema) %.4f, %.1f min" % (a.steps, ema, (time.time() - t_start) / 60))


if __name__ == "__main__":
    main()
