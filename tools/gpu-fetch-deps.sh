#!/bin/sh
# Fetches, on this (Debian) machine, the packages tools/gpu-env.sh unpacks
# on a GPU machine that has no network: into .gpudeps/ (git-ignored).
set -eu
cd "$(dirname "$0")/.."
mkdir -p .gpudeps
cd .gpudeps
apt-get download libyaml-0-2 libyaml-dev libigraph3 libigraph-dev libgsl27 \
    libgslcblas0 libgsl-dev libjansson4 libjansson-dev libcmocka0 libcmocka-dev \
    libarpack2 libglpk40 libplfit0 libamd2 libcolamd2 libsuitesparseconfig5 \
    libltdl7 libgfortran5 libblas3 liblapack3
