#!/bin/sh
# run.sh PODPLAN CASE.cmd [--update]: one golden transcript.
#
# CASE.cmd holds a command line exactly as README.md shows it after "$ "
# (pipes, loops and line continuations included); it is run by sh in an
# empty temporary folder with `podplan` bound to the binary under test, and
# what it prints, stdout and stderr together as a terminal shows them, must
# equal CASE.out.  Wall-clock figures (plan's "search 0.015 s, ... per
# second" and "(1.83 s)") and the folder data files were found in (a
# profile's "(/path/to/topologies/profiles/a100.yaml)" reads
# "(.../topologies/profiles/a100.yaml)") are the only things normalised.  --update
# rewrites CASE.out from the current build.
set -u
bin=$1
cmd=$2
out=${cmd%.cmd}.out
case $cmd in /*) ;; *) cmd=$(pwd)/$cmd ;; esac
case $out in /*) ;; *) out=$(pwd)/$out ;; esac
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
podplan() { "$bin" "$@"; }
( cd "$tmp" && . "$cmd" ) > "$tmp/raw" 2>&1
sed -e 's/ (search [0-9.]* s, [0-9]* per second)//' \
    -e 's/ succeeded ([0-9.]* s)/ succeeded/' \
    -e 's|(/[^ ]*/topologies/|(.../topologies/|' "$tmp/raw" > "$tmp/actual"
if [ "${3:-}" = "--update" ]; then
    cp "$tmp/actual" "$out"
    exit 0
fi
if ! diff -u "$out" "$tmp/actual"; then
    echo "golden: $(basename "$cmd") differs from $(basename "$out") (see the diff above; run.sh ... --update regenerates it)"
    exit 1
fi
