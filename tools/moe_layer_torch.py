#!/usr/bin/env python3
"""tools/moe_layer_torch.py: one GPU's share of a dropless MoE layer, timed.

A device probe for a lent GPU machine (it needs PyTorch and a GPU; nothing
in the build or the tests uses it).  It runs, on one GPU and in eager
PyTorch, the kernels Megatron-core's MoE layer with the all-to-all token
dispatcher runs on each rank of an EP group, without the all-to-alls
themselves (megatron/core/transformer/moe/: router.py TopKRouter,
token_dispatcher.py MoEAlltoAllTokenDispatcher, moe_utils.py permute /
sort_chunks_by_idxs / unpermute, experts.py's grouped MLP):

  router GEMM (T x E x h), softmax and top-k in fp32;
  permute: each token's k copies gathered by expert ([T k, h]);
  [the dispatch all-to-all would run here: balanced routing means a rank
   receives as many rows as it sends, so the tensor keeps its size]
  sort_chunks_by_idxs: the received rows reordered by local expert;
  tokens_per_expert to the host (the dropless path's device-to-host sync);
  the local experts: one GEMM per expert (Transformer Engine's
   GroupedLinear runs one cuBLAS GEMM per expert), fc1 -> SwiGLU -> fc2;
  the reverse sort, then unpermute: rows scaled by their router
   probability and summed back into [T, h];
and the backward of all of it through autograd.

What it reports per configuration (JSON on stdout or --out):
  wall_ms        one forward + backward, synchronised, median of --iters;
  gpu_ms         the sum of the GPU kernels' durations in one iteration
                 (torch.profiler), and that sum by kind: gemm, index
                 (gather/scatter/sort), elementwise/reduce, other;
  host_issue_ms  the host's time to issue one forward + backward while the
                 GPU is held busy by a sleep kernel (the launch cost alone);
  index_add_ms, scatter_add_ms (and _GBps of rows): the unfused
                 permutation's atomic row adds alone, both forms;
  the expert GEMMs alone (forward + backward) as a loop of per-expert
  matmuls, and as torch._grouped_mm where this PyTorch has it.

Routing is forced balanced (NeMo's benchmarks force-balance the token
distribution): token t's experts are (t k + j) mod E, so every expert gets
T k / E rows and every rank of a ep-wide group T k / ep.
"""
import argparse
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from torch_probe import event_ms, header, write_json

CONFIGS = {
    # name: tokens per GPU per micro-batch T, hidden h, expert width f,
    # experts E, top-k k, EP size ep.
    "qwen3-30b-a3b-ep16-mbs1": dict(T=4096, h=2048, f=768, E=128, k=8, ep=16),
    "qwen3-30b-a3b-ep8-mbs2": dict(T=8192, h=2048, f=768, E=128, k=8, ep=8),
    "qwen3-235b-a22b-ep32-tp2": dict(T=2048, h=4096, f=1536, E=128, k=8, ep=32),
    "deepseek-v3-ep64": dict(T=4096, h=7168, f=2048, E=256, k=8, ep=64),
    "mixtral-8x7b-ep8": dict(T=4096, h=4096, f=14336, E=8, k=2, ep=8),
    # GPT-OSS 120B at NVIDIA's H100 preset (tp 1, ep 8, mbs 4 of 4096).
    "gpt-oss-120b-ep8-mbs4": dict(T=16384, h=2880, f=2880, E=128, k=4, ep=8),
}


class Layer:
    def __init__(self, T, h, f, E, k, ep, dtype, dev):
        self.T, self.h, self.f, self.E, self.k, self.ep = T, h, f, E, k, ep
        self.g = max(1, E // ep)  # local experts
        g = torch.Generator(device="cpu").manual_seed(1)
        s = 0.02

        def p(*shape):
            return (torch.randn(*shape, generator=g) * s).to(dev, dtype).requires_grad_()

        self.wr = p(E, h)
        self.w1 = [p(2 * f, h) for _ in range(self.g)]
        self.w2 = [p(h, f) for _ in range(self.g)]
        self.x = (torch.randn(T, h, generator=g)).to(dev, dtype).requires_grad_()
        self.dy = (torch.randn(T, h, generator=g)).to(dev, dtype)
        # Forced balance: token t -> experts (t k + j) mod E.
        t = torch.arange(T, device=dev)
        self.topi = (t[:, None] * k + torch.arange(k, device=dev)[None, :]) % E
        # The rows this rank receives: T k in all (balanced), as g chunks
        # from each of the ep source ranks, in source-rank order; the sort
        # puts them in local-expert order.
        n = T * k // (ep * self.g)  # rows per (source rank, local expert)
        order = torch.arange(ep * self.g, device=dev).view(ep, self.g).t().reshape(-1)
        base = torch.arange(ep * self.g, device=dev) * n
        self.sort_idx = (base[order][:, None] + torch.arange(n, device=dev)[None, :]).reshape(-1)
        self.unsort_idx = torch.argsort(self.sort_idx)
        self.recv_rows = T * k

    def step(self, sync_counts=True):
        k = self.k
        logits = self.x @ self.wr.t()
        probs = torch.softmax(logits.float(), dim=-1)
        # Forced-balance routing: the scores are real, the choice is fixed.
        w = torch.gather(probs, 1, self.topi)
        w = (w / w.sum(-1, keepdim=True)).to(self.x.dtype)
        # permute: sort the (token, slot) pairs by expert, gather rows.
        flat = self.topi.reshape(-1)
        order = torch.argsort(flat, stable=True)
        tok = order // k
        xp = self.x.index_select(0, tok)
        # The all-to-all is not run: the received tensor has T k rows.
        xs = xp.index_select(0, self.sort_idx)
        counts = torch.full((self.g,), self.recv_rows // self.g, device=xs.device)
        if sync_counts:
            sizes = counts.tolist()  # the dropless path's D2H sync
        else:
            sizes = [self.recv_rows // self.g] * self.g
        outs = []
        for xe, w1, w2 in zip(torch.split(xs, sizes), self.w1, self.w2):
            a = xe @ w1.t()
            a1, a2 = a.chunk(2, dim=-1)
            outs.append((F.silu(a1) * a2) @ w2.t())
        ys = torch.cat(outs)
        yp = ys.index_select(0, self.unsort_idx)
        wp = w.reshape(-1).index_select(0, order)
        y = torch.zeros_like(self.x).index_add(0, tok, yp * wp[:, None])
        y.backward(self.dy)
        return y

    def experts_only(self, xs, grouped):
        if grouped:
            offs = torch.arange(1, self.g + 1, device=xs.device, dtype=torch.int32) * (
                xs.shape[0] // self.g)
            w1 = torch.stack(self.w1).transpose(-2, -1)
            w2 = torch.stack(self.w2).transpose(-2, -1)
            a = torch._grouped_mm(xs, w1, offs=offs)
            a1, a2 = a.chunk(2, dim=-1)
            y = torch._grouped_mm(F.silu(a1) * a2, w2, offs=offs)
        else:
            outs = []
            for xe, w1, w2 in zip(torch.split(xs, xs.shape[0] // self.g), self.w1, self.w2):
                a = xe @ w1.t()
                a1, a2 = a.chunk(2, dim=-1)
                outs.append((F.silu(a1) * a2) @ w2.t())
            y = torch.cat(outs)
        y.backward(torch.ones_like(y))
        return y

    def zero_grad(self):
        for t in [self.x, self.wr] + self.w1 + self.w2:
            t.grad = None


def median_ms(fn, iters, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts), min(ts), max(ts)


def kind_of(name):
    n = name.lower()
    if any(s in n for s in ("gemm", "cutlass", "sm90_", "sm80_", "nvjet", "xmma", "cublas", "matmul")):
        return "gemm"
    if any(s in n for s in ("index", "gather", "scatter", "sort", "radix", "cub::")):
        return "index"
    if any(s in n for s in ("elementwise", "reduce", "softmax", "silu", "vectorized", "fill", "copy")):
        return "elementwise"
    return "other"


def gpu_profile(fn, iters=3):
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    by_kind = {"gemm": 0.0, "index": 0.0, "elementwise": 0.0, "other": 0.0}
    kernels = {}
    nk = 0
    for e in prof.events():
        dev_type = getattr(e, "device_type", None)
        if dev_type is None or "CUDA" not in str(dev_type):
            continue
        if getattr(e, "is_legacy", False):
            continue
        us = e.time_range.elapsed_us()
        if us <= 0:
            continue
        nk += 1
        by_kind[kind_of(e.name)] += us / 1e3
        kernels[e.name] = kernels.get(e.name, 0.0) + us / 1e3
    total = sum(by_kind.values()) / iters
    top = sorted(kernels.items(), key=lambda kv: -kv[1])[:12]
    return {
        "gpu_ms": total,
        "by_kind_ms": {k: v / iters for k, v in by_kind.items()},
        "kernels_per_iter": nk / iters,
        "top_kernels_ms": [[n[:90], v / iters] for n, v in top],
    }


def host_issue_ms(fn, iters=5):
    """Host time to issue fn while the GPU is held busy: fn must not sync."""
    ts = []
    for _ in range(iters):
        torch.cuda.synchronize()
        torch.cuda._sleep(int(6e8))  # ~0.3 s at ~2 GHz: the GPU stays busy
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
        torch.cuda.synchronize()
    return statistics.median(ts)


def row_adds(L, dev, dtype, iters):
    """The unfused permutation's atomic row adds, alone: the T k routed
    rows added into their T tokens, as PyTorch's index_add_ (the backward
    of Megatron-core's index_select, and this probe's unpermute) and as
    scatter_add_ (Megatron-core's unfused unpermute, moe_utils.py), with
    the routed rows in the step's order.  podplan's profile key
    memory.scatter_add_bw is bytes of rows per second."""
    T, h, k = L.T, L.h, L.k
    flat = L.topi.reshape(-1)
    tok = torch.argsort(flat, stable=True) // k
    rows = torch.randn(T * k, h, device=dev, dtype=dtype)
    out = torch.zeros(T, h, device=dev, dtype=dtype)
    idx = tok[:, None].expand(-1, h)
    ia = event_ms(lambda: out.index_add_(0, tok, rows), iters, warm=3)
    sa = event_ms(lambda: out.scatter_add_(0, idx, rows), iters, warm=3)
    b = rows.numel() * rows.element_size()
    return {"row_bytes": b, "index_add_ms": ia, "scatter_add_ms": sa,
            "index_add_GBps": b / ia / 1e6, "scatter_add_GBps": b / sa / 1e6}


def run(name, c, dtype, iters):
    dev = torch.device("cuda")
    L = Layer(**c, dtype=dtype, dev=dev)
    r = {"config": name, **c, "local_experts": L.g, "dtype": str(dtype).split(".")[-1]}

    def it():
        L.zero_grad()
        L.step(True)

    def it_nosync():
        L.zero_grad()
        L.step(False)

    med, lo, hi = median_ms(it, iters)
    r["wall_ms"], r["wall_min_ms"], r["wall_max_ms"] = med, lo, hi
    try:
        r.update(gpu_profile(it))
    except Exception as e:
        r["profile_error"] = repr(e)[:300]
    r["host_issue_ms"] = host_issue_ms(it_nosync)
    xs = torch.randn(L.recv_rows, L.h, device=dev, dtype=dtype).requires_grad_()

    def ex(grouped):
        def f():
            L.zero_grad()
            xs.grad = None
            L.experts_only(xs, grouped)
        return f

    r["experts_loop_wall_ms"] = median_ms(ex(False), iters)[0]
    try:
        r["experts_loop_gpu"] = gpu_profile(ex(False))["gpu_ms"]
    except Exception as e:
        r["experts_loop_gpu"] = r["experts_loop_wall_ms"]
        r["profile_error"] = repr(e)[:300]
    if hasattr(torch, "_grouped_mm"):
        try:
            r["experts_grouped_mm_wall_ms"] = median_ms(ex(True), iters)[0]
        except Exception as e:  # not on every GPU or dtype
            r["experts_grouped_mm_error"] = str(e)[:200]
    # FLOPs of one forward + backward of the experts (3 x forward).
    r["experts_tflop"] = 3 * 2 * L.recv_rows * L.h * (3 * L.f) / 1e12
    r["experts_loop_tflops"] = r["experts_tflop"] / (r["experts_loop_gpu"] / 1e3)
    r.update(row_adds(L, dev, dtype, iters))
    del L, xs
    torch.cuda.empty_cache()
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", action="append", help="one of %s (default: all)" % ", ".join(CONFIGS))
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--out", help="write the JSON here (default: stdout)")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("moe_layer_torch: no CUDA device visible to PyTorch", file=sys.stderr)
        return 77
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True
    names = a.config or list(CONFIGS)
    res = {**header(), "results": []}
    for n in names:
        t0 = time.time()
        try:
            res["results"].append(run(n, CONFIGS[n], torch.bfloat16, a.iters))
        except Exception as e:
            res["results"].append({"config": n, "error": repr(e)[:400]})
        print("%s: %.1f s" % (n, time.time() - t0), file=sys.stderr)
    write_json(res, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
