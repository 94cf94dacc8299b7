#!/bin/sh
# Build the newest upstream ovn-northd (with ovn-nbctl, ovn-sbctl and its schemas) from
# source, with the OVS tree its release pins as a submodule, for the northd benchmarks:
# it runs on its own schemas on the real ovsdb-server.
#
#   bench/build_upstream_ovn.sh [TAG]        # default: the newest vX.Y.Z tag
#
# Environment:
#   OVN_GIT  where to clone OVN from (default https://github.com/ovn-org/ovn.git; a
#            local clone or bare mirror works too)
#   OVS_GIT  where to clone OVS from (default https://github.com/openvswitch/ovs.git)
#   DEST     where to build (default ${XDG_CACHE_HOME:-$HOME/.cache}/pyovsdb/ovn-TAG)
#   JOBS     make -j (default: the number of CPUs)
#
# Needs a C toolchain, autoconf, automake, libtool, pkg-config and python3. Prints the
# directory holding northd/ovn-northd, utilities/ovn-nbctl, utilities/ovn-sbctl and the
# schemas (ovn-nb.ovsschema, ovn-sb.ovsschema) on its last line; a second run with the
# same TAG and DEST reuses the build.
set -eu

# Automake makes BUILT_SOURCES (generated headers) only for `all`: for the few targets
# built here, make them first.
built_sources() {
    printf 'pyovsdb-built-sources: $(BUILT_SOURCES)\n' \
        | make -s -j"$JOBS" -f Makefile -f - pyovsdb-built-sources
}

OVN_GIT=${OVN_GIT:-https://github.com/ovn-org/ovn.git}
OVS_GIT=${OVS_GIT:-https://github.com/openvswitch/ovs.git}
JOBS=${JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}

TAG=${1:-}
if [ -z "$TAG" ]; then
    TAG=$(git ls-remote --tags --refs "$OVN_GIT" 'v*' \
          | sed -n 's#.*refs/tags/\(v[0-9]*\.[0-9]*\.[0-9]*\)$#\1#p' | sort -V | tail -1)
    [ -n "$TAG" ] || { echo "$0: no release tag found in $OVN_GIT" >&2; exit 1; }
fi
DEST=${DEST:-${XDG_CACHE_HOME:-$HOME/.cache}/pyovsdb/ovn-$TAG}
SRC=$DEST/src

if [ -x "$SRC/northd/ovn-northd" ] && [ -x "$SRC/utilities/ovn-nbctl" ] \
        && [ -x "$SRC/utilities/ovn-sbctl" ]; then
    echo "$SRC"
    exit 0
fi

mkdir -p "$DEST"
if [ ! -d "$SRC/.git" ]; then
    git clone -q --branch "$TAG" --depth 1 "$OVN_GIT" "$SRC"
fi
OVS_COMMIT=$(git -C "$SRC" ls-tree HEAD ovs | awk '{print $3}')
[ -n "$OVS_COMMIT" ] || { echo "$0: $TAG pins no ovs submodule" >&2; exit 1; }
if [ ! -d "$SRC/ovs/.git" ]; then
    rm -rf "$SRC/ovs"
    git clone -q --no-checkout "$OVS_GIT" "$SRC/ovs"
fi
git -C "$SRC/ovs" -c advice.detachedHead=false checkout -q "$OVS_COMMIT"

cd "$SRC/ovs"
[ -x configure ] || ./boot.sh
[ -f Makefile ] || ./configure --quiet --enable-silent-rules --disable-ssl
built_sources
make -s -j"$JOBS" lib/libopenvswitch.la ovsdb/libovsdb.la vswitchd/vswitch.ovsschema

cd "$SRC"
[ -x configure ] || ./boot.sh
[ -f Makefile ] || ./configure --quiet --enable-silent-rules --disable-ssl \
    --with-ovs-source="$SRC/ovs"
built_sources
make -s -j"$JOBS" northd/ovn-northd utilities/ovn-nbctl utilities/ovn-sbctl \
    ovn-nb.ovsschema ovn-sb.ovsschema
echo "$SRC"
