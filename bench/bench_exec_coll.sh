#!/bin/sh
# bench_exec_coll.sh: `podplan exec collective --transport tcp` against Open
# MPI's MPI_Allreduce restricted to its TCP transport (btl tcp,self, pml
# ob1), same ranks, same sizes, same run; float sum, out of place.
# Prints per size: bus bandwidth of each (GB/s, nccl-tests' definition) and
# podplan / MPI.  DESIGN.md's target: ratio >= 1.0 from 1 MiB up.
#
# Loopback TCP on a small or shared machine moves by tens of percent from
# run to run, for both programs alike, so one run of each says little.  The
# two are run REPS times, alternating which goes first; each run gives a
# mean time per size (nccl-tests' figure, and MPI's); the table shows the
# median over the runs of each, the ratio of those medians, the lowest
# and highest ratio of a pair of runs taken back to back, and the median
# of those pair ratios with its 95% confidence interval (from 6 runs up).
#
#   bench/bench_exec_coll.sh [BUILD] [RANKS...]      (default: build 2 4)
# Env: MINB MAXB FACTOR ITERS WARMUP CHANNELS SLICE (see the defaults below),
# PER_SIZE=1 (one size per run, the programs alternating size by size);
# BENCH_BIN=path/to/bench_exec_coll runs that (exec layer only, same code)
# instead of the podplan CLI, for machines without the simulator's libraries.
set -eu
BUILD=${1:-build}
shift 2>/dev/null || true
RANKS=${*:-2 4}
MINB=${MINB:-1024}
MAXB=${MAXB:-268435456}
MINB0=$MINB MAXB0=$MAXB
FACTOR=${FACTOR:-4}
ITERS=${ITERS:-10}
WARMUP=${WARMUP:-3}
CHANNELS=${CHANNELS:-2}
REPS=${REPS:-5}
PODPLAN=$BUILD/cli/podplan
MPIBENCH=${MPIBENCH:-$BUILD/bench/mpi_allreduce}
[ -n "${BENCH_BIN:-}" ] || [ -x "$PODPLAN" ] || { echo "no $PODPLAN: build first" >&2; exit 2; }
[ -x "$MPIBENCH" ] || { echo "no $MPIBENCH: build with MPI (PODPLAN_WITH_MPI)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# $(uname -n): $(nproc) cores; $(mpirun --version 2>/dev/null | head -1)"
echo "# podplan: --channels $CHANNELS${SLICE:+ --slice $SLICE}; iters $ITERS, warm-up $WARMUP; $REPS alternating runs of each"
ours() {
  if [ -n "${BENCH_BIN:-}" ]; then
    "$BENCH_BIN" "$1" "$MINB" "$MAXB" "$FACTOR" "$ITERS" "$WARMUP" "$CHANNELS" ${SLICE:-}
  else
    "$PODPLAN" exec collective --np "$1" -b "$MINB" -e "$MAXB" -f "$FACTOR" \
      -n "$ITERS" -w "$WARMUP" -c 0 --channels "$CHANNELS" ${SLICE:+--slice $SLICE} \
      | awk -v n="$1" '!/^#/ {print $1, $6, $1 / ($6 * 1e3) * 2 * (n - 1) / n}'
  fi
}
mpi() {
  mpirun --allow-run-as-root --oversubscribe --mca btl tcp,self --mca pml ob1 \
    -np "$1" "$MPIBENCH" "$MINB" "$MAXB" "$FACTOR" "$ITERS" "$WARMUP"
}
for n in $RANKS; do
  : > "$tmp/all"
  # PER_SIZE=1: each run covers one size, and the two programs alternate
  # size by size, so that a pair compared ran seconds apart, not a sweep
  # apart (this machine's speed drifts over tens of seconds).
  if [ "${PER_SIZE:-0}" = 1 ]; then
    sizes=$(awk -v b="$MINB0" -v e="$MAXB0" -v f="$FACTOR" 'BEGIN { for (s = b; s <= e; s *= f) print s }')
  else
    sizes=all
  fi
  for sz in $sizes; do
    if [ "$sz" = all ]; then MINB=$MINB0 MAXB=$MAXB0; else MINB=$sz MAXB=$sz; fi
    rep=1
    while [ "$rep" -le "$REPS" ]; do
      if [ $((rep % 2)) -eq 1 ]; then
        ours "$n" > "$tmp/o"; mpi "$n" > "$tmp/m"
      else
        mpi "$n" > "$tmp/m"; ours "$n" > "$tmp/o"
      fi
      # one line per size and run: size podplan_us mpi_us
      awk -v r="$rep" 'NR == FNR { us[$1] = $2; next }
           ($1 in us) { print r, $1, $2, us[$1] }' "$tmp/m" "$tmp/o" >> "$tmp/all"
      rep=$((rep + 1))
    done
  done
  echo
  echo "# $n ranks, allreduce float sum (out of place), loopback TCP; median of $REPS runs"
  printf '# %12s %12s %12s %12s %12s %8s %13s %8s %13s\n' size_B podplan_us mpi_us podplan_GBps mpi_GBps ratio "ratio_min-max" pair_med "pair_95%CI"
  sort -k2,2n "$tmp/all" | awk -v n="$n" '
    function med(a, k,   i, j, t) {
      for (i = 2; i <= k; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    # The median of the pair ratios and its distribution-free 95%
    # confidence interval (order statistics j and u of the sorted ratios,
    # binomial(k, 1/2) by its normal approximation; Conover, Practical
    # Nonparametric Statistics, sec. 3.2): the figure to hold against the
    # target, since a pair ran back to back.
    function flush(   po, mp, f, pm, j, u, ci) {
      if (k == 0) return
      f = 2 * (n - 1) / n
      po = med(o, k); mp = med(m, k); pm = med(q, k)
      j = int(k / 2 - 0.98 * sqrt(k)); u = k + 1 - j
      ci = j >= 1 ? sprintf("%.2f-%.2f", q[j], q[u]) : "-"
      printf "%14d %12.1f %12.1f %12.3f %12.3f %8.2f %6.2f-%-6.2f %8.2f %13s\n", size, po, mp,
             size / (po * 1e3) * f, size / (mp * 1e3) * f, mp / po, lo, hi, pm, ci
    }
    $2 != size { flush(); size = $2; k = 0; lo = 1e9; hi = 0 }
    { k++; o[k] = $3; m[k] = $4; r = $4 / $3; q[k] = r; if (r < lo) lo = r; if (r > hi) hi = r }
    END { flush() }'
done
