"""The tiny llama-architecture model in PyTorch, laid out as cabin's engine and GGUF's llama
architecture expect: RMSNorm, rotary embedding on adjacent pairs (2i, 2i+1) of each head (the
"normal" rope of llama.cpp after its converter's permutation, so weights export unpermuted),
grouped-query attention (query head h reads kv head h // (n_head / n_kv_head)), SwiGLU FFN, no
biases, untied output matrix."""
import math
from dataclasses import dataclass, asdict

import torch
import torch.nn as nn
import torch.nn.functional as F

# Residual dropout (training only; train.py --dropout sets it): the attention and FFN outputs are
# dropped with this probability before they join the residual stream. Not part of Config: it
# changes nothing at inference, so the exported file does not know of it.
RESIDUAL_DROPOUT = 0.0


def residual_dropout(x, p, training):
    """Dropout of x with probability p (kept values scaled by 1/(1-p')), the keep mask drawn from
    random 16-bit fields of int64 draws (four per draw): torch 1.13's bernoulli_, behind
    F.dropout, draws one number per element and took 8% of a training step here. p is rounded to
    a multiple of 1/65536 (p' = round(65536 p) / 65536)."""
    if not training or p <= 0.0:
        return x
    n = x.numel()
    bits = torch.empty((n + 3) // 4, dtype=torch.int64).random_(-2**63, 2**63 - 1)
    drop = int(round(p * 65536))                 # fields below -32768 + drop are dropped
    keep = bits.view(torch.int16)[:n].view(x.shape) >= -32768 + drop
    return x * (keep.to(x.dtype) * (65536.0 / (65536 - drop)))


@dataclass
class Config:
    vocab: int = 1024
    dim: int = 256
    n_layer: int = 4
    n_head: int = 4
    n_kv_head: int = 2
    ffn: int = 704
    ctx: int = 1024
    rope_base: float = 10000.0
    rms_eps: float = 1e-5

    @property
    def head_dim(self):
        return self.dim // self.n_head

    def to_dict(self):
        return asdict(self)


class RMSNormFunction(torch.autograd.Function):
    """y = x r w with r = 1 / sqrt(mean(x^2) + eps) over the last dimension, and its gradient
    written out: with n = x r, dx = r (g w - n mean(g w n)), dw = sum of g n over the rows.
    Fewer elementwise passes than autograd's chain of pow, mean, rsqrt and products: forward and
    backward of a 16 x 255 x 256 input take 6.4 ms against 7.9-9.2 ms here."""

    @staticmethod
    def forward(ctx, x, weight, eps):
        r = torch.rsqrt(x.square().mean(-1, keepdim=True) + eps)
        n = x * r
        ctx.save_for_backward(n, r, weight)
        return n * weight

    @staticmethod
    def backward(ctx, g):
        n, r, weight = ctx.saved_tensors
        gn = g * weight
        gx = (gn - n * (gn * n).mean(-1, keepdim=True)) * r
        gw = (g * n).reshape(-1, n.shape[-1]).sum(0)
        return gx, gw, None


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return RMSNormFunction.apply(x, self.weight, self.eps)


def rope_tables(cfg, n_pos):
    """cos, sin: (n_pos, head_dim/2), theta_i = pos * base^(-2i/head_dim) as engine/cpu does."""
    hd = cfg.head_dim
    inv = torch.pow(torch.tensor(cfg.rope_base, dtype=torch.float64),
                    -torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    ang = torch.arange(n_pos, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()


def apply_rope(x, rotors):
    """x: (B, T, H, hd) -> float32 (B, T, H, hd), each pair (x[2i], x[2i+1]) rotated by angle
    theta_i of its position: read as the complex number x[2i] + i x[2i+1] and multiplied by
    rotors (T, hd/2) = cos + i sin (TinyLlama.rope_rotors). Float32 out also when x is bf16
    under autocast. One complex product forward and one backward; written out as a stack of
    a cos - b sin and a sin + b cos (tests/test_train.py's reference) it took about a tenth of
    a training step."""
    B, T, H, hd = x.shape
    xc = torch.view_as_complex(x.float().reshape(B, T, H, hd // 2, 2))
    return torch.view_as_real(xc * rotors[None, :, None, :]).view(B, T, H, hd)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        hd = cfg.head_dim
        self.attn_norm = RMSNorm(cfg.dim, cfg.rms_eps)
        self.wq = nn.Linear(cfg.dim, cfg.n_head * hd, bias=False)
        self.wk = nn.Linear(cfg.dim, cfg.n_kv_head * hd, bias=False)
        self.wv = nn.Linear(cfg.dim, cfg.n_kv_head * hd, bias=False)
        self.wo = nn.Linear(cfg.n_head * hd, cfg.dim, bias=False)
        self.ffn_norm = RMSNorm(cfg.dim, cfg.rms_eps)
        self.w_gate = nn.Linear(cfg.dim, cfg.ffn, bias=False)
        self.w_up = nn.Linear(cfg.dim, cfg.ffn, bias=False)
        self.w_down = nn.Linear(cfg.ffn, cfg.dim, bias=False)

    def forward(self, x, rotors, mask, cache=None):
        """x: (B, T, dim); rotors: (T, hd/2) complex (apply_rope). cache: None, or a dict
        {"k","v"} of (B, past, n_kv_head, hd) that is extended in place (inference).
        The q/k/v projections run as one matrix product of the three weights stacked, as do the
        FFN's gate and up (the parameters stay separate, as the GGUF stores them): fewer, larger
        products and one autocast copy of the input instead of three or two."""
        cfg = self.cfg
        B, T, _ = x.shape
        hd = cfg.head_dim
        nq, nkv = cfg.n_head * hd, cfg.n_kv_head * hd
        h = self.attn_norm(x)
        qkv = F.linear(h, torch.cat((self.wq.weight, self.wk.weight, self.wv.weight)))
        q, k, v = qkv.split((nq, nkv, nkv), dim=-1)    # split, not slices: one cat backward
        q = apply_rope(q.reshape(B, T, cfg.n_head, hd), rotors)
        k = apply_rope(k.reshape(B, T, cfg.n_kv_head, hd), rotors)
        v = v.reshape(B, T, cfg.n_kv_head, hd)
        if cache is not None:
            if "k" in cache:
                k = torch.cat([cache["k"], k], dim=1)
                v = torch.cat([cache["v"], v], dim=1)
            cache["k"], cache["v"] = k, v
        # Grouped-query attention without copying k and v per query head: the group query heads
        # of one kv head are stacked along the rows, (B*n_kv, group*T, hd) against (B*n_kv, S, hd)
        # (query head h = kv * group + g reads kv head kv = h // group).
        group = cfg.n_head // cfg.n_kv_head
        S = k.shape[1]
        q = q.view(B, T, cfg.n_kv_head, group, hd).permute(0, 2, 3, 1, 4).reshape(
            B * cfg.n_kv_head, group * T, hd)
        k = k.transpose(1, 2).reshape(B * cfg.n_kv_head, S, hd)
        v = v.transpose(1, 2).reshape(B * cfg.n_kv_head, S, hd)
        scale = 1.0 / math.sqrt(hd)
        if mask is not None:   # scale, causal mask (1, group*T, S) and q k^T in one call
            att = torch.baddbmm(mask, q, k.transpose(1, 2), beta=1.0, alpha=scale)
        else:
            att = torch.bmm(q, k.transpose(1, 2)) * scale
        att = F.softmax(att, dim=-1)
        y = torch.bmm(att, v).view(B, cfg.n_kv_head, group, T, hd).permute(0, 3, 1, 2, 4).reshape(
            B, T, cfg.n_head * hd)
        x = x + residual_dropout(self.wo(y), RESIDUAL_DROPOUT, self.training)
        h = self.ffn_norm(x)
        gate_up = F.linear(h, torch.cat((self.w_gate.weight, self.w_up.weight)))
        gate, up = gate_up.split((cfg.ffn, cfg.ffn), dim=-1)
        ffn = F.silu(gate) * up
        return x + residual_dropout(self.w_down(ffn), RESIDUAL_DROPOUT, self.training)


class TinyLlama(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.tok_embd = nn.Embedding(cfg.vocab, cfg.dim)
        self.layers = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.output_norm = RMSNorm(cfg.dim, cfg.rms_eps)
        self.output = nn.Linear(cfg.dim, cfg.vocab, bias=False)
        cos, sin = rope_tables(cfg, cfg.ctx * 2)
        self.register_buffer("rope_rotors", torch.complex(cos, sin), persistent=False)
        self.reset_parameters()

    def reset_parameters(self):
        std = 0.02
        for n, p in self.named_parameters():
            if p.dim() == 2:
                s = std
                if n.endswith("wo.weight") or n.endswith("w_down.weight"):
                    s = std / math.sqrt(2 * self.cfg.n_layer)
                nn.init.normal_(p, 0.0, s)

    def hidden(self, ids, caches=None, pos0=0):
        """ids: (B, T) -> the last layer's output (B, T, dim), before output_norm and output.
        caches: list per layer (inference) or None."""
        B, T = ids.shape
        x = self.tok_embd(ids)
        rotors = self.rope_rotors[pos0:pos0 + T]
        past = pos0
        mask = None
        if T > 1:
            mask = torch.full((T, T + past), float("-inf"))
            # (1, group*T, S): one causal mask per query head of a kv head (Block stacks them)
            mask = torch.triu(mask, diagonal=1 + past).repeat(
                self.cfg.n_head // self.cfg.n_kv_head, 1)[None]
        for i, layer in enumerate(self.layers):
            x = layer(x, rotors, mask, None if caches is None else caches[i])
        return x

    def logits(self, h):
        """Last-layer outputs (..., dim) -> logits (..., vocab)."""
        return self.output(self.output_norm(h))

    def forward(self, ids, caches=None, pos0=0):
        """ids: (B, T) -> logits (B, T, vocab). caches: list per layer (inference) or None."""
        return self.logits(self.hidden(ids, caches, pos0))


@torch.no_grad()
def greedy_reply(model, tok, history_ids, user, max_new=64):
    """Greedy continuation of a chat: history_ids (the session so far, ending after a reply's
    <|end|>, or empty) + the rendered turn for `user`. Returns (reply ids without <|end|>, new
    history ids including the reply and its <|end|>)."""
    from spm_tokenizer import END
    ids = list(history_ids)
    if ids:
        ids += tok.encode_fragment("\n")     # the template's newline after the previous <|end|>
    ids += tok.prompt_ids(ids, user)
    caches = [dict() for _ in model.layers]
    logits = model(torch.tensor([ids]), caches, 0)
    out = []
    pos = len(ids)
    for _ in range(max_new):
        nxt = int(torch.argmax(logits[0, -1]))
        out.append(nxt)
        if nxt == END or pos + 1 >= model.cfg.ctx * 2:
            break
        logits = model(torch.tensor([[nxt]]), caches, pos)
        pos += 1
    reply = out[:-1] if out and out[-1] == END else out
    return reply, ids + out
