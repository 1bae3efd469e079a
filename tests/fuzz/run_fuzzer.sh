#!/usr/bin/env bash
# Builds a fuzzer with clang (libFuzzer + ASan + UBSan) in build-fuzz and runs
# it for $1 seconds (default 60) on a copy of its seed corpus:
#   tests/fuzz/run_fuzzer.sh [SECONDS] [program_fuzzer|npy_fuzzer|wire_fuzzer|frame_fuzzer]
# Exits non-zero when the fuzzer finds a crash; the input that caused it is
# saved under build-fuzz/fuzz-artifacts/ (replay: build-fuzz/tests/fuzz/FUZZER FILE).
# Environment: RILL_FUZZ_BUILD_DIR (default build-fuzz), RILL_JOBS (compile jobs).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
fuzzer=${2:-program_fuzzer}
build_dir=${RILL_FUZZ_BUILD_DIR:-build-fuzz}
case "$fuzzer" in
  program_fuzzer) corpus=tests/fuzz/corpus; extra=(-dict=tests/fuzz/program.dict) ;;
  npy_fuzzer) corpus=tests/fuzz/npy_corpus; extra=() ;;
  wire_fuzzer) corpus=tests/fuzz/wire_corpus; extra=() ;;
  frame_fuzzer) corpus=tests/fuzz/frame_corpus; extra=() ;;
  *) echo "run_fuzzer.sh: unknown fuzzer '$fuzzer' (program_fuzzer, npy_fuzzer, wire_fuzzer or frame_fuzzer)" >&2; exit 2 ;;
esac

# -O1 with line tables, as the sanitizer builds in .ci/run: half the compile time of -O2 -g.
options=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG"
  -DRILL_BUILD_FUZZERS=ON -DRILL_BUILD_TESTS=OFF -DRILL_CUDA=OFF)
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  generator=()
  if command -v ninja >/dev/null; then generator=(-G Ninja); fi
  cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_CXX_COMPILER=clang++ "${options[@]}"
else
  cmake -S . -B "$build_dir" "${options[@]}" >/dev/null
fi
cmake --build "$build_dir" -j "${RILL_JOBS:-$(nproc)}" --target "$fuzzer"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$corpus" "$work/corpus"
artifacts="$build_dir/fuzz-artifacts"
mkdir -p "$artifacts"
echo "fuzzing $fuzzer for ${seconds}s; crashing inputs go to $artifacts/"
UBSAN_OPTIONS=print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
  "$build_dir/tests/fuzz/$fuzzer" "$work/corpus" "${extra[@]}" \
  -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -max_len=16384 \
  -artifact_prefix="$artifacts/" -print_final_stats=1
