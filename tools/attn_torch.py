#!/usr/bin/env python3
"""tools/attn_torch.py: causal attention kernels on one GPU, timed.

A device probe for a lent GPU machine (PyTorch and a GPU; nothing in the
build or the tests uses it).  For the attention shapes of the validation
models (per GPU, at their tensor-parallel size), it times PyTorch's
scaled_dot_product_attention forward and backward, causal, bf16, with each
fused back-end this PyTorch offers: cuDNN's fused attention (what
Transformer Engine runs on Hopper by default), FlashAttention-2 and the
memory-efficient kernel.  K and V are expanded to the query heads before
timing where a back-end takes no grouped-query input, so the timed kernel
does the same FLOPs.

FLOPs as podplan counts them (sim/train/compute.c, flash()): forward
2 b h s^2 d (QK^T and PV, 4 b h s^2 d, halved by the causal mask), backward
2.5 times that.  TFLOP/s and the fraction of a peak (--peak, default the
H100/H200 dense bf16 989.5 TFLOP/s) are what a profile's
attention.flash_fwd_efficiency / flash_bwd_efficiency stand for.

Output: JSON on stdout or --out; each result: the shape, the back-end,
forward and backward median ms over --iters (CUDA events, after warm-up),
TFLOP/s and fraction of peak.
"""
import argparse
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from torch_probe import event_ms, header, write_json

SHAPES = {
    # name: batch, query heads, K/V heads, sequence, head dim
    "gpt3-175b-tp8": (1, 12, 12, 2048, 128),
    "llama3-70b-tp8": (1, 8, 1, 8192, 128),
    "llama3-405b-tp8": (1, 16, 1, 8192, 128),
    "llama3-8b-tp1": (1, 32, 8, 8192, 128),
    "qwen3-30b-a3b-tp1": (1, 32, 4, 4096, 128),
    "mixtral-8x7b-tp1": (1, 32, 8, 4096, 128),
    # GPT-OSS 120B at NVIDIA's H100 preset (tp 1, mbs 4): head dim 64;
    # the same FLOPs at head dim 128 beside it.
    "gpt-oss-120b-tp1": (4, 64, 8, 4096, 64),
    "gpt-oss-120b-tp1-d128": (4, 32, 4, 4096, 128),
    # DeepSeek-V3's multi-latent attention in its attention core: Q and K
    # 192 wide (128 + 64 rope), V 128 (a sixth entry: V's head dim), 128
    # heads, at TP 1 and 2; podplan counts it as head dim 160.
    "deepseek-v3-tp1": (1, 128, 128, 4096, 192, 128),
    "deepseek-v3-tp2": (1, 64, 64, 4096, 192, 128),
}
BACKENDS = {
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "flash2": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
}


def run(name, shape, backend, iters, peak):
    b, hq, hkv, s, d = shape[:5]
    dv = shape[5] if len(shape) > 5 else d
    dev, dt = torch.device("cuda"), torch.bfloat16
    g = torch.Generator(device="cuda").manual_seed(1)
    q = torch.randn(b, hq, s, d, device=dev, dtype=dt, generator=g)
    k = torch.randn(b, hkv, s, d, device=dev, dtype=dt, generator=g)
    v = torch.randn(b, hkv, s, dv, device=dev, dtype=dt, generator=g)
    if hkv != hq:
        k = k.repeat_interleave(hq // hkv, dim=1)
        v = v.repeat_interleave(hq // hkv, dim=1)
    q, k, v = (t.contiguous().requires_grad_() for t in (q, k, v))
    do = torch.randn(b, hq, s, dv, device=dev, dtype=dt, generator=g)
    # head_dim: the mean of Q/K's and V's widths (what the FLOPs count).
    r = {"shape": name, "batch": b, "heads": hq, "kv_heads": hkv, "seq": s,
         "head_dim": (d + dv) / 2, "qk_dim": d, "v_dim": dv,
         "backend": backend}
    with sdpa_kernel([BACKENDS[backend]]):
        fwd = event_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), iters, 10)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)

        def bwd():
            q.grad = k.grad = v.grad = None
            o.backward(do, retain_graph=True)

        bw = event_ms(bwd, iters, 10)
    f = 2.0 * b * hq * s * s * (d + dv) / 2
    r.update(fwd_ms=fwd, bwd_ms=bw, fwd_tflops=f / fwd / 1e9, bwd_tflops=2.5 * f / bw / 1e9)
    r["fwd_fraction"] = r["fwd_tflops"] * 1e12 / peak
    r["bwd_fraction"] = r["bwd_tflops"] * 1e12 / peak
    return r


def warm_clocks(seconds=2.0):
    """Keeps the GPU busy with GEMMs for a while: an idle H200 sits at
    345 MHz, and a first shape's few warm-up calls of 0.1 ms do not bring
    the clocks up (the first run of this probe read GPT-3's shape low)."""
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    t0 = torch.cuda.Event(enable_timing=True)
    t1 = torch.cuda.Event(enable_timing=True)
    t0.record()
    while True:
        for _ in range(10):
            a = (a @ a).clamp_(-1, 1)
        t1.record()
        t1.synchronize()
        if t0.elapsed_time(t1) > seconds * 1e3:
            return


def flex(a):
    """Windowed against full causal attention in one kernel family
    (FlexAttention, compiled): what a sliding window saves in time, as a
    ratio a cuDNN figure can be scaled by.  Query i sees keys
    i - window + 1 .. i."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    fa = torch.compile(flex_attention)
    w = a.flex_window
    res = {**header(), "window": w, "results": []}
    for name, shape in SHAPES.items():
        if not name.startswith("gpt-oss"):
            continue
        b, hq, hkv, s, d = shape
        dev, dt = torch.device("cuda"), torch.bfloat16
        g = torch.Generator(device="cuda").manual_seed(1)
        q = torch.randn(b, hq, s, d, device=dev, dtype=dt, generator=g).requires_grad_()
        k = torch.randn(b, hkv, s, d, device=dev, dtype=dt, generator=g).requires_grad_()
        v = torch.randn(b, hkv, s, d, device=dev, dtype=dt, generator=g).requires_grad_()
        do = torch.randn(b, hq, s, d, device=dev, dtype=dt, generator=g)
        masks = {
            "causal": lambda b_, h_, qi, ki: qi >= ki,
            "window": lambda b_, h_, qi, ki: (qi >= ki) & (qi - ki < w),
        }
        for mname, mf in masks.items():
            r = {"shape": name, "mask": mname, "batch": b, "heads": hq,
                 "kv_heads": hkv, "seq": s, "head_dim": d}
            try:
                bm = create_block_mask(mf, None, None, s, s, device="cuda")
                f = lambda: fa(q, k, v, block_mask=bm, enable_gqa=hq != hkv)
                r["fwd_ms"] = event_ms(f, a.iters, 5)
                o = f()

                def bwd():
                    q.grad = k.grad = v.grad = None
                    o.backward(do, retain_graph=True)

                r["bwd_ms"] = event_ms(bwd, a.iters, 5)
            except Exception as e:
                r["error"] = repr(e)[:300]
            res["results"].append(r)
            print(r, file=sys.stderr)
        torch.cuda.empty_cache()
    write_json(res, a.out)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--grid", action="store_true",
                    help="also heads 4..64 x sequence 2048..16384 (cuDNN only)")
    ap.add_argument("--grid-dims", default="128",
                    help="head dims of the grid, comma-separated (default 128)")
    ap.add_argument("--flex-window", type=int, default=0,
                    help="instead: FlexAttention, causal and with this "
                    "sliding window, on the named shapes (bf16)")
    ap.add_argument("--backends", default=",".join(BACKENDS),
                    help="for the named shapes (default: all)")
    ap.add_argument("--peak", type=float, default=989.5e12)
    ap.add_argument("--out")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("attn_torch: no CUDA device visible to PyTorch", file=sys.stderr)
        return 77
    res = {**header(), "cudnn": torch.backends.cudnn.version(),
           "peak_flops": a.peak, "results": []}
    warm_clocks()
    todo = [(n, sh, be) for n, sh in SHAPES.items() for be in a.backends.split(",")]
    if a.flex_window:
        return flex(a)
    if a.grid:
        for d in (int(x) for x in a.grid_dims.split(",")):
            # d 128 keeps the names fit_attention.py reads.
            pre = "grid-" if d == 128 else "grid-d%d-" % d
            todo += [(pre + "h%d-s%d" % (h, s), (1, h, h, s, d), "cudnn")
                     for s in (2048, 4096, 8192, 16384) for h in (4, 8, 16, 32, 64)]
    for n, sh, be in todo:
        try:
            res["results"].append(run(n, sh, be, a.iters, a.peak))
        except Exception as e:
            res["results"].append({"shape": n, "backend": be, "error": repr(e)[:300]})
        torch.cuda.empty_cache()
    for r in res["results"]:
        if "error" in r:
            print("%-20s %-9s error %s" % (r["shape"], r["backend"], r["error"][:80]), file=sys.stderr)
        else:
            print("%-20s %-9s fwd %7.3f ms %6.1f TF (%.3f)  bwd %7.3f ms %6.1f TF (%.3f)" % (
                r["shape"], r["backend"], r["fwd_ms"], r["fwd_tflops"], r["fwd_fraction"],
                r["bwd_ms"], r["bwd_tflops"], r["bwd_fraction"]), file=sys.stderr)
    write_json(res, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
