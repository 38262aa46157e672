#!/bin/sh
# bench_exec_coll.sh: `podplan exec collective --transport tcp` against Open
# MPI's MPI_Allreduce restricted to its TCP transport (btl tcp,self, pml
# ob1), same ranks, same sizes, same run; float sum, out of place.
# Prints per size: bus bandwidth of each (GB/s, nccl-tests' definition) and
# podplan / MPI.  DESIGN.md's target: ratio >= 1.0 from 1 MiB up.
#
#   bench/bench_exec_coll.sh [BUILD] [RANKS...]      (default: build 2 4)
# Env: MINB MAXB FACTOR ITERS WARMUP CHANNELS SLICE (see the defaults below);
# BENCH_BIN=path/to/bench_exec_coll runs that (exec layer only, same code)
# instead of the podplan CLI, for machines without the simulator's libraries.
set -eu
BUILD=${1:-build}
shift 2>/dev/null || true
RANKS=${*:-2 4}
MINB=${MINB:-1024}
MAXB=${MAXB:-268435456}
FACTOR=${FACTOR:-4}
ITERS=${ITERS:-10}
WARMUP=${WARMUP:-3}
CHANNELS=${CHANNELS:-2}
PODPLAN=$BUILD/cli/podplan
MPIBENCH=${MPIBENCH:-$BUILD/bench/mpi_allreduce}
[ -n "${BENCH_BIN:-}" ] || [ -x "$PODPLAN" ] || { echo "no $PODPLAN: build first" >&2; exit 2; }
[ -x "$MPIBENCH" ] || { echo "no $MPIBENCH: build with MPI (PODPLAN_WITH_MPI)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# $(uname -n): $(nproc) cores; $(mpirun --version 2>/dev/null | head -1)"
echo "# podplan: --channels $CHANNELS${SLICE:+ --slice $SLICE}; iters $ITERS, warm-up $WARMUP"
for n in $RANKS; do
  if [ -n "${BENCH_BIN:-}" ]; then
    "$BENCH_BIN" "$n" "$MINB" "$MAXB" "$FACTOR" "$ITERS" "$WARMUP" "$CHANNELS" ${SLICE:-} > "$tmp/ours"
  else
    "$PODPLAN" exec collective --np "$n" -b "$MINB" -e "$MAXB" -f "$FACTOR" \
      -n "$ITERS" -w "$WARMUP" -c 0 --channels "$CHANNELS" ${SLICE:+--slice $SLICE} \
      | awk -v n="$n" '!/^#/ {print $1, $6, $1 / ($6 * 1e3) * 2 * (n - 1) / n}' > "$tmp/ours"
  fi
  mpirun --allow-run-as-root --oversubscribe --mca btl tcp,self --mca pml ob1 \
    -np "$n" "$MPIBENCH" "$MINB" "$MAXB" "$FACTOR" "$ITERS" "$WARMUP" > "$tmp/mpi"
  echo
  echo "# $n ranks, allreduce float sum (out of place), loopback TCP"
  printf '# %12s %12s %12s %12s %12s %8s\n' size_B podplan_us mpi_us podplan_GBps mpi_GBps ratio
  awk 'NR == FNR { us[$1] = $2; bw[$1] = $3; next }
       ($1 in us) { r = bw[$1] > 0 ? $3 / bw[$1] : 0;
         printf "%14d %12.1f %12.1f %12.3f %12.3f %8.2f\n", $1, $2, us[$1], $3, bw[$1], r }' \
    "$tmp/mpi" "$tmp/ours"
done
