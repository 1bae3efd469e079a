#!/usr/bin/env bash
# GPU checks: builds Rill with CUDA required (RILL_CUDA=ON) in build-gpu and
# runs the GPU tests (ctest label "gpu": op-by-op CPU/CUDA agreement, the
# CUDA device layer, the executor on cuda:0 — MLP and CNN against the CPU,
# event and host waits, NCCL), the device-protocol tests (the asynchronous
# CPU device), Fashion-MNIST training on cuda:0 against the CPU, and the
# benchmark against PyTorch on the same GPU; then prints a summary. Needs no network: it installs nothing
# (the build needs CMake, a compiler, CUDA and the Debian packages of
# tools/setup.sh already on the machine; RILL_GPU_BUILD_DIR may name a
# build directory made elsewhere with -DRILL_CUDA=ON).
#
# A GPU machine without those packages (or without a network to get them)
# runs the same checks from a bundle built here: tools/gpu_bundle.sh.
#
# Usage: tools/gpu-check.sh        Exit status: 0 when everything ran passed.
set -uo pipefail
cd "$(dirname "$0")/.."
build_dir=${RILL_GPU_BUILD_DIR:-build-gpu}
failed=0
summary=()
note() { summary+=("$1"); }

echo "== GPU"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
else
  echo "no nvidia-smi on PATH"
fi

echo "== build ($build_dir, RILL_CUDA=ON)"
if ! RILL_BUILD_DIR=$build_dir bash tools/build.sh -DRILL_CUDA=ON >"$build_dir.log" 2>&1; then
  tail -30 "$build_dir.log"
  echo "gpu-check: the build failed (log: $build_dir.log)"
  exit 1
fi
grep -m1 "Rill: CUDA" "$build_dir.log" || true

run_tests() {  # NAME CTEST-ARGS...
  local name=$1
  shift
  echo "== $name"
  if ctest --test-dir "$build_dir" --output-on-failure "$@" >"$build_dir/$name.log" 2>&1; then
    note "PASS  $name: $(grep -E 'tests passed' "$build_dir/$name.log" | tail -1)"
  else
    failed=1
    note "FAIL  $name: $(grep -E 'tests passed|tests failed' "$build_dir/$name.log" | tail -1)"
  fi
  grep -E "Passed|Failed|Skipped|\*\*\*" "$build_dir/$name.log" | sed 's/^/  /'
  local skipped
  skipped=$(grep -c "Skipped" "$build_dir/$name.log" || true)
  if ((skipped > 0)); then note "      $name: $skipped skipped (no device?) — see $build_dir/$name.log"; fi
}
run_tests "gpu tests" -L gpu
run_tests "device protocol tests" -R "AsyncCpuStream|DevicePlace"
"$build_dir/tests/gpu/op_agreement_test" --gtest_filter='*EveryCudaKernelHasACase' 2>/dev/null |
  grep "ops without a CUDA kernel" | sed 's/^/  /' && note "      see above for the ops that have no CUDA kernel yet"

# Fashion-MNIST on cuda:0 against the CPU: one epoch each, same seed; the
# test accuracies must agree within a point (GEMMs round differently).
data=${RILL_DATA:-/usr/share/datasets/fashion-mnist}
rill="$build_dir/tools/rill/rill"
accuracy() { sed -n 's/.*"test_accuracy": *\([0-9.]*\).*/\1/p' | tail -1; }
for model in mlp cnn; do
  echo "== train $model on cuda:0 and on the CPU"
  if [[ ! -d "$data" ]]; then
    note "SKIP  train $model: no Fashion-MNIST at $data (RILL_DATA names another directory)"
    continue
  fi
  log="$build_dir/train-$model.log"
  gpu=$("$rill" train --model "$model" --data "$data" --places cuda:0 --epochs 1 --json 2>>"$log" | accuracy)
  cpu=$("$rill" train --model "$model" --data "$data" --places cpu --epochs 1 --json 2>>"$log" | accuracy)
  if [[ -n "$gpu" && -n "$cpu" ]] && awk -v g="$gpu" -v c="$cpu" 'BEGIN { d = g - c; exit !(d <= 0.01 && d >= -0.01) }'; then
    note "PASS  train $model: test accuracy cuda:0 $gpu, cpu $cpu"
  else
    failed=1
    note "FAIL  train $model: test accuracy cuda:0 '${gpu}', cpu '${cpu}' (log: $log)"
  fi
done

echo "== benchmark: Rill on cuda:0 against PyTorch on the same GPU"
if RILL_GPU_BUILD_DIR=$build_dir bash tools/bench/gpu_vs_torch.sh >"$build_dir/bench.log" 2>&1; then
  note "PASS  benchmark (tools/bench/gpu_vs_torch.sh):"
  while read -r line; do note "      $line"; done < <(grep "ratio" "$build_dir/bench.log")
else
  failed=1
  note "FAIL  benchmark: see $build_dir/bench.log"
fi
cat "$build_dir/bench.log"

echo
echo "== summary"
printf '%s\n' "${summary[@]}"
exit $failed
