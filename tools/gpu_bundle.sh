#!/usr/bin/env bash
# The GPU checks of tools/gpu-check.sh for a GPU machine that cannot build
# Rill: one with CUDA, a driver and PyTorch but none of Rill's Debian packages
# and no network. Two verbs:
#
#   tools/gpu_bundle.sh pack [BUILD_DIR] [BUNDLE_DIR]    (here, on the CPU machine)
#     Packs the CUDA build's programs (rill, gpu_train_benchmark, the GPU
#     tests, actors_test and runtime_test for the device-protocol tests),
#     librill.so and every shared library they need that is not glibc's or
#     CUDA's, into BUNDLE_DIR/rill-gpu.tar.xz, with Fashion-MNIST beside it.
#     BUILD_DIR (default build-gpu) is configured with -DRILL_CUDA=ON.
#
#   tools/gpu_bundle.sh run [BUNDLE_DIR] [LOG_DIR]        (there, on the GPU machine)
#     Unpacks into /tmp/rill-gpu, finds the CUDA runtime, cuBLAS and NCCL of
#     that machine (its CUDA toolkit, or PyTorch's nvidia-* wheels) and runs,
#     each under a time limit: the GPU tests, the MLP (5 epochs) trained on
#     cuda:0 and on the CPU with the same seed, the CNN (1 epoch) on cuda:0 and
#     200 steps of it on the CPU for speed (its CPU epoch, for accuracy, is run
#     on the CPU machine: `rill train --model cnn --epochs 1 --json`), a trace of
#     GPU steps with its summary, the benchmark against PyTorch on the same
#     GPU, compute-sanitizer over the CUDA device tests, and the
#     device-protocol tests. Everything goes to LOG_DIR/check.log (and a
#     summary at its end); the trace to LOG_DIR/trace.json.gz.
#
# Exit status of run: 0 when everything that ran passed.
set -uo pipefail
cd "$(dirname "$0")/.."
verb=${1:-}
programs=(tools/rill/rill tools/bench/gpu_train_benchmark tests/gpu/op_agreement_test
  tests/gpu/cuda_device_test tests/gpu/cuda_executor_test tests/actors/device_place_test
  tests/runtime/device_stream_test)
# Resolved on the GPU machine: glibc's and the CUDA libraries, which must match its driver.
system_libs='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libcuda\.|libcudart\.|libcublas|libcublasLt\.|libnccl\.)'

pack() {
  local build_dir=${1:-build-gpu} bundle=${2:-.gpu-bundle}
  local staging
  staging=$(mktemp -d)
  mkdir -p "$staging/bin" "$staging/lib" "$staging/compat" "$bundle"
  for p in "${programs[@]}"; do
    [[ -x "$build_dir/$p" ]] || { echo "gpu_bundle: $build_dir/$p is not built" >&2; exit 1; }
    strip -o "$staging/bin/$(basename "$p")" "$build_dir/$p"
  done
  strip -o "$staging/lib/librill.so" "$build_dir/librill.so"
  ldd "$build_dir/librill.so" "${programs[@]/#/$build_dir/}" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' |
    sort -u | while read -r name path; do
    [[ $name =~ $system_libs || $name == librill.so ]] && continue
    # libstdc++ and libgcc_s only where the GPU machine's are older than ours.
    if [[ $name =~ ^(libstdc\+\+|libgcc_s) ]]; then cp -L "$path" "$staging/compat/$name"; continue; fi
    cp -L "$path" "$staging/lib/$name"
  done
  tar -C "$staging" -cJf "$bundle/rill-gpu.tar.xz" bin lib compat
  rm -rf "$staging"
  mkdir -p "$bundle/fashion-mnist"
  cp /usr/share/datasets/fashion-mnist/*.gz "$bundle/fashion-mnist/"
  du -sh "$bundle"/*
}

# Where the GPU machine keeps a library: its CUDA toolkit, then Python's nvidia-* wheels.
find_lib() {
  local name=$1 dirs=(/usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu)
  local site
  site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null) &&
    dirs+=("$site"/nvidia/*/lib)
  for d in "${dirs[@]}"; do
    [[ -e "$d/$name" ]] && { echo "$d"; return 0; }
  done
  return 1
}

# Unpacks the bundle into /tmp/rill-gpu (once) and exports the
# LD_LIBRARY_PATH its programs run with.
setup() {
  local bundle=$1 root=/tmp/rill-gpu
  if [[ ! -x $root/bin/rill ]]; then
    mkdir -p "$root"
    tar -C "$root" -xJf "$bundle/rill-gpu.tar.xz" || { echo "gpu_bundle: cannot unpack"; return 1; }
  fi
  # The programs read Fashion-MNIST where Debian's package puts it.
  mkdir -p /usr/share/datasets/fashion-mnist
  local f
  for f in "$bundle"/fashion-mnist/*.gz; do
    [[ -e /usr/share/datasets/fashion-mnist/${f##*/} ]] || cp "$f" /usr/share/datasets/fashion-mnist/
  done
  local path=$root/lib d
  for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
    if d=$(find_lib "$lib"); then
      [[ ":$path:" == *":$d:"* ]] || path+=":$d"
    else
      echo "gpu_bundle: no $lib on this machine"
    fi
  done
  export LD_LIBRARY_PATH=$path
  if ldd "$root/bin/rill" 2>&1 | grep -q "GLIBCXX\|not found"; then
    export LD_LIBRARY_PATH=$path:$root/compat
  fi
}

run() {
  local bundle=${1:-.gpu-bundle} logs=${2:-${OUT:-/tmp/rill-gpu-logs}}
  local root=/tmp/rill-gpu failed=0 summary=()
  setup "$bundle" || exit 1
  echo "== machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  ldd "$root/bin/rill" | grep -E "not found|cuda|cublas|nccl|stdc"
  # The host CPU and the kernel OpenBLAS picks for it: one H100 host ran
  # Rill's CPU MLP 5-7x slower per core than the 2-core CPU machine
  # (2026-11-27, "Intel(R) Xeon(R) Processor"), perhaps a generic kernel.
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores," \
    "flags:$(grep -m1 '^flags' /proc/cpuinfo | grep -oE ' (avx2|avx512f|fma)\b' | tr -d '\n')"
  OPENBLAS_VERBOSE=2 "$root/bin/rill" --version 2>&1 | grep -i "core" | head -2
  export OPENBLAS_NUM_THREADS=4

  step() {  # NAME SECONDS COMMAND...: runs it, notes PASS/FAIL with the time taken
    local name=$1 limit=$2 start=$SECONDS rc=0
    shift 2
    echo "== $name"
    timeout --kill-after=5 "$limit" "$@" || rc=$?
    local took=$((SECONDS - start))
    if ((rc == 0)); then
      summary+=("PASS  $name (${took}s)")
    else
      failed=1
      summary+=("FAIL  $name: exit $rc$( ((rc == 124)) && echo ", over ${limit}s") (${took}s)")
    fi
  }
  local bin=$root/bin
  step "cuda_device_test" 60 "$bin/cuda_device_test"
  step "cuda_executor_test" 90 "$bin/cuda_executor_test"
  step "op_agreement_test" 90 "$bin/op_agreement_test"
  local train=("$bin/rill" train --json)
  step "train mlp 5 epochs on cuda:0" 60 "${train[@]}" --model mlp --epochs 5 --places cuda:0
  step "train mlp 5 epochs on cpu" 60 "${train[@]}" --model mlp --epochs 5 --places cpu
  step "train cnn 1 epochs on cuda:0" 60 "${train[@]}" --model cnn --epochs 1 --places cuda:0
  # The CNN's CPU epoch is run on the CPU machine beforehand (same seed): here only its speed.
  step "train cnn on cpu, 200 steps (speed)" 45 "${train[@]}" --model cnn --epochs 1 \
    --max-steps 200 --places cpu
  step "trace of GPU steps" 45 "$bin/rill" train --model cnn --epochs 1 --max-steps 60 --places cuda:0 \
    --trace "$root/trace.json" --trace-skip 20 --trace-steps 10
  [[ -f $root/trace.json ]] && "$bin/rill" trace summarize "$root/trace.json" &&
    gzip -c "$root/trace.json" >"$logs/trace.json.gz"
  step "gpu_train_benchmark (rill, cuda:0)" 90 "$bin/gpu_train_benchmark" cuda:0 3 mlp,cnn 64,256
  step "torch on the same GPU" 90 python3 tools/bench/torch_gpu_models.py --device cuda --seconds 3 \
    --adam fused --models mlp,cnn --batches 64,256
  if command -v compute-sanitizer >/dev/null; then
    step "compute-sanitizer memcheck cuda_device_test" 60 compute-sanitizer --error-exitcode 1 \
      "$bin/cuda_device_test"
    step "compute-sanitizer memcheck MLP on cuda:0" 60 compute-sanitizer --error-exitcode 1 \
      "$bin/cuda_executor_test" --gtest_filter='*MlpOnCuda0*'
  fi
  step "device-protocol tests (device_stream_test)" 30 "$bin/device_stream_test"
  step "device-protocol tests (device_place_test)" 30 "$bin/device_place_test"
  echo
  echo "== summary"
  printf '%s\n' "${summary[@]}"
  return $failed
}

# Where a model's GPU step spends its time (PyTorch's:
# tools/bench/torch_gpu_profile.py): Nsight Compute times each kernel of a
# window of launches of gpu_train_benchmark (after its warm-up) and the times
# are summed per kernel name, largest first.
profile() {
  local model=$1 batch=$2 skip=${3:-3000} count=${4:-400} root=/tmp/rill-gpu
  command -v ncu >/dev/null || { echo "gpu_bundle: no ncu on this machine"; return 1; }
  local csv=$root/ncu-$model-$batch.csv
  ncu --metrics gpu__time_duration.sum --launch-skip "$skip" --launch-count "$count" --csv \
    --print-units base "$root/bin/gpu_train_benchmark" cuda:0 1 "$model" "$batch" >"$csv" 2>/dev/null
  python3 - "$csv" "$model" "$batch" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head = rows[0]
name, value = head.index("Kernel Name"), head.index("Metric Value")
total, calls = collections.Counter(), collections.Counter()
for r in rows[1:]:
    total[r[name][:70]] += float(r[value].replace(",", ""))
    calls[r[name][:70]] += 1
all_ns = sum(total.values())
print(f"ncu, {sys.argv[2]} batch {sys.argv[3]}: {sum(calls.values())} kernels, {all_ns / 1e6:.3f} ms in all")
for k, ns in total.most_common(25):
    print(f"  {ns / 1e6:9.3f} ms {100 * ns / all_ns:5.1f}% {calls[k]:5d}x  {k}")
PY
}

case $verb in
  pack) shift; pack "$@" ;;
  run)
    logs=${3:-${OUT:-/tmp/rill-gpu-logs}}
    mkdir -p "$logs"
    run "${2:-.gpu-bundle}" "$logs" 2>&1 | tee "$logs/check.log"
    ;;
  exec)  # exec PROGRAM [ARGS...]: one bundled program, with the bundle in .gpu-bundle
    shift
    setup .gpu-bundle && "/tmp/rill-gpu/bin/$1" "${@:2}"
    ;;
  profile)  # profile MODEL BATCH [SKIP COUNT], with the bundle in .gpu-bundle
    shift
    setup .gpu-bundle && profile "$@"
    ;;
  *)
    echo "usage: tools/gpu_bundle.sh pack [BUILD_DIR] [BUNDLE_DIR] | run [BUNDLE_DIR] [LOG_DIR]" \
      "| exec PROGRAM [ARGS] | profile MODEL BATCH [SKIP COUNT]" >&2
    exit 2
    ;;
esac
