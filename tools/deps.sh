#!/bin/sh
# Installs the Debian packages podplan needs to build and test, if missing.
# As root: apt-get update && apt-get install.  Otherwise: prints the exact
# command to run and fails, so `make` stops before a confusing build error.
set -eu

PACKAGES="gcc make cmake pkg-config libyaml-dev libigraph-dev libgsl-dev \
libcmocka-dev libjansson-dev graphviz gnuplot-nox jq \
libopenblas-dev libibverbs-dev ibverbs-providers openmpi-bin libopenmpi-dev"

# Test-only tools, best effort: the HTML report test opens podplan whatif's
# page in Debian's headless chromium (tests/whatif_report.sh, which skips
# with a message when it is absent).  A failed install does not stop make.
TEST_PACKAGES="chromium"
if [ "$(id -u)" -eq 0 ] && ! command -v chromium >/dev/null 2>&1; then
    echo "podplan: installing test tools: $TEST_PACKAGES"
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        $TEST_PACKAGES >/dev/null 2>&1 ||
        { apt-get update -qq >/dev/null 2>&1 &&
          DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
              --no-install-recommends $TEST_PACKAGES >/dev/null 2>&1; } ||
        echo "podplan: could not install $TEST_PACKAGES; the report test will skip" >&2
fi

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

cmd="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" -eq 0 ]; then
    echo "podplan: installing missing Debian packages:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing
else
    echo "podplan: missing Debian packages:$missing" >&2
    echo "run as root:  apt-get update && $cmd" >&2
    exit 1
fi
