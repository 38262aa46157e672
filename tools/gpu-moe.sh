#!/bin/bash
# tools/gpu-moe.sh: one lent-GPU session's checks, in one command.
#
# On a lent GPU machine (no network; the -dev packages travel in .gpudeps/,
# see tools/gpu-env.sh): builds podplan with CUDA, runs the CUDA tests and
# then the whole suite, times with `podplan exec gemm` the GEMMs the
# calibration needs (GPT-3 175B at TP 8, a square sweep) and the expert
# GEMMs of the MoE validation cases (one expert's, and eight as a batch),
# `exec membw --device cuda`, a 2-rank `exec collective --device cuda`,
# tools/moe_layer_torch.py (one GPU's share of a dropless MoE layer in eager
# PyTorch) and tools/attn_torch.py (causal attention kernels, 26 shapes).  Every step is bounded by `timeout` and logged; everything ends
# in $OUT/results.tgz plus $OUT/summary.txt (the device tool returns at most
# eight files).
#
# SETS picks what runs (default "moe"; each set builds first):
#   moe   the above (the H200 session's checks, 2026-11-26);
#   oss   GPT-OSS 120B at NVIDIA's H100 preset: its dense, output-layer and
#         expert GEMMs (one expert and 16 as a batch, fc1/fc2, dgrad,
#         wgrad; expert widths 2560..3072 beside 2880 for the alignment),
#         the attention probe with the head-dim-64 grid and FlexAttention's
#         windowed/full ratio, the MoE layer probe at its shape;
#   coll  `exec collective` with device buffers (the staged slices reduced
#         on the CPU, then on the GPU) and host buffers, 2 and 4 ranks;
#   grouped  the experts' GEMMs as Transformer Engine's GroupedLinear
#         issues them (`exec gemm --streams`): Qwen3-30B-A3B's 16 local
#         experts at EP 8 (2048 and 4096 rows each), GPT-OSS 120B's and
#         DeepSeek-V3's, bf16 and fp8, as one strided batch, over 1 and 4
#         streams, descriptors once and per call.
#   model  `exec gemm --model --pass all` for the MoE validation models'
#         layers, forward and backward (the experts as grouped GEMMs over
#         TE's 4 streams), bf16 and fp8.
#   sms   GEMMs aimed at all but K SMs (`exec gemm --reserve-sms K`, K =
#         0, 20, 33, 66: cuBLASLt's SM count target), as Transformer
#         Engine runs them beside communication kernels that take K SMs
#         (DeepEP: 20 of 132): GPT-3 175B's layer at TP 8 and
#         DeepSeek-V3's experts at EP 64, bf16 and fp8, and square bf16
#         GEMMs.  Each GEMM step is bounded by GLIM seconds (default 60).
#   load  GEMMs beside a communication-like load (`exec gemm --load-sms K
#         --load-rate R`: a copy kernel on K SMs moving R through HBM, as
#         a NCCL collective of K channels does beside the compute it
#         overlaps), K = 8, 16, 32 and R = 0 (SMs held), 200 GB/s (an
#         InfiniBand ring's traffic), 1 TB/s (NVLink's), max; then aimed
#         at the SMs the load leaves (--reserve-sms K too), as TE's
#         overlapped GEMMs are: GPT-3 175B's layer at TP 8 in bf16 and
#         fp8, a square bf16 GEMM, DeepSeek-V3's experts at EP 64.
#   check the headline GEMMs, membw and a 2-rank AllReduce (set_check).
#   ub    Transformer Engine's userbuffers TP overlap's GEMM pieces (set_ub).
#   load2 the same load flat out on K = 1, 2, 4, 8, 16, 32 SMs, and aimed
#         at the rest for 16 and 32, beside Llama 3 70B's layer at TP 4
#         (forward and backward) and 405B's at TP 8 (forward), bf16 and
#         fp8; the load-free baseline first and last.
# CTEST_ALL=0 skips the whole suite at the end.
#
# Usage: OUT=dir [SETS="oss coll"] tools/gpu-moe.sh
#        (ITERS: timed runs per GEMM, default 50)
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
OUT=${OUT:-$ROOT/gpu-check-out}
W=/tmp/gpu-moe
ITERS=${ITERS:-50}
rm -rf "$W"
mkdir -p "$W" "$OUT"
. tools/gpu-env.sh
T0=$(date +%s)
STEPS=()
# Every step ends by DEADLINE seconds after the start (default 450), so the
# archive is written inside the device call's limit; later steps are
# skipped and said so.
DEADLINE=${DEADLINE:-450}
step() { # step NAME SECONDS CMD...
    local name=$1 lim=$2 t0 rc left
    shift 2
    t0=$(date +%s)
    left=$(( DEADLINE - (t0 - T0) ))
    if [ "$left" -le 5 ]; then STEPS+=("$name skipped 0"); return; fi
    [ "$lim" -gt "$left" ] && lim=$left
    timeout "$lim" "$@" >"$W/$name.log" 2>&1
    rc=$?
    STEPS+=("$name $rc $(( $(date +%s) - t0 ))")
}
finish() {
    {
        echo "=== gpu-moe: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(( $(date +%s) - T0 )) s ==="
        printf '%s\n' "${STEPS[@]}"
    } >"$W/summary.txt"
    cp "$W/summary.txt" "$OUT/"
    tar czf "$OUT/results.tgz" -C /tmp gpu-moe
}
trap finish EXIT

step 00-machine 30 sh -c "nvidia-smi; nvidia-smi --query-gpu=name,compute_cap,clocks.max.sm,clocks.max.mem,power.limit --format=csv; nvcc --version | tail -2; nproc; lscpu | head -20"
B=$ROOT/build-gpu
P=$B/cli/podplan
step 10-configure 120 cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DPODPLAN_WITH_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc
step 11-build 240 cmake --build "$B" -j 16
step 12-ctest-cuda "${CLIM:-60}" sh -c "cd '$B' && ctest --output-on-failure -R 'test_exec_cuda' -V"
SETS=${SETS:-moe}
g() { local name=$1; shift; step "20-gemm-$name" "${GLIM:-60}" "$P" exec gemm --backend cuda --iters "$ITERS" --format json -o "$W/gemm-$name.json" "$@"; }
# experts NAME H F ROWS B DTYPE: an expert's five GEMMs for hidden H and
# expert width F (fc1 gate and up, 2F wide; fc2; fc1's dgrad; the two
# weight gradients, reducing over the expert's rows), ROWS a list, B
# experts as a batch: files gemm-NAME-{fc1,fc2,fc1dg,fc1wg,fc2wg}-bB-DTYPE.
experts() {
    local n=$1 h=$2 f=$3 rows=$4 b=$5 dt=$6
    g "$n-fc1-b$b-$dt" --dtype "$dt" --batch "$b" -m "$rows" -n $((2 * f)) -k "$h"
    g "$n-fc2-b$b-$dt" --dtype "$dt" --batch "$b" -m "$rows" -n "$h" -k "$f"
    g "$n-fc1dg-b$b-$dt" --dtype "$dt" --batch "$b" -m "$rows" -n "$h" -k $((2 * f))
    g "$n-fc1wg-b$b-$dt" --dtype "$dt" --batch "$b" -m $((2 * f)) -n "$h" -k "$rows"
    g "$n-fc2wg-b$b-$dt" --dtype "$dt" --batch "$b" -m "$h" -n "$f" -k "$rows"
}

# The STREAM kernels and a 2-rank AllReduce with device buffers.
membw_coll() {
    step 30-membw 90 "$P" exec membw --device cuda --kernel all --sizes 64MiB,256MiB,1GiB,4GiB \
        --format json -o "$W/membw-cuda.json"
    step 31-collective-cuda 60 "$P" exec collective --np 2 --device cuda -b 1M -e 256M -f 4 -n 10 \
        -J "$W/coll-cuda.json"
}

set_moe() {
    step 15-moe-torch 240 env -u LD_LIBRARY_PATH python3 tools/moe_layer_torch.py --iters 20 --out "$W/moe-torch.json"
    step 16-attn-torch 120 env -u LD_LIBRARY_PATH python3 tools/attn_torch.py --grid --iters 30 --out "$W/attn-torch.json"

    # GEMMs: GPT-3 175B's layer at TP 8 and the square sweep (the profile fit),
    # then the experts of the MoE cases: fc1 (gate and up, 2f wide), fc2, and
    # the weight gradients (reducing over the expert's tokens), m = the
    # expert's tokens.
    for dt in bf16 fp8; do
        g gpt3-tp8-$dt --dtype $dt --model gpt3-175b --parallel tp=8
        g square-$dt --dtype $dt --square 256:16384:x2
        # Qwen3-30B-A3B (h 2048, f 768) and Qwen3-235B-A22B (h 4096, f 1536).
        for b in 1 8; do
            experts q30 2048 768 512:8192:x2 $b $dt
            g q235-fc1-b$b-$dt --dtype $dt --batch $b -m 512:8192:x2 -n 3072 -k 4096
            g q235-fc2-b$b-$dt --dtype $dt --batch $b -m 512:8192:x2 -n 4096 -k 1536
        done
        # DeepSeek-V3 (h 7168, f 2048) and Mixtral 8x7B (h 4096, f 14336).
        g ds-fc1-$dt --dtype $dt -m 512:8192:x2 -n 4096 -k 7168
        g ds-fc2-$dt --dtype $dt -m 512:8192:x2 -n 7168 -k 2048
        g mix-fc1-$dt --dtype $dt -m 4096:16384:x2 -n 28672 -k 4096
    done
    membw_coll
}

set_oss() {
    local b dt
    step 40-oss-attn 150 env -u LD_LIBRARY_PATH python3 tools/attn_torch.py --grid --grid-dims 64,128 \
        --backends cudnn,flash2 --iters 20 --out "$W/attn-oss.json"
    step 42-oss-moe-torch 120 env -u LD_LIBRARY_PATH python3 tools/moe_layer_torch.py \
        --config gpt-oss-120b-ep8-mbs4 --iters 10 --out "$W/moe-oss.json"
    # Per GPU at tp 1, mbs 4 of 4096: 16384 tokens; 16 local experts of
    # 128 at ep 8, 4096 rows each (balanced, top-4).
    for dt in bf16 fp8; do
        g oss-qkv-$dt --dtype $dt -m 4096:16384:x2 -n 5120 -k 2880
        g oss-proj-$dt --dtype $dt -m 4096:16384:x2 -n 2880 -k 4096
        g oss-router-$dt --dtype $dt -m 4096:16384:x2 -n 128 -k 2880
        for b in 1 16; do
            experts oss 2880 2880 1024:4096:x2 $b $dt
        done
        g oss-align-n-$dt --dtype $dt --batch 16 -m 4096 -n 2560:3072:+64 -k 2880
        g oss-align-k-$dt --dtype $dt --batch 16 -m 4096 -n 2880 -k 2560:3072:+64
    done
    g oss-out-bf16 --dtype bf16 -m 4096,16384 -n 201088 -k 2880
    step 41-oss-flex 150 env -u LD_LIBRARY_PATH python3 tools/attn_torch.py --flex-window 128 \
        --iters 20 --out "$W/attn-flex.json"
}

set_coll() {
    local np
    for np in 2 4; do
        step 60-coll-cuda-np$np 60 "$P" exec collective --np $np --device cuda -b 1M -e 256M -f 4 -n 10 \
            -J "$W/coll-cuda-np$np.json"
        step 62-coll-cudared-np$np 60 "$P" exec collective --np $np --device cuda --reduce-on cuda \
            -b 1M -e 256M -f 4 -n 10 -J "$W/coll-cudared-np$np.json"
        step 61-coll-host-np$np 60 "$P" exec collective --np $np -b 1M -e 256M -f 4 -n 10 \
            -J "$W/coll-host-np$np.json"
    done
}

# grouped NAME ARGS...: one expert GEMM list as a strided batch, then
# issued as separate calls over 4 streams (descriptors once, per call)
# and over 1 stream: files gemm-NAME-{batch,s4,s4pc,s1}.json.
grouped() {
    local n=$1
    shift
    g "$n-batch" "$@"
    g "$n-s4" --streams 4 "$@"
    g "$n-s4pc" --streams 4 --setup per-call "$@"
    g "$n-s1" --streams 1 "$@"
}

set_grouped() {
    local dt
    for dt in fp8 bf16; do
        # Qwen3-30B-A3B: h 2048, f 768, 16 local experts at EP 8; 2048
        # rows each at mbs 1 (4096 tokens x top-8 / 16), 4096 at mbs 2.
        grouped q30-fc1-$dt --dtype $dt --batch 16 -m 2048,4096 -n 1536 -k 2048
        grouped q30-fc2-$dt --dtype $dt --batch 16 -m 2048,4096 -n 2048 -k 768
        grouped q30-fc1dg-$dt --dtype $dt --batch 16 -m 2048,4096 -n 2048 -k 1536
        grouped q30-fc1wg-$dt --dtype $dt --batch 16 -m 1536 -n 2048 -k 2048,4096
        grouped q30-fc2wg-$dt --dtype $dt --batch 16 -m 2048 -n 768 -k 2048,4096
        # GPT-OSS 120B at NVIDIA's H100 preset: 16 local experts, 4096 rows.
        grouped oss-fc1-$dt --dtype $dt --batch 16 -m 4096 -n 5760 -k 2880
        grouped oss-fc2-$dt --dtype $dt --batch 16 -m 4096 -n 2880 -k 2880
        # DeepSeek-V3 at EP 64: 4 local experts, 8192 rows each.
        grouped ds-fc1-$dt --dtype $dt --batch 4 -m 8192 -n 4096 -k 7168
        grouped ds-fc2-$dt --dtype $dt --batch 4 -m 8192 -n 7168 -k 2048
    done
    # One small GEMM alone: the host's cost of TE's per-call set-up.
    g one-s1-fp8 --dtype fp8 --streams 1 -m 256,1024 -n 1536 -k 2048
    g one-s1pc-fp8 --dtype fp8 --streams 1 --setup per-call -m 256,1024 -n 1536 -k 2048
}

set_model() {
    local dt
    for dt in bf16 fp8; do
        g model-q30-ep8-mbs1-$dt --dtype $dt --model qwen3-30b-a3b --parallel tp=1,dp=8,ep=8,mbs=1 --pass all
        g model-q30-ep8-mbs2-$dt --dtype $dt --model qwen3-30b-a3b --parallel tp=1,dp=8,ep=8,mbs=2 --pass all
        g model-oss-ep8-mbs4-$dt --dtype $dt --model gpt-oss-120b --parallel tp=1,dp=8,ep=8,mbs=4 --pass all
        g model-ds-ep64-$dt --dtype $dt --model deepseek-v3 --parallel tp=1,dp=64,ep=64,mbs=1 --pass all
    done
}

set_sms() {
    local k dt
    for k in 0 20 33 66; do
        for dt in bf16 fp8; do
            g sms$k-gpt3-tp8-$dt --reserve-sms $k --dtype $dt --model gpt3-175b --parallel tp=8
            g sms$k-ds-fc1-$dt --reserve-sms $k --dtype $dt --batch 4 -m 8192 -n 4096 -k 7168
            g sms$k-ds-fc2-$dt --reserve-sms $k --dtype $dt --batch 4 -m 8192 -n 7168 -k 2048
        done
        g sms$k-square-bf16 --reserve-sms $k --dtype bf16 --square 1024:16384:x2
    done
}

set_load() {
    local k r rn dt
    for dt in bf16 fp8; do
        g load0-gpt3-tp8-$dt --dtype $dt --model gpt3-175b --parallel tp=8
    done
    g load0-sq-bf16 --dtype bf16 --square 8192
    g load0-ds-fc1-bf16 --dtype bf16 --batch 4 -m 8192 -n 4096 -k 7168
    for k in 8 16 32; do
        for r in 0 200GB/s 1TB/s max; do
            rn=${r%%/s}
            for dt in bf16 fp8; do
                g load$k-$rn-gpt3-tp8-$dt --load-sms $k --load-rate $r --dtype $dt \
                    --model gpt3-175b --parallel tp=8
            done
            g load$k-$rn-sq-bf16 --load-sms $k --load-rate $r --dtype bf16 --square 8192
            g load$k-$rn-ds-fc1-bf16 --load-sms $k --load-rate $r --dtype bf16 \
                --batch 4 -m 8192 -n 4096 -k 7168
        done
    done
    for k in 16 32; do
        for r in 0 1TB/s; do
            rn=${r%%/s}
            for dt in bf16 fp8; do
                g loadres$k-$rn-gpt3-tp8-$dt --reserve-sms $k --load-sms $k --load-rate $r \
                    --dtype $dt --model gpt3-175b --parallel tp=8
            done
        done
    done
}

set_load2() {
    local k dt m
    for dt in bf16 fp8; do
        for m in "l70-tp4 llama3-70b tp=4 all" "l405-tp8 llama3-405b tp=8 fwd"; do
            set -- $m
            g load0-$1-$dt --dtype $dt --model $2 --parallel $3 --pass $4
            for k in 1 2 4 8 16 32; do
                g load$k-max-$1-$dt --load-sms $k --dtype $dt --model $2 --parallel $3 --pass $4
            done
            for k in 16 32; do
                g loadres$k-max-$1-$dt --reserve-sms $k --load-sms $k --dtype $dt \
                    --model $2 --parallel $3 --pass $4
            done
            g load00-$1-$dt --dtype $dt --model $2 --parallel $3 --pass $4
        done
    done
}

# check: the headline figures: GPT-3 175B's layer at TP 8 (bf16, fp8),
# the STREAM kernels, a 2-rank AllReduce with device buffers.
set_check() {
    local dt
    for dt in bf16 fp8; do
        g gpt3-tp8-$dt --dtype $dt --model gpt3-175b --parallel tp=8
    done
    membw_coll
}

# ub: Transformer Engine's userbuffers TP overlap as its GEMMs run, for
# Llama 3.1 405B at TP 8 (CP 2: 4096 rows gathered) and Llama 3 70B at TP 4
# (8192 rows), bf16 and fp8: each GEMM the overlap takes (qkv, fc1, proj,
# fc2 forward; proj and fc2 dgrad) whole, then as the ring exchange runs it
# (tp pieces of m / tp rows, separate calls over TE's 3 compute streams and
# over 1), and proj / fc2 as the bf16 pipeline runs them (4 pieces of m / 4
# rows, aimed at all but K SMs beside a K-SM copy load: Megatron-Bridge's
# userbuffers_bf16_h100_* num_sm, set_sm_margin=True).
ubg() { # ubg NAME TP M N K DTYPE [PIPE_SMS]
    local n=$1 tp=$2 m=$3 nn=$4 k=$5 dt=$6 ps=${7:-}
    g ub-$n-whole-$dt --dtype $dt -m $m -n $nn -k $k
    g ub-$n-ring3-$dt --dtype $dt --batch $tp --streams 3 -m $((m / tp)) -n $nn -k $k
    g ub-$n-ring1-$dt --dtype $dt --batch $tp --streams 1 -m $((m / tp)) -n $nn -k $k
    if [ -n "$ps" ]; then
        g ub-$n-pipe-$dt --dtype $dt -m $((m / 4)) -n $nn -k $k
        g ub-$n-pipeload-$dt --dtype $dt --reserve-sms $ps --load-sms $ps -m $((m / 4)) -n $nn -k $k
        g ub-$n-wholeload-$dt --dtype $dt --reserve-sms $ps --load-sms $ps -m $m -n $nn -k $k
    fi
}
set_ub() {
    local dt
    for dt in bf16 fp8; do
        ubg l405-qkv 8 4096 2304 16384 $dt
        ubg l405-fc1 8 4096 13312 16384 $dt
        ubg l405-proj 8 4096 16384 2048 $dt 24
        ubg l405-fc2 8 4096 16384 6656 $dt 8
        ubg l405-projdg 8 4096 2048 16384 $dt
        ubg l405-fc2dg 8 4096 6656 16384 $dt
        ubg l70-qkv 4 8192 2560 8192 $dt
        ubg l70-fc1 4 8192 14336 8192 $dt
        ubg l70-proj 4 8192 8192 2048 $dt 24
        ubg l70-fc2 4 8192 8192 7168 $dt 16
        ubg l70-projdg 4 8192 2048 8192 $dt
        ubg l70-fc2dg 4 8192 7168 8192 $dt
    done
}

for s in $SETS; do "set_$s"; done
[ "${CTEST_ALL:-1}" = 0 ] ||
    step 50-ctest-all 200 sh -c "cd '$B' && ctest -j 16 --output-on-failure"
