# Sourced on a lent GPU machine (no network, no -dev packages for libyaml,
# igraph, GSL, jansson, cmocka) before building podplan there.  The Debian
# packages travel in .gpudeps/ (fetched here with `apt-get download`, see
# tools/gpu-fetch-deps.sh); they are unpacked into a private root, never
# into /, and pkg-config and the loaders are pointed at it.
GPUDEPS_ROOT=${GPUDEPS_ROOT:-/tmp/gpudeps}
if [ -d .gpudeps ] && [ ! -d "$GPUDEPS_ROOT/usr" ]; then
    mkdir -p "$GPUDEPS_ROOT"
    for f in .gpudeps/*.deb; do dpkg -x "$f" "$GPUDEPS_ROOT"; done
    for pc in "$GPUDEPS_ROOT"/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc; do
        sed -i "s|^prefix=/usr|prefix=$GPUDEPS_ROOT/usr|" "$pc"
    done
fi
_lib=$GPUDEPS_ROOT/usr/lib/x86_64-linux-gnu
export PKG_CONFIG_PATH=$_lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export LD_LIBRARY_PATH=$_lib:$_lib/blas:$_lib/lapack${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LIBRARY_PATH=$_lib${LIBRARY_PATH:+:$LIBRARY_PATH}
export CPATH=$GPUDEPS_ROOT/usr/include${CPATH:+:$CPATH}
export PATH=/usr/local/cuda/bin:$PATH
unset _lib
