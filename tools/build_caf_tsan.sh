#!/usr/bin/env bash
# Builds CAF 0.17.6 (Debian's source) with ThreadSanitizer into a prefix and
# prints the prefix. Debian's libcaf is not instrumented, so TSan cannot see
# the synchronisation inside CAF's mailboxes and reports false races on data
# handed over by message; against this build it does not.
# Idempotent: an existing build in the prefix is reused (a build takes 2.5 min on 2 cores).
# Usage: tools/build_caf_tsan.sh [PREFIX]   (default: $RILL_CACHE_DIR or ~/.cache/rill)
set -euo pipefail
version=0.17.6
cache=${RILL_CACHE_DIR:-$HOME/.cache/rill}
prefix=${1:-$cache/caf-$version-tsan}
if [[ -f "$prefix/lib/libcaf_core.so" && -f "$prefix/.rill-complete" ]]; then
  echo "$prefix"
  exit 0
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A deb-src entry next to the machine's deb entries, so apt-get source works.
if ! grep -rqs "deb-src" /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null; then
  if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
    sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
      $SUDO tee /etc/apt/sources.list.d/rill-deb-src.sources >/dev/null
  else
    sed -n 's/^deb /deb-src /p' /etc/apt/sources.list | $SUDO tee /etc/apt/sources.list.d/rill-deb-src.list >/dev/null
  fi
  $SUDO apt-get update -qq >&2
fi
# The .debian.tar.xz may be missing from the mirror (apt then exits non-zero);
# the orig tarball is all that is needed, so check for it instead.
(cd "$work" && apt-get source --download-only actor-framework >&2 || true)
tarball=$(ls "$work"/actor-framework_${version}*.orig.tar.gz 2>/dev/null | head -1)
if [[ -z "$tarball" ]]; then
  echo "build_caf_tsan.sh: could not download the CAF $version source" >&2
  exit 1
fi
tar xzf "$tarball" -C "$work"
src=$(find "$work" -maxdepth 1 -type d -name "actor-framework-*" | head -1)
# -include limits: libcaf_io uses std::numeric_limits without <limits> (Debian patches it).
# -O1 -g1, as Rill's sanitizer builds in .ci/run: half the compile time of -O2 -g.
cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread -include limits" -DCAF_NO_UNIT_TESTS=yes \
  -DCAF_NO_EXAMPLES=yes -DCAF_NO_OPENCL=yes -DCAF_NO_OPENSSL=yes -DCAF_NO_PYTHON=yes \
  -DCAF_NO_TOOLS=yes -DCMAKE_INSTALL_PREFIX="$prefix" >&2
cmake --build "$work/build" -j "${RILL_JOBS:-$(nproc)}" >&2
cmake --install "$work/build" >&2
touch "$prefix/.rill-complete"
echo "$prefix"
