#!/usr/bin/env python3
"""Fit a Blackwell profile's GEMM shape figures to a published GEMM table.

    tools/fit_gemm_table.py calibrate/examples/published/xla-matmul-sm100.json

The table (OpenXLA's sm_100 kernel times, transcribed) reaches only
m, n, k = 4096, too small to pin an asymptote, so the profile's asymptote
is held (--bf16-efficiency, b200.yaml's mamf-finder rule) and the grid
search picks k_half and the efficiency of the 128 x 128, 256 x 64 and
64 x 256 tiles by the least squares of the relative time error over the
BF16 points of at least four launch overheads (as `podplan calibrate fit`
selects them).  FP8 likewise, with the tiles and waves found for BF16
applied (gemm.fp8_waves): its asymptote held (--fp8-efficiency), the
search picks fp8_k_half; the profile's earlier figures (--fp8-k-half)
are shown with and without the waves beside it.

The time model is sim/hw/profile.c's (pp_gemm_efficiency, tile_factor,
roofline, lowp_time), written again here for the search; `podplan
calibrate validate --profile b200 FILE` checks the shipped profile's BF16
figures with the C model itself.  Standard library only.
"""
import argparse
import json
import math

TILES = [(256, 128, 1.0), (128, 256, 1.0), (128, 128, None), (256, 64, None),
         (64, 256, None), (128, 64, 0.82), (64, 128, 0.82), (64, 64, 0.65)]


def tile_factor(b, m, n, t128, sms):
    best = 0.0
    for tm, tn, te in TILES:
        te = t128 if te is None else te
        cm, cn = math.ceil(m / tm), math.ceil(n / tn)
        tiles = b * cm * cn
        waves = math.ceil(tiles / sms)
        x = te * tiles / (waves * sms) * (m * n) / (cm * tm * cn * tn)
        best = max(best, x)
    return best


def gemm_time(a, p, eff, kh, t128, ob):
    b, m, n, k = p["batch"], p["m"], p["n"], p["k"]
    e = eff * k / (k + kh) * tile_factor(b, m, n, t128, a.sms)
    flops = 2.0 * b * m * n * k
    byts = b * (ob * (m * k + k * n) + 2.0 * m * n)
    peak = a.peak if ob == 2 else a.fp8_peak
    return max(flops / (peak * e), byts / a.hbm) + a.launch


def rms(pts, f):
    e = [f(p) / p["time_median_s"] - 1 for p in pts]
    return math.sqrt(sum(x * x for x in e) / len(e)), sum(e) / len(e)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("table")
    ap.add_argument("--peak", type=float, default=2250e12)
    ap.add_argument("--fp8-peak", type=float, default=4500e12)
    ap.add_argument("--hbm", type=float, default=8e12 * 0.867)
    ap.add_argument("--sms", type=int, default=148)
    ap.add_argument("--launch", type=float, default=4e-6)
    ap.add_argument("--bf16-efficiency", type=float, default=0.791)
    ap.add_argument("--fp8-efficiency", type=float, default=0.766)
    ap.add_argument("--fp8-k-half", type=float, default=272)
    a = ap.parse_args()
    res = json.load(open(a.table))["results"]
    floor = 4 * a.launch
    bf = [p for p in res if p["dtype"] == "bf16" and p["time_median_s"] >= floor]
    f8 = [p for p in res if p["dtype"] == "fp8" and p["time_median_s"] >= floor]

    eff = a.bf16_efficiency
    best = None
    for kh in range(0, 1200, 8):
        for t in (x / 100 for x in range(70, 101)):
            r = rms(bf, lambda p: gemm_time(a, p, eff, kh, t, 2))[0]
            if best is None or r < best[0]:
                best = (r, kh, t)
    r, kh, t128 = best
    print("bf16: %d points, efficiency %.3f held; k_half %d, tiles "
          "128x128/256x64 %.2f: rms %.1f%%, mean %+.1f%%" %
          (len(bf), eff, kh, t128, 100 * r,
           100 * rms(bf, lambda p: gemm_time(a, p, eff, kh, t128, 2))[1]))

    def fp8(p, waves):
        if waves:
            return gemm_time(a, p, a.fp8_efficiency, a.fp8_k_half, t128, 1)
        b, m, n, k = p["batch"], p["m"], p["n"], p["k"]
        e = a.fp8_efficiency * k / (k + a.fp8_k_half)
        flops = 2.0 * b * m * n * k
        byts = b * (m * k + k * n + 2.0 * m * n)
        return max(flops / (a.fp8_peak * e), byts / a.hbm) + a.launch

    for waves in (False, True):
        r, mean = rms(f8, lambda p: fp8(p, waves))
        print("fp8: %d points, efficiency %.3f, k_half %g, %s: rms %.1f%%, "
              "mean %+.1f%%" % (len(f8), a.fp8_efficiency, a.fp8_k_half,
                                "tiles and waves" if waves else "no waves",
                                100 * r, 100 * mean))
    best = None
    for kh8 in range(0, 1600, 8):
        r = rms(f8, lambda p: gemm_time(a, p, a.fp8_efficiency, kh8, t128,
                                        1))[0]
        if best is None or r < best[0]:
            best = (r, kh8)
    r, kh8 = best
    print("fp8: %d points, efficiency %.3f held, tiles and waves; "
          "fp8_k_half %d: rms %.1f%%, mean %+.1f%%" %
          (len(f8), a.fp8_efficiency, kh8, 100 * r,
           100 * rms(f8, lambda p: gemm_time(a, p, a.fp8_efficiency, kh8,
                                             t128, 1))[1]))


if __name__ == "__main__":
    main()
