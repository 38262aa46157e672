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
        sed -i -e "s|^prefix=/usr|prefix=$GPUDEPS_ROOT/usr|" \
               -e "s|^exec_prefix=/usr|exec_prefix=$GPUDEPS_ROOT/usr|" "$pc"
    done
    # igraph.pc names libxml-2.0 for static links only; the machine has the
    # shared libxml2 but not its .pc, so stand in an empty one.
    _pc=$GPUDEPS_ROOT/usr/lib/x86_64-linux-gnu/pkgconfig
    [ -f "$_pc/libxml-2.0.pc" ] || [ -f /usr/lib/x86_64-linux-gnu/pkgconfig/libxml-2.0.pc ] ||
        printf 'Name: libxml-2.0\nDescription: stand-in\nVersion: 2.9\n' > "$_pc/libxml-2.0.pc"
fi
_lib=$GPUDEPS_ROOT/usr/lib/x86_64-linux-gnu
export PKG_CONFIG_PATH=$_lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export LD_LIBRARY_PATH=$_lib:$_lib/blas:$_lib/lapack${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export CMAKE_PREFIX_PATH=$GPUDEPS_ROOT/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
export PATH=/usr/local/cuda/bin:$PATH
unset _lib
