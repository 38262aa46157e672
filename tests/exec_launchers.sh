#!/bin/sh
# exec_launchers.sh: `podplan exec collective` started the ways README's
# "Running across nodes" says, on one host: under Open MPI's mpirun (MPI
# exchanges the addresses), under mpirun with MASTER_ADDR/MASTER_PORT (the
# TCP rendezvous), and with the environment srun and torchrun give each
# process (SLURM_* / RANK...), every process started by hand here as those
# launchers would.  Each run must finish with exit 0, name the launcher and
# the bootstrap it used, and check every value right (#wrong 0).  Two
# nodes cannot be had here; what differs across nodes is only the address
# each rank publishes (PODPLAN_EXEC_IFADDR), set here to loopback.
#
#   tests/exec_launchers.sh PODPLAN MPI_BUILT(0|1)
# Exit 77 (skipped) for a part whose launcher is missing is not used: the
# parts that need no launcher always run; the mpirun parts say why they
# were left out on stdout.
set -u
PODPLAN=$1
MPI_BUILT=${2:-0}
tmp=$(mktemp -d)
fails=0
trap 'rm -rf "$tmp"' EXIT

# A free TCP port for a rendezvous, different on each call.
port_base=$((20000 + $$ % 20000))
nport=0
next_port() { nport=$((nport + 1)); echo $((port_base + nport * 7)); }

ARGS="-b 8 -e 1M -f 32 -n 2 -w 1 -c 1 -T 20 --format json"

# check NAME FILE LAUNCHER BOOTSTRAP RANKS
check() {
  name=$1 f=$2 want_l=$3 want_b=$4 want_n=$5
  if ! jq -e --arg l "$want_l" --arg b "$want_b" --argjson n "$want_n" '
      .setup.launcher == $l and .setup.bootstrap == $b and .setup.ranks == $n
      and (.results | length) > 0
      and ([.results[] | .out_of_place.wrong, .in_place.wrong] | all(. == 0))
    ' "$f" > /dev/null 2>&1; then
    echo "FAIL $name: expected launcher $want_l, bootstrap $want_b, $want_n ranks, #wrong 0; got:"
    head -c 2000 "$f"
    fails=$((fails + 1))
  else
    echo "ok   $name ($want_n ranks, $want_l, $want_b)"
  fi
}

# by_hand NAME N VARS_FN: start N processes with the environment VARS_FN
# prints for rank i; rank 0's JSON to $tmp/NAME.json.
by_hand() {
  name=$1 n=$2 vars=$3 pids=""
  port=$(next_port)
  i=0
  while [ "$i" -lt "$n" ]; do
    out=/dev/null
    [ "$i" -eq 0 ] && out=$tmp/$name.json
    env $($vars "$i" "$n") MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      "$PODPLAN" exec collective $ARGS > "$out" 2> "$tmp/$name.$i.err" &
    pids="$pids $!"
    i=$((i + 1))
  done
  rc=0
  for p in $pids; do wait "$p" || rc=1; done
  if [ "$rc" -ne 0 ]; then
    echo "FAIL $name: a rank exited non-zero"
    cat "$tmp/$name".*.err
    fails=$((fails + 1))
    return
  fi
}
slurm_vars() { echo "SLURM_PROCID=$1 SLURM_NTASKS=$2 SLURM_LOCALID=$1"; }
torch_vars() { echo "RANK=$1 WORLD_SIZE=$2 LOCAL_RANK=$1"; }

by_hand srun 3 slurm_vars && check srun "$tmp/srun.json" srun rendezvous 3
by_hand torchrun 4 torch_vars && check torchrun "$tmp/torchrun.json" torchrun rendezvous 4

if ! command -v mpirun > /dev/null 2>&1; then
  echo "skip mpirun parts: no mpirun on PATH (Debian: openmpi-bin)"
else
  root=""
  [ "$(id -u)" -eq 0 ] && root=--allow-run-as-root
  MPIRUN="mpirun $root --oversubscribe -np 3"
  # Open MPI's own allocations (MPI_Init's, and those of MCA components it
  # unloads before exit, whose frames LeakSanitizer cannot name, so no
  # suppression matches them) read as leaks in the sanitizer build: leak
  # checking is off for the processes mpirun starts.  The same exec code
  # runs above, started by hand, with it on.
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  export ASAN_OPTIONS
  if [ "$MPI_BUILT" = 1 ]; then
    # shellcheck disable=SC2086
    $MPIRUN "$PODPLAN" exec collective $ARGS > "$tmp/mpi.json" 2> "$tmp/mpi.err" ||
      { echo "FAIL mpirun: exit non-zero"; cat "$tmp/mpi.err"; fails=$((fails + 1)); }
    check mpirun "$tmp/mpi.json" mpirun mpi 3
  else
    echo "skip mpirun with MPI bootstrap: podplan built without MPI"
  fi
  port=$(next_port)
  # shellcheck disable=SC2086
  $MPIRUN -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=$port \
    "$PODPLAN" exec collective $ARGS > "$tmp/mpirdv.json" 2> "$tmp/mpirdv.err" ||
    { echo "FAIL mpirun + rendezvous: exit non-zero"; cat "$tmp/mpirdv.err"; fails=$((fails + 1)); }
  check "mpirun + MASTER_ADDR" "$tmp/mpirdv.json" mpirun rendezvous 3
fi
[ "$fails" -eq 0 ] || { echo "$fails launcher check(s) failed"; exit 1; }
