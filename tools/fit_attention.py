#!/usr/bin/env python3
"""tools/fit_attention.py: the attention rates of a GPU profile, refitted.

Reads tools/attn_torch.py's JSON (calibrate/examples/h200/attn-torch.json
gave profiles/h100.yaml's attention: section) and fits, forward and
backward apart, the model sim/hw/profile.c's pp_flash_efficiency() prices
a FlashAttention kernel with:

    time = F / (peak x efficiency x F / (F + flops_half)) + launch

F the kernel's causal FLOPs (2 b h s^2 d forward, 2.5 times that
backward; with a sliding window of w keys, 4 b h d (s w - w^2 / 2), the
count sim/train/compute.c prices a windowed layer with), by least squares on the relative time error over one back-end's
shapes (default cudnn), on a grid (efficiency in steps of 0.001, flops_half
in steps of 1e9 FLOPs forward, 2.5e9 backward).  Prints the two pairs, the
rms error, and each shape's error under the fit.  Pure Python: runs here.

Usage: tools/fit_attention.py FILE [--backend cudnn] [--peak 989.5e12]
       [--launch 4e-6] [--check EFF,HALF,EFF,HALF] [--head-dim D] [--grid]
       [--relative-to REF --ref EFF,HALF,EFF,HALF [--ref-peak P]]
--check prints the errors of given values instead of fitting (forward
efficiency and flops_half, then backward), e.g. a profile's against a file
it was not fitted on.  --head-dim takes one head dim's shapes alone
(calibrate/examples/h100/attn-oss.json holds 64 and 128); --grid the
grid's shapes alone, leaving the models' named kernels out of the fit.
--relative-to fits FILE's GPU through its speed against another's on
the same shapes (same names) in REF, both from one source and one
library version: each shape's time is the reference's own model (--ref,
a profile's four figures, at --ref-peak) times FILE's time over REF's.
So a GPU no one here has measured gets rates that mean what the
reference profile's do, measured the same way
(calibrate/examples/published/ holds such pairs).
"""
import argparse
import json
import math
import sys


def points(res, backend, bwd, head_dim=0, grid=False):
    out = []
    for r in res["results"]:
        if r.get("backend") != backend or "error" in r:
            continue
        if head_dim and r["head_dim"] != head_dim:
            continue
        if grid and not r["shape"].startswith("grid-"):
            continue
        f = 2.0 * r["batch"] * r["heads"] * r["seq"] ** 2 * r["head_dim"]
        w = r.get("window", 0)
        if 0 < w < r["seq"]:
            f = 4.0 * r["batch"] * r["heads"] * r["head_dim"] * (
                r["seq"] * w - w * w / 2.0)
        f *= 2.5 if bwd else 1.0
        out.append((r["shape"], f, (r["bwd_ms"] if bwd else r["fwd_ms"]) / 1e3))
    return out


def relative(pts, ref_pts, ref, bwd, ref_peak, launch):
    """pts' times re-expressed as the reference model's times scaled by
    the measured ratio of each shape (matched by name)."""
    by = {name: t for name, _, t in ref_pts}
    eff, half = ref[2 * bwd:2 * bwd + 2]
    out = []
    for name, f, t in pts:
        if name not in by:
            continue
        out.append((name, f, (f / (ref_peak * eff * f / (f + half)) + launch) *
                    t / by[name]))
    return out


def errors(pts, eff, half, peak, launch):
    return [(f / (peak * eff * f / (f + half)) + launch) / t - 1 for _, f, t in pts]


def fit(pts, bwd, peak, launch):
    step = 2.5e9 if bwd else 1e9
    best = None
    for i in range(200, 800):
        eff = i / 1000
        for j in range(300):
            half = j * step
            ss = sum(e * e for e in errors(pts, eff, half, peak, launch))
            if best is None or ss < best[0]:
                best = (ss, eff, half)
    return best[1], best[2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("--backend", default="cudnn")
    ap.add_argument("--peak", type=float, default=989.5e12)
    ap.add_argument("--launch", type=float, default=4e-6)
    ap.add_argument("--check", help="EFF,HALF,EFF,HALF: errors of these values, no fit")
    ap.add_argument("--head-dim", type=int, default=0,
                    help="only the shapes of this head dim (default: all)")
    ap.add_argument("--grid", action="store_true",
                    help="only the grid's shapes, not the models' (the "
                    "models' kernels then check the fit)")
    ap.add_argument("--relative-to", metavar="REF",
                    help="fit through the time ratios to REF's same shapes")
    ap.add_argument("--ref", help="EFF,HALF,EFF,HALF: the reference GPU's "
                    "profile figures (with --relative-to)")
    ap.add_argument("--ref-peak", type=float, default=989.5e12)
    a = ap.parse_args()
    res = json.load(open(a.file))
    ref = None
    if a.relative_to:
        ref = [float(x) for x in (a.ref or "").split(",") if x]
        if len(ref) != 4:
            print("fit_attention: --relative-to wants --ref with four numbers",
                  file=sys.stderr)
            return 2
        ref_res = json.load(open(a.relative_to))
    given = [float(x) for x in a.check.split(",")] if a.check else None
    if given is not None and len(given) != 4:
        print("fit_attention: --check wants four numbers", file=sys.stderr)
        return 2
    for bwd in (0, 1):
        pts = points(res, a.backend, bwd, a.head_dim, a.grid)
        if ref:
            pts = relative(pts, points(ref_res, a.backend, bwd, a.head_dim,
                                       a.grid), ref, bwd, a.ref_peak, a.launch)
        if not pts:
            print("fit_attention: no %s results in %s" % (a.backend, a.file), file=sys.stderr)
            return 2
        eff, half = given[2 * bwd:2 * bwd + 2] if given else fit(pts, bwd, a.peak, a.launch)
        err = errors(pts, eff, half, a.peak, a.launch)
        big = [abs(e) for e, (_, _, t) in zip(err, pts) if t > 0.25e-3]
        print("%s: efficiency %.3f, flops_half %.3g; rms %.1f%% over %d shapes; "
              "over 0.25 ms: mean |error| %.1f%% (%d)" % (
                  "backward" if bwd else "forward", eff, half,
                  100 * math.sqrt(sum(e * e for e in err) / len(err)), len(err),
                  100 * sum(big) / len(big) if big else 0, len(big)))
        for (name, f, t), e in zip(pts, err):
            print("  %-22s %9.3g FLOP %8.3f ms %+6.1f%%" % (name, f, t * 1e3, 100 * e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
