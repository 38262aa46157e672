#!/bin/sh
# podplan whatif under `mpirun -np 3` writes the same bytes as a serial
# run (rank k runs variants k, k+3, ...; rank 0 gathers and writes).
# Skips (77) when mpirun is missing or the binary was built without MPI.
bin=$1 src=$2
command -v mpirun >/dev/null 2>&1 || { echo "skipped: mpirun not installed (apt-get install openmpi-bin)"; exit 77; }
# Open MPI's own allocations (MPI_Init's, and those of MCA components it
# unloads before exit, whose frames LeakSanitizer cannot name, so no
# suppression matches them) read as leaks in the sanitizer build: leak
# checking is off for the MPI ranks only.  The same whatif code runs
# serially first, with it on.
mpi_asan="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
ldd "$bin" 2>/dev/null | grep -q libmpi || { echo "skipped: podplan built without MPI (PODPLAN_WITH_MPI=OFF)"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
study=$src/studies/ethernet-vs-infiniband.yaml
root=""
[ "$(id -u)" = 0 ] && root=--allow-run-as-root
for fmt in json table; do
  "$bin" whatif --study "$study" --format $fmt -o "$tmp/serial.$fmt" || exit 1
  ASAN_OPTIONS=$mpi_asan mpirun -np 3 --oversubscribe $root "$bin" whatif --study "$study" --format $fmt \
    -o "$tmp/mpi.$fmt" >"$tmp/mpirun.log" 2>&1 || { cat "$tmp/mpirun.log"; exit 1; }
  cmp "$tmp/serial.$fmt" "$tmp/mpi.$fmt" || { echo "FAIL: $fmt differs under mpirun -np 3"; diff "$tmp/serial.$fmt" "$tmp/mpi.$fmt" | head; exit 1; }
done
echo "mpirun -np 3: byte-identical to serial (json, table)"
