#!/bin/sh
# install_test.sh BUILD_DIR: `cmake --install` into a temporary prefix,
# move the tree elsewhere, and run the installed podplan from outside the
# source tree with PODPLAN_DATA_DIR unset and the compiled-in source folder
# disabled (PODPLAN_NO_SOURCE_DIR=1): it must find its models, clusters and
# profiles next to itself.  Then remove the installed data and check that
# the same command fails, so the pass was the install's doing.
set -eu
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/first" > "$tmp/install.log"
mv "$tmp/first" "$tmp/moved"
p=$tmp/moved
for f in bin/podplan include/podplan/common.h include/podplan/traffic.h \
         share/podplan/models/zoo/gpt3-175b.yaml \
         share/podplan/topologies/titan.yaml \
         share/podplan/topologies/hardware.yaml \
         share/podplan/topologies/profiles/a100.yaml \
         share/podplan/topologies/examples/flows.yaml \
         share/podplan/studies/nic-count.yaml; do
    [ -e "$p/$f" ] || { echo "install_test: $f not installed"; exit 1; }
done
ls "$p"/lib*/libpodplan_sim_train.a "$p"/lib*/libpodplan_exec.a > /dev/null
cd "$tmp"
run() {
    env -u PODPLAN_DATA_DIR PODPLAN_NO_SOURCE_DIR=1 "$p/bin/podplan" "$@"
}
run plan --model gpt3-175b --cluster titan --gpus 64 --global-batch 64 --top 1 \
    --no-timing > plan.txt
grep -q '^best: ' plan.txt || { echo "install_test: no plan"; cat plan.txt; exit 1; }
run simulate --model gpt3-175b --cluster titan --parallel tp=8,pp=8,dp=1,gbs=8 \
    --fidelity analytic > sim.txt 2> /dev/null
grep -q 'topologies/profiles/a100.yaml' sim.txt
run list clusters | grep -q '^titan '
rm -rf "$p/share/podplan"
if run flops --model gpt3-175b --global-batch 8 > /dev/null 2>&1; then
    echo "install_test: found gpt3-175b without the installed data"
    exit 1
fi
echo "install_test: ok"
