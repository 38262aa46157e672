#!/bin/bash
# tools/gpu-check.sh: exec's GPU code on a real GPU (issue 13 part 1).
#
# For a lent GPU machine: CUDA 13 with nvcc, root, no network, and
# possibly none of libyaml/igraph/gsl/jansson/cmocka.  Two paths, each
# step logged to $OUT and allowed to fail without stopping the others:
#
#   standalone  nvcc + cc only: exec's sources, common/error.c and
#               models/gemms.c into tools/gpucheck.c and
#               tests/test_exec_cuda.c (build-gpu-standalone/).  Always
#               possible where nvcc is.
#   cmake       the whole project with CUDA (build-gpu/), its CUDA tests,
#               and `podplan exec gemm|membw` with JSON output.  Needs
#               cmake and the -dev packages; skipped (and said so) when
#               configuring fails.
#
# Usage (from anywhere in the repository):
#   OUT=/some/dir tools/gpu-check.sh          # OUT defaults to ./gpu-check-out
#   ITERS=200 tools/gpu-check.sh              # timed runs per GEMM (default 100)
# It ends with a summary table: every step's status, then the headline
# figures (TFLOP/s per GEMM, GB/s per STREAM kernel).  Exit status: 0 when
# every step that ran passed, 1 otherwise.
set -x
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
OUT=${OUT:-$ROOT/gpu-check-out}
ITERS=${ITERS:-100}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 8)}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
CC=${CC:-cc}
export PATH=$CUDA_HOME/bin:$PATH
mkdir -p "$OUT"

STEPS=()
# step NAME CMD...: runs CMD with its output in $OUT/NAME.log; records
# the status; never stops the script.
step() {
    local name=$1 t0 rc
    shift
    t0=$(date +%s)
    "$@" >"$OUT/$name.log" 2>&1
    rc=$?
    STEPS+=("$name|$rc|$(( $(date +%s) - t0 ))")
    return 0
}
skip() { STEPS+=("$1|skip|0"); echo "skipped: $2" >"$OUT/$1.log"; }
ok() { local s; for s in "${STEPS[@]}"; do [ "${s%%|*}" = "$1" ] && [ "$(echo "$s" | cut -d'|' -f2)" = 0 ] && return 0; done; return 1; }

# --- the machine -----------------------------------------------------------
step 00-machine sh -c "nvidia-smi; nvidia-smi --query-gpu=name,compute_cap,clocks.max.sm,clocks.max.mem,power.limit --format=csv; $NVCC --version; $CC --version | head -1; cmake --version | head -1; nproc; free -g"
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
# Peaks for the standalone path's "% of peak", from topologies/hardware.yaml
# (the cmake path reads the catalogue itself): dense TFLOP/s.
peak() {
    case "$GPU_NAME" in
    *H100*PCIe*) case $1 in bf16|fp16) echo 756.5;; fp8) echo 1513;; tf32) echo 378;; fp32) echo 51;; esac ;;
    *H100*|*H200*) case $1 in bf16|fp16) echo 989.5;; fp8) echo 1979;; tf32) echo 494.5;; fp32) echo 67;; esac ;;
    *A100*) case $1 in bf16|fp16) echo 312;; tf32) echo 156;; fp32) echo 19.5;; esac ;;
    esac
}
# sm_80 and sm_90 SASS, plus sm_90 PTX for anything newer.
ARCH="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]"

# --- standalone path -------------------------------------------------------
SB=$ROOT/build-gpu-standalone
build_standalone() (
    set -e
    rm -rf "$SB"
    mkdir -p "$SB"
    local f objs=""
    for f in exec/sweep.c exec/gemm.c exec/membw.c exec/devmem_nocuda.c exec/gemm_nocuda.c common/error.c models/gemms.c; do
        $CC -std=c11 -O2 -Wall -D_POSIX_C_SOURCE=200809L -DPODPLAN_HAVE_CUDA \
            -Iinclude -Iexec -c "$f" -o "$SB/$(basename "$f" .c).o"
        objs="$objs $SB/$(basename "$f" .c).o"
    done
    for f in exec/cuda_rt.cu exec/gemm_cuda.cu; do
        $NVCC -std=c++17 -O2 $ARCH -DPODPLAN_HAVE_CUDA -Iinclude -Iexec \
            -c "$f" -o "$SB/$(basename "$f" .cu).o"
        objs="$objs $SB/$(basename "$f" .cu).o"
    done
    $CC -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -Iinclude -Iexec -c tools/gpucheck.c -o "$SB/gpucheck.o"
    $CC -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -Iinclude -Iexec -c tests/test_exec_cuda.c -o "$SB/test_exec_cuda.o"
    $NVCC -o "$SB/gpucheck" "$SB/gpucheck.o" $objs -lcublasLt -lcudart -lpthread -lm
    $NVCC -o "$SB/test_exec_cuda" "$SB/test_exec_cuda.o" $objs -lcublasLt -lcudart -lpthread -lm
)
step 10-standalone-build build_standalone
if ok 10-standalone-build; then
    step 11-standalone-test_exec_cuda "$SB/test_exec_cuda"
    for dt in bf16 fp16 fp8 tf32 fp32; do
        step "12-standalone-gemm-gpt3-tp8-$dt" "$SB/gpucheck" gemm $dt gpt3-tp8 "$ITERS" $(peak $dt)
    done
    for dt in bf16 fp8; do
        step "13-standalone-gemm-square-$dt" "$SB/gpucheck" gemm $dt square:256:16384:x2 "$ITERS" $(peak $dt)
    done
    step 14-standalone-membw "$SB/gpucheck" membw 64 256 1024 4096
else
    skip 11-standalone-test_exec_cuda "standalone build failed"
fi

# --- cmake path ------------------------------------------------------------
B=$ROOT/build-gpu
PODPLAN=$B/cli/podplan
step 20-cmake-configure cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DPODPLAN_WITH_CUDA=ON \
    -DCMAKE_CUDA_COMPILER="$NVCC"
if ok 20-cmake-configure; then
    step 21-cmake-build cmake --build "$B" -j "$JOBS"
else
    skip 21-cmake-build "configure failed (missing -dev packages? see 20-cmake-configure.log)"
fi
if ok 21-cmake-build; then
    step 22-ctest-exec sh -c "cd '$B' && ctest --output-on-failure -R 'test_exec' -V"
    for dt in bf16 fp8; do
        step "23-podplan-gemm-gpt3-tp8-$dt" "$PODPLAN" exec gemm --backend cuda --dtype $dt \
            --model gpt3-175b --parallel tp=8 --iters "$ITERS" --format json -o "$OUT/gemm-gpt3-tp8-$dt.json"
        "$PODPLAN" exec gemm --backend cuda --dtype $dt --model gpt3-175b --parallel tp=8 \
            --iters "$ITERS" >"$OUT/gemm-gpt3-tp8-$dt.txt" 2>&1
    done
    step 24-podplan-gemm-square-bf16 "$PODPLAN" exec gemm --backend cuda --dtype bf16 \
        --square 256:16384:x2 --iters "$ITERS" --format json -o "$OUT/gemm-square-bf16.json"
    "$PODPLAN" exec gemm --backend cuda --dtype bf16 --square 256:16384:x2 --iters "$ITERS" \
        >"$OUT/gemm-square-bf16.txt" 2>&1
    step 25-podplan-membw "$PODPLAN" exec membw --device cuda --kernel all \
        --sizes 64MiB,256MiB,1GiB,4GiB --format json -o "$OUT/membw-cuda.json"
    "$PODPLAN" exec membw --device cuda --kernel all --sizes 64MiB,256MiB,1GiB,4GiB \
        >"$OUT/membw-cuda.txt" 2>&1
    step 26-podplan-membw-host "$PODPLAN" exec membw --threads "$JOBS" --sizes 1GiB \
        --format json -o "$OUT/membw-host.json"
else
    skip 22-ctest-exec "no cmake build"
fi

# --- summary ----------------------------------------------------------------
set +x
{
    echo
    echo "=== gpu-check summary: ${GPU_NAME:-no GPU found} ($(date -u +%Y-%m-%dT%H:%MZ)) ==="
    printf '%-34s %-6s %6s  %s\n' step status secs log
    fail=0
    for s in "${STEPS[@]}"; do
        IFS='|' read -r name rc secs <<<"$s"
        st=ok
        [ "$rc" = skip ] && st=skip
        [ "$rc" = 77 ] && st=skip77
        if [ "$rc" != 0 ] && [ "$rc" != skip ] && [ "$rc" != 77 ]; then st="FAIL($rc)"; fail=1; fi
        printf '%-34s %-6s %6s  %s\n' "$name" "$st" "$secs" "$OUT/$name.log"
    done
    echo
    echo "headline figures (standalone gpucheck; the podplan JSON is in $OUT/*.json):"
    grep -h '^SUMMARY' "$OUT"/1[234]-*.log 2>/dev/null | sed 's/^SUMMARY /  /'
    if ok 21-cmake-build && command -v python3 >/dev/null; then
        echo
        echo "podplan exec gemm (cmake path):"
        for j in "$OUT"/gemm-*.json; do
            [ -f "$j" ] && python3 - "$j" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["results"]:
    f = r.get("fraction_of_peak")
    print("  %-5s %-12s %dx%dx%dx%d %8.1f TFLOP/s %s  %s" % (
        r["dtype"], r["name"] or "-", r["batch"], r["m"], r["n"], r["k"],
        r["tflops"], "%5.1f%% of peak" % (100 * f) if f else "", r["algo"]))
EOF
        done
    fi
    echo "exit: $fail"
} | tee "$OUT/summary.txt"
exit "$(tail -1 "$OUT/summary.txt" | awk '{print $2}')"
