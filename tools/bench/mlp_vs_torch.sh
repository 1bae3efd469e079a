#!/usr/bin/env bash
# MLP training throughput, Rill's sequential executor against Debian's PyTorch,
# in one command: 784-256-128-10 ReLU, Adam lr 1e-3, softmax cross-entropy, the
# loss fetched every step, batches 64 and 256. Both sides run on one thread
# (OpenBLAS and OpenMP pinned to 1, torch.set_num_threads(1)) and train on the
# same real Fashion-MNIST batches in the same order (tools/bench/fashion_batches.h
# and .py: the first 4096 training images in file order, cut into batches);
# the script checks the two sides' pixel and label sums agree.
#
# Per side and batch it prints samples/s (timed steps x batch / their wall
# time) and the median step time, then the ratios of both (rill / torch).
# The baseline must be plausible: torch_mlp.py also times the step's eight
# matrix products alone on the same shapes (the GEMM-only bound); when
# torch's median step is more than 5x that, PyTorch is not running its usual
# path or the machine is busy, and the script prints why instead of a ratio
# and exits 1. Run it on an otherwise quiet machine: the load average before
# the runs is printed first.
#
# malloc: PyTorch allocates its temporaries with malloc every step (Adam's
# are 784 x 256 floats, 800 KB). With glibc's default, dynamic thresholds, a
# process that has not yet freed a large block gives such blocks back to the
# kernel at free and faults them in again at the next step: measured here,
# 10-14 ms a step at batch 64 instead of 1.5-3. Whether it happens depends on
# what the process allocated before, which once made this benchmark report
# PyTorch ten times slower than it is. Both sides therefore run with
# tools/bench/malloc.env (no block mapped on its own, the heap kept);
# RILL_BENCH_MALLOC=default leaves glibc's defaults.
#
# Python: the same step through Rill's Python front end (tools/bench/python_mlp.py:
# the same program built with rill.layers, rill.Executor, the same batches,
# the loss fetched as an ndarray) when the build has the module
# ($build_dir/python/rill); its line gives the binding's overhead per step
# against mlp_benchmark (python / rill median step; issue 21's target: at most
# 1.05x at batch 64) and its ratio to PyTorch's own Python loop. Its first
# loss must equal mlp_benchmark's (the same program and data), or no ratio.
#
# Usage: tools/bench/mlp_vs_torch.sh [seconds per measurement, default 5]
# Exit status: 0 every ratio printed; 1 a side failed, the batches differ, or a
# baseline was implausible.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-5}
batches=(64 256)
limit=5  # a torch step may take at most this many times its GEMM-only bound
RILL_SETUP_TORCH=1 bash tools/setup.sh >/dev/null
build_dir=${RILL_BUILD_DIR:-build}
RILL_TARGETS=mlp_benchmark bash tools/build.sh >/dev/null
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores before the runs"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# glibc malloc as malloc.env sets it, for both sides (why: see there).
[[ ${RILL_BENCH_MALLOC:-fixed} == default ]] || { set -a; . tools/bench/malloc.env; set +a; }
rill=$("$build_dir/tools/bench/mlp_benchmark" "$seconds" "${batches[@]}")
torch=$(/usr/bin/python3 tools/bench/torch_mlp.py "$seconds" "${batches[@]}")
python=
if [[ -d $build_dir/python/rill ]]; then
  python=$(PYTHONPATH="$PWD/$build_dir/python" /usr/bin/python3 tools/bench/python_mlp.py \
    "$seconds" "${batches[@]}")
fi
echo "$rill"
echo "$torch"
[[ -n $python ]] && echo "$python"

# field SIDE BATCH KEY: the value of KEY= on SIDE's line for BATCH.
field() {
  local lines=$rill
  [[ $1 == torch ]] && lines=$torch
  [[ $1 == python ]] && lines=$python
  echo "$lines" | grep "^$1 batch=$2 " | tr ' ' '\n' | sed -n "s/^$3=//p"
}
status=0
for batch in "${batches[@]}"; do
  for key in pixel_sum label_sum; do
    if [[ $(field rill "$batch" $key) != "$(field torch "$batch" $key)" ]]; then
      echo "batch $batch: the sides trained on different data ($key $(field rill "$batch" $key)" \
        "vs $(field torch "$batch" $key)); no ratio"
      status=1
      continue 2
    fi
  done
  r=$(field rill "$batch" samples_per_sec) rm=$(field rill "$batch" median_step_ms)
  t=$(field torch "$batch" samples_per_sec) tm=$(field torch "$batch" median_step_ms)
  g=$(field torch "$batch" gemm_ms)
  if [[ -z $r || -z $rm || -z $t || -z $tm || -z $g ]]; then
    echo "batch $batch: a side gave no result; no ratio"
    status=1
    continue
  fi
  if awk -v m="$tm" -v g="$g" -v l="$limit" 'BEGIN { exit !(m > l * g) }'; then
    awk -v b="$batch" -v m="$tm" -v g="$g" -v l="$limit" 'BEGIN {
      printf "batch %d: REFUSED: torch median step %.3f ms is %.1fx its GEMM-only bound %.3f ms " \
        "(limit %dx): the baseline is not running its usual path (or the machine is busy); no ratio\n",
        b, m, m / g, g, l }'
    status=1
    continue
  fi
  awk -v b="$batch" -v r="$r" -v rm="$rm" -v t="$t" -v tm="$tm" -v g="$g" 'BEGIN {
    printf "batch %d: rill %.0f samples/s (median step %.3f ms), torch %.0f samples/s " \
      "(median step %.3f ms, %.1fx its GEMM-only %.3f ms); ratio %.2fx in samples/s, %.2fx in median step\n",
      b, r, rm, t, tm, tm / g, g, r / t, tm / rm }'
  [[ -z $python ]] && continue
  p=$(field python "$batch" samples_per_sec) pm=$(field python "$batch" median_step_ms)
  if [[ $(field python "$batch" first_loss) != "$(field rill "$batch" first_loss)" || -z $pm ]]; then
    echo "batch $batch: python's first loss $(field python "$batch" first_loss) is not mlp_benchmark's" \
      "$(field rill "$batch" first_loss) (another program or data?); no ratio"
    status=1
    continue
  fi
  awk -v b="$batch" -v p="$p" -v pm="$pm" -v rm="$rm" -v tm="$tm" 'BEGIN {
    printf "batch %d: python %.0f samples/s (median step %.3f ms): %.3fx mlp_benchmark'"'"'s median step " \
      "(the binding'"'"'s overhead), %.2fx PyTorch'"'"'s in median step\n", b, p, pm, pm / rm, tm / pm }'
done
exit $status
