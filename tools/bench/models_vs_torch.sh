#!/usr/bin/env bash
# Training throughput of the models of `rill train --model` (mlp, cnn, resnet,
# transformer) against Debian's PyTorch on the same models (same layer sizes:
# tools/bench/torch_models.py), one thread each: Rill's actor executor with
# --threads 1 --blas-threads 1, torch.set_num_threads(1), OpenBLAS and OpenMP
# pinned to 1; Adam lr 1e-3, batches 64 and 256, real Fashion-MNIST images
# (Rill: `rill train`'s training set, preloaded; PyTorch: the first 4096
# training images, tools/bench/fashion_batches.py). glibc's malloc gets the
# fixed thresholds of mlp_vs_torch.sh (which says why PyTorch needs them).
#
# Per model and batch the sides alternate, Rill then PyTorch, twice (A B A B),
# and each side's better run counts. Rill's run is two epochs of --max-steps
# steps, the second timed (the first warms up), with the step count set so
# that an epoch lasts about as long as PyTorch's timed run. Prints per model
# and batch the samples/s of both and the ratio rill / torch. Run it on an
# otherwise quiet machine: the load average before the runs is printed.
#
# Usage: tools/bench/models_vs_torch.sh [seconds per measurement, default 5]
#   [models, default "mlp cnn resnet transformer"] [batches, default "64 256"]
# Exit status: 0 every ratio printed; 1 a side failed.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-5}
read -r -a models <<<"${2:-mlp cnn resnet transformer}"
read -r -a batches <<<"${3:-64 256}"
build_dir=${RILL_BUILD_DIR:-build}
rill=$build_dir/tools/rill/rill
[[ -x $rill ]] || { echo "models_vs_torch: $rill is not built (RILL_BUILD_DIR?)"; exit 1; }
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores before the runs"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
export MALLOC_MMAP_THRESHOLD_=16777216 MALLOC_TRIM_THRESHOLD_=33554432

# torch_rate MODEL BATCH: PyTorch's samples/s.
torch_rate() {
  /usr/bin/python3 tools/bench/torch_models.py "$seconds" "$1" "$2" |
    tr ' ' '\n' | sed -n 's/^samples_per_sec=//p'
}
# rill_rate MODEL BATCH STEPS: samples/s of the second of two epochs of STEPS steps.
rill_rate() {
  "$rill" train --model "$1" --batch "$2" --epochs 2 --max-steps "$3" --optimizer adam \
    --lr 1e-3 --executor actor --threads 1 --blas-threads 1 --input preloaded --json |
    tail -n 1 | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["samples_per_sec"])'
}
better() { awk -v a="$1" -v b="$2" 'BEGIN { print (a > b ? a : b) }'; }

status=0
for model in "${models[@]}"; do
  for batch in "${batches[@]}"; do
    # A first PyTorch run sizes Rill's epochs; it is one of PyTorch's two.
    t1=$(torch_rate "$model" "$batch") || t1=
    if [[ -z $t1 ]]; then
      echo "$model batch $batch: PyTorch gave no result; no ratio"
      status=1
      continue
    fi
    steps=$(awk -v r="$t1" -v s="$seconds" -v b="$batch" \
      'BEGIN { n = int(r * s / b); print (n < 5 ? 5 : n) }')
    r1=$(rill_rate "$model" "$batch" "$steps") || r1=
    t2=$(torch_rate "$model" "$batch") || t2=
    r2=$(rill_rate "$model" "$batch" "$steps") || r2=
    if [[ -z $r1 || -z $r2 || -z $t2 ]]; then
      echo "$model batch $batch: a side gave no result; no ratio"
      status=1
      continue
    fi
    r=$(better "$r1" "$r2") t=$(better "$t1" "$t2")
    awk -v m="$model" -v b="$batch" -v r="$r" -v t="$t" -v r1="$r1" -v r2="$r2" -v t1="$t1" \
      -v t2="$t2" -v n="$steps" 'BEGIN {
      printf "%s batch %d: rill %.0f samples/s (runs %.0f, %.0f; %d steps), torch %.0f samples/s " \
        "(runs %.0f, %.0f); ratio rill/torch %.2fx\n", m, b, r, r1, r2, n, t, t1, t2, r / t }'
  done
done
exit $status
