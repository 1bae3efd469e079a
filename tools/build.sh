#!/usr/bin/env bash
# Configures and builds Rill into ${RILL_BUILD_DIR:-build}. Extra arguments go to cmake's configure step.
# RILL_TARGETS (space separated) builds only those targets; RILL_JOBS sets the parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${RILL_BUILD_DIR:-build}
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
else
  cmake -S . -B "$build_dir" "$@" >/dev/null
fi
targets=()
for t in ${RILL_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "${RILL_JOBS:-$(nproc)}" "${targets[@]}"
