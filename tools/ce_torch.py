#!/usr/bin/env python3
"""tools/ce_torch.py: the output layer's cross-entropy on one GPU, timed.

A device probe for a lent GPU machine (PyTorch and a GPU; nothing in the
build or the tests uses it).  For the logits of the validation models'
last stages (tokens x vocabulary, bf16, one tensor-parallel rank), it
times the forward and the backward of Megatron-core's vocab-parallel
cross-entropy in its two forms, written here after
megatron/core/tensor_parallel/cross_entropy.py (VocabParallelCrossEntropy)
and megatron/core/fusions/fused_cross_entropy.py at tensor-parallel size
1 (the all-reduces are no-ops there):

  unfused  (--cross-entropy-loss-fusion off): the steps in eager PyTorch:
           cast to fp32, max, subtract, exp, sum, the loss, divide in
           place; backward: the one-hot subtraction, the scale, and the
           cast back to the logits' dtype;
  fused    (cross_entropy_loss_fusion, Megatron-Bridge's default): the
           same steps grouped as the fused module groups them, each group
           under torch.compile (Megatron-core's jit_fuser).

What sim/train/compute.c prices: the unfused forward at 38 bytes of HBM
traffic per logit (by count), the fused one at 24 (this probe's figure on
a lent H100, calibrate/examples/h100/ce-torch.json), the backward at 14
either way (Megatron-core scales and casts in two passes; this probe's
fused backward folds them into one).  Each result gives the time, and
the bytes per logit that time stands for at the measured copy rate
(--bw, default the lent H100's 2.9 TB/s cudaMemcpy figure).

Output: JSON on stdout or --out.
"""
import argparse
import sys

import torch

from torch_probe import event_ms, header, write_json

SHAPES = {
    # name: tokens (sequence x micro-batch), vocabulary
    "llama3-8b-s8192": (8192, 128256),
    "qwen3-30b-s4096": (4096, 151936),
    "gpt-oss-120b-mbs2": (8192, 201088),
    "gpt3-175b-s2048": (2048, 51200),
}


def onehot_sub(sm, target):
    """softmax - one-hot(target), in place: one logit a row."""
    sm[torch.arange(sm.shape[0], device=sm.device), target] -= 1.0
    return sm


class Unfused(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, target):
        dtype = logits.dtype
        x = logits.float()
        mx = x.max(dim=-1)[0]
        x = x - mx.unsqueeze(-1)
        pred = x.gather(-1, target.unsqueeze(-1)).squeeze(-1)
        e = torch.exp(x)
        s = e.sum(dim=-1)
        loss = torch.log(s) - pred
        e.div_(s.unsqueeze(-1))
        ctx.save_for_backward(e, target)
        ctx.dtype = dtype
        return loss

    @staticmethod
    def backward(ctx, g):
        sm, target = ctx.saved_tensors
        grad = onehot_sub(sm, target)
        grad.mul_(g.unsqueeze(-1))
        return grad.to(ctx.dtype), None


@torch.compile
def _max(x):
    x = x.float()
    return x, x.max(dim=-1)[0]


@torch.compile
def _exp_sum(x, mx):
    e = torch.exp(x - mx.unsqueeze(-1))
    return e, e.sum(dim=-1)


@torch.compile
def _loss(e, s, pred):
    loss = torch.log(s) - pred
    return e.div_(s.unsqueeze(-1)), loss


@torch.compile
def _grad(sm, g, dtype: torch.dtype):
    return (sm * g.unsqueeze(-1)).to(dtype)


class Fused(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, target):
        dtype = logits.dtype
        x, mx = _max(logits)
        pred = (x.gather(-1, target.unsqueeze(-1)).squeeze(-1) - mx)
        e, s = _exp_sum(x, mx)
        sm, loss = _loss(e, s, pred)
        ctx.save_for_backward(sm, target)
        ctx.dtype = dtype
        return loss

    @staticmethod
    def backward(ctx, g):
        sm, target = ctx.saved_tensors
        return _grad(onehot_sub(sm, target), g, ctx.dtype), None


def run(name, tokens, vocab, form, iters, bw):
    dev = torch.device("cuda")
    g = torch.Generator(device="cuda").manual_seed(1)
    logits = torch.randn(tokens, vocab, device=dev, dtype=torch.bfloat16,
                         generator=g).requires_grad_()
    target = torch.randint(0, vocab, (tokens,), device=dev, generator=g)
    fn = Fused if form == "fused" else Unfused
    fwd = event_ms(lambda: fn.apply(logits, target), iters, 3)
    gl = torch.ones(tokens, device=dev)

    def both():
        # The backward works in place on the saved softmax, so it is timed
        # with a forward of its own and the forward's time taken off.
        logits.grad = None
        fn.apply(logits, target).backward(gl)

    bw_ms = event_ms(both, iters, 3) - fwd
    n = tokens * vocab
    r = {"shape": name, "tokens": tokens, "vocab": vocab, "form": form,
         "fwd_ms": fwd, "bwd_ms": bw_ms,
         "fwd_bytes_per_logit": fwd / 1e3 * bw / n,
         "bwd_bytes_per_logit": bw_ms / 1e3 * bw / n}
    del logits
    torch.cuda.empty_cache()
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--bw", type=float, default=2.9e12,
                    help="HBM rate the bytes per logit are read at (B/s)")
    ap.add_argument("--out")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("ce_torch: no CUDA device visible to PyTorch", file=sys.stderr)
        return 77
    res = {**header(), "bw": a.bw, "results": []}
    for name, (t, v) in SHAPES.items():
        for form in ("unfused", "fused"):
            try:
                res["results"].append(run(name, t, v, form, a.iters, a.bw))
            except Exception as e:
                res["results"].append({"shape": name, "form": form,
                                       "error": repr(e)[:300]})
            print(res["results"][-1], file=sys.stderr)
    write_json(res, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
