#!/usr/bin/python3
"""The training tool's fast paths against plain PyTorch formulations, on fresh random inputs each
run (tools/train): the weighted cross-entropy (loss and gradient against F.cross_entropy), the
residual dropout (drop rate, scaling, gradient), the weight average (--ema) against its sum
written out, and grouped-query attention without k/v copies
(the whole model's logits and gradients against attention through repeat_interleave). Needs
Debian's python3-torch; without it prints why and skips. Ends in the line tests/run.sh reads."""
import json
import math
import os
import random
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from pytally import Tally  # noqa: E402

tally = Tally()
try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("skipped: PyTorch is not installed for /usr/bin/python3 (Debian's python3-torch: "
          "sh tools/train/setup.sh installs it)")
    tally.skipped += 1
    print(tally.line())
    sys.exit(0)
sys.path.insert(0, os.path.join(ROOT, "tools", "train"))
import model as M  # noqa: E402
import spm_tokenizer  # noqa: E402
import train  # noqa: E402

check = tally.check
torch.set_num_threads(2)
torch.manual_seed(int.from_bytes(os.urandom(4), "little"))


def max_rel(a, b):
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))


def check_cross_entropy(n, v):
    logits = (torch.randn(n, v) * 4).requires_grad_()
    y = torch.randint(0, v, (n,))
    w = torch.rand(n) * (torch.rand(n) > 0.2)          # some positions carry no loss
    w[0] = 0.5 + w[0]                                  # but never all of them (the mean divides by w.sum())
    ref_logits = logits.detach().clone().requires_grad_()
    ref = (F.cross_entropy(ref_logits, y, reduction="none") * w).sum() / w.sum()
    ref.backward()
    loss = train.WeightedCrossEntropy.apply(logits, y, w) / w.sum()
    loss.backward()
    check(abs(float(loss) - float(ref)) <= 1e-6 + 1e-5 * abs(float(ref)),   # float32 rounding
          "cross-entropy %dx%d: loss %.7g, reference %.7g" % (n, v, float(loss), float(ref)))
    err = max_rel(logits.grad, ref_logits.grad)
    check(err < 1e-4, "cross-entropy %dx%d: gradient off by %.2e of its largest" % (n, v, err))


def check_dropout(p, dtype):
    x = torch.randn(64, 33, 257).to(dtype)          # odd sizes: the last int64 draw is cut
    x[x == 0] = 1.0                     # randn gives an exact 0 now and then: it would look dropped
    x.requires_grad_()
    out = M.residual_dropout(x, p, True)
    kept = out != 0
    rate = 1.0 - float(kept.float().mean())
    n = x.numel()
    sigma = math.sqrt(p * (1 - p) / n)
    check(abs(rate - p) < 6 * sigma + 1 / 65536, "dropout p=%g %s: dropped %.5f" % (p, dtype, rate))
    scale = 65536.0 / (65536 - round(p * 65536))
    want = (x.detach().float() * scale)[kept]
    err = max_rel(out.detach().float()[kept], want)
    check(err < (1e-6 if dtype == torch.float32 else 1e-2),
          "dropout p=%g %s: kept values off by %.2e" % (p, dtype, err))
    out.float().sum().backward()
    check(torch.equal(x.grad != 0, kept) and max_rel(x.grad.float()[kept], torch.full((int(kept.sum()),), scale)) < 1e-2,
          "dropout p=%g %s: gradient is not the kept mask times the scale" % (p, dtype))
    check(M.residual_dropout(x, p, False) is x, "dropout p=%g: not the identity at inference" % p)


def rope_by_pairs(x, cos, sin):
    """RoPE written out: x (B, T, H, hd), pairs (a, b) = (x[2i], x[2i+1]) -> (a cos - b sin,
    a sin + b cos) with cos/sin (T, hd/2) from model.rope_tables."""
    B, T, H, hd = x.shape
    xp = x.view(B, T, H, hd // 2, 2)
    a, b = xp[..., 0], xp[..., 1]
    c = cos[None, :, None, :]
    s = sin[None, :, None, :]
    return torch.stack((a * c - b * s, a * s + b * c), dim=-1).view(B, T, H, hd)


def rms_norm_plain(norm, x):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + norm.eps) * norm.weight


def block_by_copies(block, x, cos, sin):
    """Block.forward written plainly: one product per projection, RoPE by pairs, k and v
    repeated per query head, gate and up apart."""
    cfg = block.cfg
    B, T, _ = x.shape
    hd = cfg.head_dim
    h = rms_norm_plain(block.attn_norm, x)
    q = rope_by_pairs(block.wq(h).view(B, T, cfg.n_head, hd), cos, sin)
    k = rope_by_pairs(block.wk(h).view(B, T, cfg.n_kv_head, hd), cos, sin)
    v = block.wv(h).view(B, T, cfg.n_kv_head, hd)
    group = cfg.n_head // cfg.n_kv_head
    k = k.repeat_interleave(group, dim=2).transpose(1, 2)
    v = v.repeat_interleave(group, dim=2).transpose(1, 2)
    q = q.transpose(1, 2)
    att = q @ k.transpose(-1, -2) / math.sqrt(hd)
    att = att.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
    y = (F.softmax(att, -1) @ v).transpose(1, 2).reshape(B, T, cfg.n_head * hd)
    x = x + block.wo(y)
    h = rms_norm_plain(block.ffn_norm, x)
    return x + block.w_down(F.silu(block.w_gate(h)) * block.w_up(h))


def check_attention(n_head, n_kv_head):
    cfg = M.Config(vocab=96, dim=64, n_layer=2, n_head=n_head, n_kv_head=n_kv_head, ffn=96, ctx=64)
    model = M.TinyLlama(cfg)
    model.eval()
    with torch.no_grad():               # norm weights start at 1: make their gradient count
        for p in model.parameters():
            if p.dim() == 1:
                p.uniform_(0.5, 1.5)
    ids = torch.randint(0, cfg.vocab, (3, 40))
    logits = model(ids)
    logits.square().sum().backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    T = ids.shape[1]
    x = model.tok_embd(ids)
    cos, sin = M.rope_tables(cfg, T)
    for layer in model.layers:
        x = block_by_copies(layer, x, cos, sin)
    ref = model.output(rms_norm_plain(model.output_norm, x))
    ref.square().sum().backward()
    err = max_rel(logits.detach(), ref.detach())
    check(err < 1e-5, "attention %d heads / %d kv heads: logits off by %.2e" % (n_head, n_kv_head, err))
    worst = max(max_rel(grads[n], p.grad) for n, p in model.named_parameters())
    check(worst < 1e-4, "attention %d heads / %d kv heads: gradients off by %.2e" % (n_head, n_kv_head, worst))
    # one token at a time through the kv cache gives the same last logits
    caches = [dict() for _ in model.layers]
    with torch.no_grad():
        model(ids[:1, :-1], caches, 0)
        step = model(ids[:1, -1:], caches, T - 1)
    err = max_rel(step[0, -1], logits.detach()[0, -1])
    check(err < 1e-5, "attention %d/%d: cached decode off by %.2e" % (n_head, n_kv_head, err))


def check_distill():
    """reply_loss with --distill: a new turn's roles (5, 6) train as 1, 2; the KL term is zero
    when the teacher is the model itself, and against another teacher it is the mean over the
    kept reply tokens (roles 1, 2; a teacher turn's 9, 10 too, which have no cross-entropy) of
    KL(teacher || model), computed here with F.kl_div."""
    cfg = M.Config(vocab=96, dim=64, n_layer=2, n_head=4, n_kv_head=2, ffn=96, ctx=64)
    model, other = M.TinyLlama(cfg), M.TinyLlama(cfg)
    x = torch.randint(0, cfg.vocab, (3, 41))
    roles = torch.randint(0, 7, (3, 41)).to(torch.uint8)
    roles[roles == 4] = 0
    plain = roles.clone()
    plain[roles > 4] -= 4
    with torch.no_grad():
        a = float(train.reply_loss(model, x, roles, 3.0, 0.0, False))
        b = float(train.reply_loss(model, x, plain, 3.0, 0.0, False))
        check(abs(a - b) <= 1e-6 * abs(b), "roles 5, 6 train as 1, 2: %.7g vs %.7g" % (a, b))
        same = float(train.reply_loss(model, x, roles, 3.0, 0.0, False, model, 2.0))
        check(abs(same - a) <= 1e-5 * abs(a), "distill from itself adds nothing: %.7g vs %.7g" % (same, a))
        got = float(train.reply_loss(model, x, roles, 3.0, 0.0, False, other, 2.0)) - a
        keep = ((roles[:, 1:] == 1) | (roles[:, 1:] == 2)).reshape(-1)
        ls = F.log_softmax(model(x[:, :-1]).reshape(-1, cfg.vocab)[keep], -1)
        lt = F.log_softmax(other(x[:, :-1]).reshape(-1, cfg.vocab)[keep], -1)
        ref = 2.0 * F.kl_div(ls, lt, log_target=True, reduction="batchmean")
        check(abs(got - float(ref)) <= 1e-4 * float(ref), "distill term %.7g, reference %.7g" % (got, float(ref)))
        # A teacher turn's reply (roles 9, 10: the last row's 1s and 2s here) adds no
        # cross-entropy, and its tokens join the KL's mean.
        troles = roles.clone()
        troles[2][(roles[2] == 1) | (roles[2] == 2)] += 8
        dropped = troles.clone()
        dropped[troles >= 8] = 0
        a = float(train.reply_loss(model, x, troles, 3.0, 0.0, False))
        b = float(train.reply_loss(model, x, dropped, 3.0, 0.0, False))
        check(abs(a - b) <= 1e-6 * abs(b), "teacher roles 9, 10 add no cross-entropy: %.7g vs %.7g" % (a, b))
        got = float(train.reply_loss(model, x, troles, 3.0, 0.0, False, other, 2.0)) - a
        r = troles[:, 1:]
        keep = ((r == 1) | (r == 2) | (r >= 8)).reshape(-1)
        ls = F.log_softmax(model(x[:, :-1]).reshape(-1, cfg.vocab)[keep], -1)
        lt = F.log_softmax(other(x[:, :-1]).reshape(-1, cfg.vocab)[keep], -1)
        ref = 2.0 * F.kl_div(ls, lt, log_target=True, reduction="batchmean")
        check(abs(got - float(ref)) <= 1e-4 * float(ref), "distill term with teacher turns %.7g, reference %.7g"
              % (got, float(ref)))


def check_reply_loss(bf16):
    """train.reply_loss (logits only where a weight is not zero) against the weighted mean of
    F.cross_entropy over every position's logits."""
    cfg = M.Config(vocab=96, dim=64, n_layer=2, n_head=4, n_kv_head=2, ffn=96, ctx=64)
    model = M.TinyLlama(cfg)
    x = torch.randint(0, cfg.vocab, (3, 41))
    roles = torch.randint(0, 4, (3, 41)).to(torch.uint8)     # 0 none, 1 reply, 2 action, 3 user
    roles[:, :5] = 0                                          # a prompt without loss
    for user_weight in (0.0, 0.5):
        loss = train.reply_loss(model, x, roles, 3.0, user_weight, bf16)
        loss.backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters()}
        model.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(x[:, :-1])
        r = roles[:, 1:].long()
        w = torch.tensor([0.0, 1.0, 3.0, user_weight])[r].reshape(-1)
        ref = (F.cross_entropy(logits.float().reshape(-1, cfg.vocab), x[:, 1:].reshape(-1),
                               reduction="none") * w).sum() / w.sum()
        ref.backward()
        tol = 2e-2 if bf16 else 1e-5      # bf16: the selected rows' products round otherwise
        check(abs(float(loss) - float(ref)) <= tol * abs(float(ref)),
              "reply loss bf16=%d user weight %g: %.7g, reference %.7g" % (bf16, user_weight, float(loss), float(ref)))
        worst = max(max_rel(grads[n], p.grad) for n, p in model.named_parameters())
        check(worst < (5e-2 if bf16 else 1e-4),
              "reply loss bf16=%d user weight %g: gradients off by %.2e" % (bf16, user_weight, worst))
        model.zero_grad()


class FakeTokenizer:
    """encode_session as spm_tokenizer's returns it: <s> first, then the turns' ids (here the
    numbers in the turn texts) with role 1 for every one."""
    def encode_session(self, turns):
        ids = [int(w) for t in turns for w in t["user"].split()]
        return [spm_tokenizer.BOS] + ids, [0] + [1] * len(ids)


def check_packing(n, ctx):
    """best_fit_sessions and pack_sessions on n dialogues of 1-200 tokens (1% longer than a
    session): every dialogue exactly once, whole (or cut at ctx-1 when longer), each session <s>
    + dialogues in corpus order + </s> padding with no role; best fit is deterministic, and a
    session is opened only for a dialogue no other has room for, so no two sessions would fit in
    one."""
    rng = random.Random(int.from_bytes(os.urandom(4), "little"))
    lengths = [rng.randint(1, 200) if rng.random() < 0.99 else rng.randint(ctx, ctx + 50) for _ in range(n)]
    groups = train.best_fit_sessions([min(L, ctx - 1) for L in lengths], ctx - 1)
    check(sorted(i for g in groups for i in g) == list(range(n)), "best fit %d/%d: a dialogue lost or doubled" % (n, ctx))
    check(all(sum(min(lengths[i], ctx - 1) for i in g) <= ctx - 1 for g in groups), "best fit %d/%d: a session overflows" % (n, ctx))
    check(all(g == sorted(g) for g in groups) and [g[0] for g in groups] == sorted(g[0] for g in groups),
          "best fit %d/%d: sessions or dialogues out of corpus order" % (n, ctx))
    check(train.best_fit_sessions([min(L, ctx - 1) for L in lengths], ctx - 1) == groups, "best fit %d/%d: not deterministic" % (n, ctx))
    totals = sorted(sum(min(lengths[i], ctx - 1) for i in g) for g in groups)
    check(len(totals) < 2 or totals[0] + totals[1] > ctx - 1,
          "best fit %d/%d: two sessions (%d and %d tokens) would fit in one" % (n, ctx, totals[0], totals[1]))
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        dialogues = []
        for L in lengths:
            ids = [rng.randint(10, 999) for _ in range(L)]
            dialogues.append(ids[:ctx - 1])
            f.write(json.dumps({"turns": [{"user": " ".join(map(str, ids))}]}) + "\n")
    try:
        for fit in ("order", "best"):
            ids, roles = train.pack_sessions(FakeTokenizer(), f.name, ctx, fit)
            rows = []
            for r in range(len(ids)):
                k = int((roles[r] > 0).sum())
                rows.append(ids[r, 1:1 + k].tolist())
                ok = ids[r, 0] == spm_tokenizer.BOS and roles[r, 0] == 0 and (roles[r, 1 + k:] == 0).all() \
                    and (ids[r, 1 + k:] == spm_tokenizer.EOS).all()
                if not ok:
                    break
            check(ok, "pack %s %d/%d: session %d is not <s>, dialogues, </s> padding" % (fit, n, ctx, r))
            flat = [t for row in rows for t in row]
            if fit == "best":
                check(len(rows) == len(groups) and flat == [t for g in groups for i in g for t in dialogues[i]],
                      "pack best %d/%d: sessions are not best_fit_sessions' dialogues" % (n, ctx))
            else:
                check(flat == [t for d in dialogues for t in d], "pack order %d/%d: dialogues not in corpus order" % (n, ctx))
    finally:
        os.unlink(f.name)


def check_ema(decay, steps):
    """train.ema_update (foreach ops, in place) against the average written out as a sum:
    a_T = d^(T-1) p_1 + sum_{t=2..T} (1 - d) d^(T-t) p_t."""
    shapes = [(3, 5), (7,), (2, 4, 6)]
    history = [[torch.randn(s) for s in shapes] for _ in range(steps)]
    avg = None
    for params in history:
        avg = train.ema_update(avg, params, decay)
    for i in range(len(shapes)):
        ref = decay ** (steps - 1) * history[0][i].double()
        for t in range(1, steps):
            ref += (1 - decay) * decay ** (steps - 1 - t) * history[t][i].double()
        err = max_rel(avg[i].double(), ref)
        check(err < 1e-5, "ema decay %g over %d steps: tensor %d off by %.2e" % (decay, steps, i, err))
    check(all(a is not p for a, p in zip(avg, history[-1])), "ema decay %g: average aliases the weights" % decay)


for decay, steps in ((0.9, 1), (0.9, 17), (0.998, 50)):
    check_ema(decay, steps)
for n, v in ((1, 7), (255, 1024), (4080, 1024), (37, 32000)):
    check_cross_entropy(n, v)
for p in (0.1, 0.25, 0.5):
    for dtype in (torch.float32, torch.bfloat16):
        check_dropout(p, dtype)
for heads in ((4, 2), (4, 4), (4, 1), (8, 2)):
    check_attention(*heads)
for bf16 in (False, True):
    check_reply_loss(bf16)
check_distill()
for n, ctx in ((500, 256), (300, 1024)):
    check_packing(n, ctx)
print(tally.line())
sys.exit(tally.exit_code())
