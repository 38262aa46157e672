#!/usr/bin/env bash
# run.sh BUILD [--only ID]... [--split tune|holdout|info] [-o FILE] [--check]
# run.sh --list
#
# Runs podplan on every case of tests/validation/published.yaml and prints,
# per case, the published figure, podplan's figure and the error
# (simulated - published) / published, then mean and max |error| for the
# tuning points and for the held-out points separately (split=info cases
# are printed but kept out of both).  A case podplan cannot run yet (an
# unknown key, option, model or cluster on this build) is reported as
# "not runnable: <first line of podplan's stderr>" and does not stop the
# others.
#
#   BUILD        build folder: its cli/podplan (or podplan) is used
#   --only ID    run only this case (repeatable)
#   --split S    run only the cases of that split
#   -o FILE      also write one tab-separated line per case to FILE:
#                id split metric published simulated error_pct status
#   --check      exit 1 unless every tuned and held-out case ran, the mean
#                |error| of each set is <= 5% and every |error| <= 10%
#                (issue 15's acceptance targets)
#   --list       check the cases file and list its cases; runs nothing
#                (exit 2, naming file:line, case and key, if it is malformed)
#
# A case's run: block may add memory_check: "off" (simulate --memory-check
# off), extrapolate: "G1 G2" (simulate at those global batches and
# extend the line through the two iteration times to the case's gbs) and
# placement: tp,pp,dp or tp,dp,pp (simulate --placement: the run's rank
# order where the source gives it) and dp_overlap: "on" or "off"
# (simulate --dp-overlap: where the source's configuration sets
# overlap_grad_reduce against the stack's default) and tp_overlap: "on"
# or "off" (simulate --tp-overlap: where it sets TP_COMM_OVERLAP against
# the stack's) and optimizer: NAME
# (simulate --optimizer: the run's optimizer where its recipe sets one).
#
# Environment: PP_VALIDATION_TIMEOUT seconds per case (default 900);
# PP_VALIDATION_CASES another cases file (default: published.yaml here);
# PP_VALIDATION_KEEP a directory that gets each case's podplan JSON as
# ID.json (its breakdown: where a case's time goes).
# Needs jq (tools/deps.sh installs it) and awk.
set -u

usage() {
    sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

[ $# -ge 1 ] || usage
list=0
build=""
if [ "$1" = --list ]; then list=1; else build=$1; fi
shift
only=()
want_split=""
out=""
check=0
while [ $# -gt 0 ]; do
    case $1 in
    --only) [ $# -ge 2 ] || usage; only+=("$2"); shift 2 ;;
    --split) [ $# -ge 2 ] || usage; want_split=$2; shift 2 ;;
    -o) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
    --check) check=1; shift ;;
    -h | --help) usage ;;
    *) echo "run.sh: unknown argument '$1'" >&2; usage ;;
    esac
done

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cases=${PP_VALIDATION_CASES:-$here/published.yaml}
[ -r "$cases" ] || { echo "run.sh: cannot read $cases" >&2; exit 2; }

# One line per case, fields separated by \037 (not whitespace, so empty
# fields survive `read`): the line of its "- id:", then the scalar keys of
# its `run:` block.
fields="kind model cluster set parallel stack op algo bytes gpus gbs seq metric published memory_check extrapolate placement dp_overlap tp_overlap optimizer"
table=$(awk -v fields="$fields" '
function flush(   n, f, i, line) {
    if (id == "") return
    n = split(fields, f, " ")
    line = id "\037" sp "\037" idline
    for (i = 1; i <= n; i++) line = line "\037" kv[f[i]]
    print line
    id = ""; sp = ""; split("", kv)
}
/^  - id: / { flush(); id = $3; idline = NR; inrun = 0; next }
/^    split: / { sp = $2; next }
/^    run:[ \t]*$/ { inrun = 1; next }
inrun && /^[ \t]*$/ { next }
inrun && /^      [a-z_]+: / {
    key = $1; sub(/:$/, "", key)
    val = $0; sub(/^      [a-z_]+: /, "", val); sub(/[ \t]+$/, "", val)
    if (val ~ /^".*"$/) val = substr(val, 2, length(val) - 2)
    kv[key] = val; next
}
inrun && !/^      / { inrun = 0 }
END { flush() }
' "$cases")
[ -n "$table" ] || { echo "run.sh: $cases: no cases (expected \"  - id: NAME\" entries)" >&2; exit 2; }

# Every case must carry what a run needs; report all problems at once.
bad=0
seen=" "
isnum() { case $1 in "" | *[!0-9.eE+-]*) return 1 ;; *) return 0 ;; esac; }
complain() { echo "$cases:$line: case $id: $1" >&2; bad=1; }
while IFS=$'\037' read -r id split line kind model cluster set parallel stack \
    op algo bytes gpus gbs seq metric published memory_check extrapolate \
    placement dp_overlap tp_overlap optimizer; do
    case $seen in *" $id "*) complain "id: duplicate" ;; esac
    seen="$seen$id "
    case $split in tune | holdout | info) ;;
    *) complain "split: expected tune, holdout or info, got '$split'" ;; esac
    isnum "$published" || complain "run.published: expected a number, got '$published'"
    case $kind in
    simulate)
        [ -n "$model" ] || complain "run.model: missing"
        [ -n "$cluster" ] || complain "run.cluster: missing"
        [ -n "$parallel" ] || complain "run.parallel: missing"
        case $metric in
        tokens_per_s_per_gpu)
            isnum "$gbs" || complain "run.gbs: expected a number for $metric, got '$gbs'"
            isnum "$seq" || complain "run.seq: expected a number for $metric, got '$seq'" ;;
        model_tflops_per_gpu | iteration_time_s) ;;
        *) complain "run.metric: expected tokens_per_s_per_gpu, model_tflops_per_gpu or iteration_time_s, got '$metric'" ;;
        esac ;;
    collective)
        [ -n "$cluster" ] || complain "run.cluster: missing"
        isnum "$gpus" || complain "run.gpus: expected a number, got '$gpus'"
        [ -n "$bytes" ] || complain "run.bytes: missing"
        [ "$metric" = busbw_GBps ] || complain "run.metric: expected busbw_GBps, got '$metric'" ;;
    *) complain "run.kind: expected simulate or collective, got '$kind'" ;;
    esac
    case $memory_check in "" | on | off) ;;
    *) complain "run.memory_check: expected on or off, got '$memory_check'" ;; esac
    case $dp_overlap in "" | on | off) ;;
    *) complain "run.dp_overlap: expected on or off, got '$dp_overlap'" ;; esac
    case $tp_overlap in "" | on | off) ;;
    *) complain "run.tp_overlap: expected on or off, got '$tp_overlap'" ;; esac
    case $optimizer in "" | adam-mixed | adam-fp32 | adam-bf16-moments) ;;
    *) complain "run.optimizer: expected adam-mixed, adam-fp32 or adam-bf16-moments, got '$optimizer'" ;; esac
    case $placement in "" | tp,pp,dp | tp,dp,pp) ;;
    *) complain "run.placement: expected tp,pp,dp or tp,dp,pp, got '$placement'" ;; esac
    if [ -n "$extrapolate" ]; then
        set -- $extrapolate
        if [ $# -ne 2 ] || ! isnum "$1" || ! isnum "$2" || [ "$1" = "$2" ]; then
            complain "run.extrapolate: expected two different global batch sizes, got '$extrapolate'"
        elif [ "$kind" != simulate ] || [ "$metric" != tokens_per_s_per_gpu ]; then
            complain "run.extrapolate: only for simulate cases measured in tokens_per_s_per_gpu"
        fi
    fi
done <<<"$table"
[ $bad = 0 ] || exit 2
if [ $list = 1 ]; then
    while IFS=$'\037' read -r id split line kind _ _ _ _ _ _ _ _ _ _ _ metric published _ _; do
        printf '%-40s %-7s %-10s %-21s %s\n' "$id" "$split" "$kind" "$metric" "$published"
    done <<<"$table"
    exit 0
fi

case $build in /*) ;; *) build=$(pwd)/$build ;; esac
podplan=""
for p in "$build/cli/podplan" "$build/podplan"; do
    [ -x "$p" ] && { podplan=$p; break; }
done
[ -n "$podplan" ] || { echo "run.sh: no podplan under $build (cli/podplan or podplan)" >&2; exit 2; }
command -v jq >/dev/null 2>&1 || { echo "run.sh: jq is needed (tools/deps.sh)" >&2; exit 2; }
timeout_s=${PP_VALIDATION_TIMEOUT:-900}

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
[ -n "$out" ] && : >"$out"

printf '%-40s %-7s %-21s %11s %11s %8s\n' case split metric published podplan error
printf '%-40s %-7s %-21s %11s %11s %8s\n' "----" "-----" "------" "---------" "-------" "-----"

results=$tmp/results # split \t abs_err, one line per case that ran
: >"$results"
notrun=$tmp/notrun # split, one line per scored case that did not run
: >"$notrun"

while IFS=$'\037' read -r id split _ kind model cluster set parallel stack op \
    algo bytes gpus gbs seq metric published memory_check extrapolate \
    placement dp_overlap tp_overlap optimizer; do
    if [ ${#only[@]} -gt 0 ]; then
        keep=0
        for o in "${only[@]}"; do [ "$o" = "$id" ] && keep=1; done
        [ $keep = 1 ] || continue
    fi
    [ -n "$want_split" ] && [ "$want_split" != "$split" ] && continue

    args=()
    case $kind in
    simulate)
        args=(simulate --model "$model" --cluster "$cluster" --parallel "$parallel")
        [ -n "$stack" ] && args+=(--stack "$stack")
        [ -n "$memory_check" ] && args+=(--memory-check "$memory_check")
        [ -n "$placement" ] && args+=(--placement "$placement")
        [ -n "$dp_overlap" ] && args+=(--dp-overlap "$dp_overlap")
        [ -n "$tp_overlap" ] && args+=(--tp-overlap "$tp_overlap")
        [ -n "$optimizer" ] && args+=(--optimizer "$optimizer")
        ;;
    collective)
        args=(collective --cluster "$cluster" --gpus "$gpus" --bytes "$bytes")
        [ -n "$op" ] && args+=(--op "$op")
        [ -n "$algo" ] && args+=(--algo "$algo")
        ;;
    *)
        echo "run.sh: case $id: unknown kind '$kind'" >&2
        exit 2
        ;;
    esac
    # `set:` holds one or more PATH=VALUE, separated by spaces: one --set
    # each (read -a splits without globbing).
    read -r -a kvs <<< "$set"
    for kv in "${kvs[@]}"; do args+=(--set "$kv"); done
    args+=(--format json)

    # Data files (models/zoo, topologies) are found from the repository
    # root; stdin is /dev/null so podplan cannot eat the case table.
    run_podplan() {
        (cd "$root" && PODPLAN_DATA_DIR=$root timeout "$timeout_s" "$podplan" "$@") \
            </dev/null >"$tmp/out.json" 2>"$tmp/err"
    }
    status=ok
    sim=""
    note=""
    if [ -n "$extrapolate" ]; then
        # The published batch is too many micro-batches to simulate here
        # (a MoE iteration at flow fidelity): simulate two smaller global
        # batches and extend the line through them.  Past pp micro-batches
        # a 1F1B step grows by one micro-batch's time per micro-batch.
        set -- $extrapolate
        g1=$1 g2=$2 t1="" t2=""
        for g in "$g1" "$g2"; do
            p2=$(printf '%s\n' "$parallel" | sed "s/gbs=[0-9]*/gbs=$g/")
            a2=()
            for x in "${args[@]}"; do
                [ "$x" = "$parallel" ] && x=$p2
                a2+=("$x")
            done
            run_podplan "${a2[@]}"
            rc=$?
            [ $rc -ne 0 ] && break
            t=$(jq -r '.iteration_time_s' "$tmp/out.json" 2>/dev/null)
            if [ "$g" = "$g1" ]; then t1=$t; else t2=$t; fi
        done
        if [ $rc -eq 0 ]; then
            t=$(awk -v a="$t1" -v b="$t2" -v g1="$g1" -v g2="$g2" -v g="$gbs" \
                'BEGIN { printf "%.9g", a + (g - g1) * (b - a) / (g2 - g1) }')
            jq --argjson t "$t" '.iteration_time_s = $t' "$tmp/out.json" \
                >"$tmp/x.json" && mv "$tmp/x.json" "$tmp/out.json"
            note="extrapolated to gbs $gbs from gbs $g1 ($t1 s) and $g2 ($t2 s): $t s"
        fi
    else
        run_podplan "${args[@]}"
        rc=$?
    fi
    if [ $rc -eq 124 ]; then
        status="not runnable: timed out after ${timeout_s} s"
    elif [ $rc -ne 0 ]; then
        status="not runnable: $(grep -m1 . "$tmp/err" || echo "exit status $rc")"
    else
        case $metric in
        tokens_per_s_per_gpu)
            jqexpr="$gbs * $seq / (.iteration_time_s * .gpus)" ;;
        model_tflops_per_gpu)
            jqexpr=".model_flops_per_iteration / (.iteration_time_s * .gpus) / 1e12" ;;
        iteration_time_s) jqexpr=".iteration_time_s" ;;
        busbw_GBps) jqexpr=".busbw_GBps" ;;
        *) echo "run.sh: case $id: unknown metric '$metric'" >&2; exit 2 ;;
        esac
        sim=$(jq -r "$jqexpr" "$tmp/out.json" 2>/dev/null)
        case $sim in
        "" | null | *[!0-9.eE+-]*)
            status="not runnable: podplan's JSON lacks what $metric needs"
            sim="" ;;
        esac
    fi

    if [ "$status" = ok ] && [ -n "${PP_VALIDATION_KEEP:-}" ]; then
        mkdir -p "$PP_VALIDATION_KEEP" && cp "$tmp/out.json" "$PP_VALIDATION_KEEP/$id.json"
    fi
    if [ "$status" = ok ]; then
        err=$(awk -v s="$sim" -v p="$published" 'BEGIN { printf "%.1f", (s - p) / p * 100 }')
        absv=${err#-}
        printf '%-40s %-7s %-21s %11.1f %11.1f %7s%%\n' "$id" "$split" "$metric" \
            "$published" "$sim" "$err"
        [ -n "$note" ] && printf '    %s\n' "$note"
        printf '%s\t%s\n' "$split" "$absv" >>"$results"
    else
        printf '%-40s %-7s %-21s %11.1f %11s %8s\n' "$id" "$split" "$metric" \
            "$published" "-" "-"
        printf '    %s\n' "$status"
        echo "$split" >>"$notrun"
        err=""
    fi
    [ -n "$out" ] && printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$split" \
        "$metric" "$published" "$sim" "$err" "$status" >>"$out"
done <<<"$table"

echo
fail=0
for s in tune holdout; do
    awk -F'\t' -v s="$s" -v nr="$(grep -cx "$s" "$notrun")" '
    $1 == s { n++; t += $2; if ($2 > m) m = $2 }
    END {
        label = (s == "tune") ? "tuned points   " : "held-out points"
        if (n) printf "%s: %d run, %d not runnable, mean |error| %.1f%%, max |error| %.1f%%\n", label, n, nr, t / n, m
        else printf "%s: 0 run, %d not runnable\n", label, nr
        exit (n == 0 || nr > 0 || t / n > 5 || m > 10) ? 1 : 0
    }' "$results" || fail=1
done
ninfo=$(grep -c '^info' "$results")
echo "info points (not in the means): $ninfo run, $(grep -cx info "$notrun") not runnable"
echo "targets (issue 15): mean |error| <= 5%, each <= 10%"
if [ $check = 1 ]; then exit $fail; fi
exit 0
