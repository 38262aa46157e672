#!/bin/sh
# check_cases.sh: published.yaml parses and is complete (run.sh --list exits
# 0), and every file in bad/ is refused with exit status 2 and a message
# naming the file, line and case.  Runs no simulation.
here=$(cd "$(dirname "$0")" && pwd)
fail=0
if ! "$here/run.sh" --list >/dev/null; then
    echo "FAIL: published.yaml: run.sh --list refused it" >&2
    fail=1
fi
for f in "$here"/bad/*.yaml; do
    err=$(PP_VALIDATION_CASES=$f "$here/run.sh" --list 2>&1 >/dev/null)
    rc=$?
    if [ $rc -ne 2 ]; then
        echo "FAIL: $f: expected exit status 2, got $rc" >&2
        fail=1
    elif ! printf '%s\n' "$err" | grep -q "^run.sh: $f\|^$f:[0-9]*: case "; then
        echo "FAIL: $f: message does not name the file (and case): $err" >&2
        fail=1
    else
        echo "ok: $(basename "$f"): $(printf '%s\n' "$err" | head -1)"
    fi
done
exit $fail
