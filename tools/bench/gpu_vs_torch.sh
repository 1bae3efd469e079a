#!/usr/bin/env bash
# GPU training throughput, Rill against PyTorch, in one command: the models of
# `rill train` ("mlp", "cnn"; tools/rill/models.cc) with its default optimizer
# (Adam, lr 1e-3), batches 64 and 256, Rill's actor executor on cuda:0
# (tools/bench/gpu_train_benchmark.cc) and PyTorch on cuda
# (tools/bench/torch_gpu_models.py). Both sides feed the same real
# Fashion-MNIST batches in the same order (tools/bench/fashion_batches.h and
# .py: the first 4096 training images, cut into batches; the script checks the
# sides' pixel and label sums agree), preloaded in host memory (copied to the
# GPU each step), fetch the loss to
# the host every step (one sync per step on both sides), leave 20 warm-up
# steps out of the timing and then train for the given seconds; PyTorch's
# timing ends with torch.cuda.synchronize(). Threads: Rill's executor runs 2
# (1 OpenBLAS thread), PyTorch torch.set_num_threads(1). Both sides run with
# glibc's malloc thresholds fixed (tools/bench/mlp_vs_torch.sh says why).
#
# Builds gpu_train_benchmark with CUDA required (-DRILL_CUDA=ON) in
# ${RILL_GPU_BUILD_DIR:-build-gpu}, as tools/gpu-check.sh does; installs
# nothing and needs no network (Debian's python3 with a CUDA PyTorch).
#
# Usage: tools/bench/gpu_vs_torch.sh [seconds per measurement, default 5]
# Prints the raw lines of both sides, then per model and batch:
#   model mlp batch 64: rill N samples/s (median step A ms), torch M samples/s
#     (median step B ms), ratio R.RRx in samples/s, Q.QQx in median step   (rill over torch)
# Exit status: 0 all measured; 1 the Rill side failed (no CUDA kernel for an
# op, no device, a crash; said on its line), the build failed, PyTorch did, or
# the sides trained on different data;
# 77 no CUDA device (nvidia-smi missing or torch.cuda.is_available() false).
#
# Dry run on a machine without a GPU: RILL_GPU_BENCH_DEVICE=cpu runs both
# sides on the CPU (Rill on place cpu, built in ${RILL_BUILD_DIR:-build},
# PyTorch --device cpu) to test the programs and this script's parsing; its
# figures say nothing about GPUs.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-5}
device=${RILL_GPU_BENCH_DEVICE:-cuda}
python=/usr/bin/python3
models=(mlp cnn)
batches=(64 256)

case $device in
  cuda) place=cuda:0 build_dir=${RILL_GPU_BUILD_DIR:-build-gpu} cmake_args=(-DRILL_CUDA=ON) ;;
  cpu) place=cpu build_dir=${RILL_BUILD_DIR:-build} cmake_args=() ;;
  *) echo "gpu_vs_torch: RILL_GPU_BENCH_DEVICE must be cuda (default) or cpu" >&2; exit 2 ;;
esac
if ! "$python" -c 'import torch' 2>/dev/null; then
  echo "gpu_vs_torch: $python cannot import torch" >&2
  exit 1
fi
if [[ $device == cuda ]]; then
  if ! command -v nvidia-smi >/dev/null; then
    echo "gpu_vs_torch: no CUDA device: nvidia-smi is not on PATH"
    exit 77
  fi
  if ! "$python" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "gpu_vs_torch: no CUDA device: torch.cuda.is_available() is false"
    exit 77
  fi
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
else
  echo "gpu_vs_torch: DRY RUN on the CPU (RILL_GPU_BENCH_DEVICE=cpu): not a GPU measurement"
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! RILL_BUILD_DIR=$build_dir RILL_TARGETS=gpu_train_benchmark \
  bash tools/build.sh "${cmake_args[@]}" >"$log" 2>&1; then
  tail -30 "$log"
  echo "gpu_vs_torch: building gpu_train_benchmark in $build_dir failed"
  exit 1
fi
grep -m1 "Rill: CUDA" "$log" || true

export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# glibc malloc as malloc.env sets it, for both sides (why: see there).
[[ ${RILL_BENCH_MALLOC:-fixed} == default ]] || { set -a; . tools/bench/malloc.env; set +a; }
list() { local IFS=,; echo "$*"; }
# A hung device run ends in time: the measurements and generous start-up.
limit=$(awk -v s="$seconds" -v n=$((${#models[@]} * ${#batches[@]})) 'BEGIN { print int(n * s + 600) }')
rill_rc=0
rill=$(timeout "$limit" "$build_dir/tools/bench/gpu_train_benchmark" "$place" "$seconds" \
  "$(list "${models[@]}")" "$(list "${batches[@]}")") || rill_rc=$?
# PyTorch's fastest Adam on a GPU, fused (one kernel updates every parameter;
# its default, foreach, was 0.8-0.95x as fast on an H200): the fairer baseline.
adam=foreach
[[ $device == cuda ]] && adam=fused
torch=$("$python" tools/bench/torch_gpu_models.py --device "$device" --seconds "$seconds" --adam "$adam" \
  --models "$(list "${models[@]}")" --batches "$(list "${batches[@]}")") || {
  echo "${rill}"
  echo "gpu_vs_torch: the PyTorch side failed"
  exit 1
}
echo "$rill"
echo "$torch"

failed=0 torch_failed=0
for model in "${models[@]}"; do
  for batch in "${batches[@]}"; do
    prefix="model $model batch $batch:"
    r=$(echo "$rill" | sed -n "s/^rill model=$model batch=$batch samples_per_sec=\([0-9.]*\).*/\1/p")
    t=$(echo "$torch" | sed -n "s/^torch model=$model batch=$batch samples_per_sec=\([0-9.]*\).*/\1/p")
    if [[ -z $r ]]; then
      failed=1
      why=$(echo "$rill" | sed -n "s/^rill model=$model batch=$batch FAILED //p")
      [[ -n $why ]] || why="no result (gpu_train_benchmark exited with status $rill_rc)"
      echo "$prefix rill FAILED ($why), torch ${t:-?} samples/s"
      continue
    fi
    if [[ -z $t ]]; then
      echo "$prefix rill $r samples/s, torch: no result"
      torch_failed=1
      continue
    fi
    rd=$(echo "$rill" | grep "^rill model=$model batch=$batch " | tr ' ' '\n')
    td=$(echo "$torch" | grep "^torch model=$model batch=$batch " | tr ' ' '\n')
    same=1
    for key in pixel_sum label_sum; do
      [[ $(echo "$rd" | sed -n "s/^$key=//p") == "$(echo "$td" | sed -n "s/^$key=//p")" ]] || same=0
    done
    if ((!same)); then
      echo "$prefix the sides trained on different data (pixel_sum/label_sum differ); no ratio"
      torch_failed=1
      continue
    fi
    rm=$(echo "$rd" | sed -n "s/^median_step_ms=//p")
    tm=$(echo "$td" | sed -n "s/^median_step_ms=//p")
    awk -v p="$prefix" -v r="$r" -v t="$t" -v rm="$rm" -v tm="$tm" 'BEGIN {
      printf "%s rill %.0f samples/s (median step %.3f ms), torch %.0f samples/s (median step %.3f ms), " \
        "ratio %.2fx in samples/s, %.2fx in median step\n", p, r, rm, t, tm, r / t, tm / rm }'
  done
done
if ((failed || rill_rc != 0)); then
  echo "gpu_vs_torch: the Rill side failed on $place (see above)"
  exit 1
fi
if ((torch_failed)); then
  echo "gpu_vs_torch: the PyTorch side gave no result, or other data, for some configurations"
  exit 1
fi
