#!/usr/bin/env bash
# MLP training throughput, Rill's sequential executor against Debian's PyTorch,
# both on one thread (OpenBLAS pinned to 1 for both), in one command.
# Usage: tools/bench/mlp_vs_torch.sh [seconds per measurement, default 5]
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-5}
RILL_SETUP_TORCH=1 bash tools/setup.sh >/dev/null
bash tools/build.sh >/dev/null
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
bench="${RILL_BUILD_DIR:-build}/tools/bench/mlp_benchmark"
results=$( { "$bench" "$seconds" 64 256; /usr/bin/python3 tools/bench/torch_mlp.py "$seconds" 64 256; } )
echo "$results"
for batch in 64 256; do
  rill=$(echo "$results" | sed -n "s/^rill batch=$batch samples_per_sec=//p")
  torch=$(echo "$results" | sed -n "s/^torch batch=$batch samples_per_sec=//p")
  awk -v b="$batch" -v r="$rill" -v t="$torch" \
    'BEGIN { printf "batch %d: rill %.0f samples/s, torch %.0f samples/s, ratio %.2fx\n", b, r, t, r / t }'
done
