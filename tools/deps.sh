#!/bin/sh
# Installs the Debian packages podplan needs to build and test, if missing.
# As root: apt-get update && apt-get install.  Otherwise: prints the exact
# command to run and fails, so `make` stops before a confusing build error.
set -eu

PACKAGES="gcc make cmake pkg-config libyaml-dev libigraph-dev libgsl-dev \
libcmocka-dev libjansson-dev graphviz gnuplot-nox jq \
libopenblas-dev libibverbs-dev ibverbs-providers openmpi-bin libopenmpi-dev"

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
