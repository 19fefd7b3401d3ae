#!/usr/bin/env python3
"""The PyTorch side of bench/train_throughput: the same GPT (tied LM head, tanh GELU,
pre-LayerNorm, AdamW lr 1e-4 betas 0.9/0.999 eps 1e-8, position table sized to T), trained on
random tokens. Prints one JSON line: tokens/s (median over the timed steps), peak memory (RSS
on the CPU, allocated device memory on a GPU) and whether denormal floats are flushed to zero.

Denormals are flushed (torch.set_flush_denormal), as flextp flushes them: without it PyTorch's CPU
AdamW meets denormal floats, which the CPU computes in microcode at a fraction of its speed, and the
comparison would measure that artefact rather than the training (issue 28: 4x on GPT-2 small).

usage: torch_gpt.py VOCAB T LAYERS HEADS EMBD BATCH THREADS [STEPS WARMUP [DEVICE PRECISION]]
  DEVICE cpu or cuda; PRECISION fp32, tf32 (matmuls and convolutions on TF32 tensor cores) or bf16
  (autocast to bf16 around the forward pass; f32 weights and optimizer)
"""
import json
import math
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, c, h):
        super().__init__()
        self.h = h
        self.ln_1 = nn.LayerNorm(c)
        self.c_attn = nn.Linear(c, 3 * c)
        self.c_proj = nn.Linear(c, c)
        self.ln_2 = nn.LayerNorm(c)
        self.c_fc = nn.Linear(c, 4 * c)
        self.mlp_proj = nn.Linear(4 * c, c)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.h, c // self.h).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True) if hasattr(F, "scaled_dot_product_attention") else None
        if y is None:  # torch 1.13
            att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
            att = att.masked_fill(~mask, float("-inf")).softmax(-1)
            y = att @ v
        x = x + self.c_proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, t, layers, heads, c):
        super().__init__()
        self.wte = nn.Embedding(vocab, c)
        self.wpe = nn.Embedding(t, c)
        self.blocks = nn.ModuleList(Block(c, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(c)

    def forward(self, idx, targets):
        t = idx.size(1)
        x = self.wte(idx) + self.wpe(torch.arange(t, device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def flushes_on_every_thread():
    """Whether a product below f32's normal range comes out 0 in every thread's share of a tensor."""
    tiny = torch.full((1 << 20,), 1e-30) * 1e-10
    return bool((tiny.view(torch.int32) == 0).all())


def main():
    vocab, t, layers, heads, c, batch, threads = (int(a) for a in sys.argv[1:8])
    steps = int(sys.argv[8]) if len(sys.argv) > 8 else 20
    warmup = int(sys.argv[9]) if len(sys.argv) > 9 else 3
    device = sys.argv[10] if len(sys.argv) > 10 else "cpu"
    precision = sys.argv[11] if len(sys.argv) > 11 else "fp32"
    # First, before any thread starts: torch.set_flush_denormal sets the calling thread only, and
    # OpenMP's threads take the main thread's FTZ/DAZ when they are created (set later, only the
    # main thread's share of each op is flushed).
    torch.set_flush_denormal(True)
    torch.set_num_threads(threads)
    flushed = flushes_on_every_thread()
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    torch.manual_seed(0)
    model = GPT(vocab, t, layers, heads, c).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8)
    idx = torch.randint(0, vocab, (batch, t), device=device)
    tgt = torch.randint(0, vocab, (batch, t), device=device)
    autocast = torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=precision == "bf16")
    times = []
    for i in range(warmup + steps):
        start = time.perf_counter()
        with autocast:
            loss = model(idx, tgt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if device != "cpu":
            torch.cuda.synchronize()
        if i >= warmup:
            times.append(time.perf_counter() - start)
    times.sort()
    median = times[len(times) // 2]
    if device == "cpu":
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    else:
        peak_mb = torch.cuda.max_memory_allocated() / 1048576
    print(json.dumps({"torch": torch.__version__, "tokens_per_s": batch * t / median,
                      "ms_per_step": median * 1000, "peak_mb": peak_mb,
                      "flush_denormal": flushed}))


if __name__ == "__main__":
    main()
