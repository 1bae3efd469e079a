#!/usr/bin/env bash
# Training throughput of the models of `rill train --model` (mlp, cnn, resnet,
# transformer, lstm, gru) against Debian's PyTorch on the same models (same
# layer sizes: tools/bench/torch_models.py), on one and on two threads: Rill's
# actor executor with --threads T --blas-threads 1, PyTorch with
# torch.set_num_threads(T) and OpenBLAS at 1 (OpenBLAS's own threads beside
# torch's pool made its 2-thread MLP 2.5-3x slower than its 1-thread one here:
# 11.8-15.5k vs 36.7k samples/s at batch 64); Adam lr 1e-3, batches 64 and
# 256, real Fashion-MNIST images (Rill: `rill train`'s training set,
# preloaded; PyTorch: the first 4096 training images,
# tools/bench/fashion_batches.py). glibc's malloc gets the fixed thresholds
# of mlp_vs_torch.sh (which says why PyTorch needs them).
#
# Per model, batch and thread count the sides alternate, Rill then PyTorch,
# twice (A B A B), and each side's better run counts. Rill's run is two epochs
# of --max-steps steps, the second timed (the first warms up), with the step
# count set so that an epoch lasts about as long as PyTorch's timed run.
# Prints per model and batch the samples/s of both sides at each thread count,
# rill / torch, and Rill's own two-thread / one-thread rate (the out-of-order
# executor's gain on the model's graph). Then, from a traced one-thread Rill
# step per model (batch 64, `rill trace summarize --json`), the graph's size
# (kernels per step) and the share of the step that is not kernels (the
# executor's per-op overhead, the feed and fetch).
# Targets (issue "Models people train"): rill / torch >= 1.0 on every model at
# one thread; the transformer's two-thread / one-thread >= 1.6.
# Run it on an otherwise quiet machine: the load average before the runs is printed.
#
# Usage: tools/bench/models_vs_torch.sh [seconds per measurement, default 5]
#   [models, default "mlp cnn resnet transformer lstm gru"] [batches, default "64 256"]
#   [thread counts, default "1 2"]
# Exit status: 0 every ratio printed; 1 a side failed.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-5}
read -r -a models <<<"${2:-mlp cnn resnet transformer lstm gru}"
read -r -a batches <<<"${3:-64 256}"
read -r -a thread_counts <<<"${4:-1 2}"
build_dir=${RILL_BUILD_DIR:-build}
rill=$build_dir/tools/rill/rill
[[ -x $rill ]] || { echo "models_vs_torch: $rill is not built (RILL_BUILD_DIR?)"; exit 1; }
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores before the runs"
export OMP_NUM_THREADS=1
# glibc malloc as malloc.env sets it, for both sides (why: see there).
[[ ${RILL_BENCH_MALLOC:-fixed} == default ]] || { set -a; . tools/bench/malloc.env; set +a; }
work=$(mktemp -d /tmp/rill-models-vs-torch-XXXXXX)
trap 'rm -rf "$work"' EXIT

# torch_rate MODEL BATCH THREADS: PyTorch's samples/s.
torch_rate() {
  OPENBLAS_NUM_THREADS=1 /usr/bin/python3 tools/bench/torch_models.py "$seconds" "$1" "$2" "$3" |
    tr ' ' '\n' | sed -n 's/^samples_per_sec=//p'
}
# rill_rate MODEL BATCH STEPS THREADS [FLAGS...]: samples/s of the second of two epochs of STEPS steps.
rill_rate() {
  local model=$1 batch=$2 steps=$3 threads=$4
  shift 4
  OPENBLAS_NUM_THREADS=1 "$rill" train --model "$model" --batch "$batch" --epochs 2 \
    --max-steps "$steps" --optimizer adam --lr 1e-3 --executor actor --threads "$threads" \
    --blas-threads 1 --input preloaded --json "$@" |
    tail -n 1 | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["samples_per_sec"])'
}
better() { awk -v a="$1" -v b="$2" 'BEGIN { print (a > b ? a : b) }'; }

status=0
for model in "${models[@]}"; do
  for batch in "${batches[@]}"; do
    for threads in "${thread_counts[@]}"; do
      # A first PyTorch run sizes Rill's epochs; it is one of PyTorch's two.
      t1=$(torch_rate "$model" "$batch" "$threads") || t1=
      if [[ -z $t1 ]]; then
        echo "$model batch $batch threads $threads: PyTorch gave no result; no ratio"
        status=1
        continue
      fi
      steps=$(awk -v r="$t1" -v s="$seconds" -v b="$batch" \
        'BEGIN { n = int(r * s / b); print (n < 5 ? 5 : n) }')
      r1=$(rill_rate "$model" "$batch" "$steps" "$threads") || r1=
      t2=$(torch_rate "$model" "$batch" "$threads") || t2=
      r2=$(rill_rate "$model" "$batch" "$steps" "$threads") || r2=
      if [[ -z $r1 || -z $r2 || -z $t2 ]]; then
        echo "$model batch $batch threads $threads: a side gave no result; no ratio"
        status=1
        continue
      fi
      r=$(better "$r1" "$r2") t=$(better "$t1" "$t2")
      echo "$model $batch $threads $r $t" >>"$work/rates"
      awk -v m="$model" -v b="$batch" -v th="$threads" -v r="$r" -v t="$t" -v r1="$r1" \
        -v r2="$r2" -v t1="$t1" -v t2="$t2" -v n="$steps" 'BEGIN {
        printf "%s batch %d, %d thread(s): rill %.0f samples/s (runs %.0f, %.0f; %d steps), " \
          "torch %.0f samples/s (runs %.0f, %.0f); ratio rill/torch %.2fx\n", m, b, th, r, r1, r2,
          n, t, t1, t2, r / t }'
    done
  done
done

# Graph size and per-op overhead: a traced one-thread step per model.
for model in "${models[@]}"; do
  OPENBLAS_NUM_THREADS=1 "$rill" train --model "$model" --batch 64 --epochs 1 --max-steps 30 \
    --executor actor --threads 1 --blas-threads 1 --input preloaded --trace "$work/$model.trace" \
    --trace-skip 15 --trace-steps 10 >/dev/null 2>&1 &&
    "$rill" trace summarize --json "$work/$model.trace" >"$work/$model.summary" 2>/dev/null ||
    { echo "$model: the traced run failed; no graph figures"; status=1; }
done

/usr/bin/python3 - "$work" "${models[@]}" <<'PY'
import json, os, sys
work, models = sys.argv[1], sys.argv[2:]
rates = {}
if os.path.exists(f"{work}/rates"):
    for line in open(f"{work}/rates"):
        m, b, th, r, t = line.split()
        rates[(m, int(b), int(th))] = (float(r), float(t))
print("\nsamples/s (rill actor executor / PyTorch), better of two runs each")
print(f"{'model':>12} {'batch':>6} {'rill 1t':>9} {'torch 1t':>9} {'r/t 1t':>7} "
      f"{'rill 2t':>9} {'torch 2t':>9} {'r/t 2t':>7} {'rill 2t/1t':>10}")
for (m, b) in sorted({(m, b) for m, b, _ in rates}, key=lambda k: (models.index(k[0]), k[1])):
    one, two = rates.get((m, b, 1)), rates.get((m, b, 2))
    cells = [f"{m:>12} {b:6d}"]
    for x in (one, two):
        cells.append(f"{x[0]:9.0f} {x[1]:9.0f} {x[0] / x[1]:6.2f}x" if x else f"{'-':>9} {'-':>9} {'-':>7}")
    gain = f"{two[0] / one[0]:9.2f}x" if one and two else f"{'-':>10}"
    target = " (target >= 1.6)" if m == "transformer" and one and two else ""
    print(" ".join(cells) + " " + gain + target)
    if one and two and two[1] < 0.7 * one[1]:
        print(f"  {m} batch {b}: PyTorch on 2 threads ran at {two[1] / one[1]:.2f}x its 1-thread "
              "rate: an implausible baseline (a busy machine?), its 2-thread ratio is not fair")
print("\ngraph per step (one thread, batch 64, 10 traced steps): kernels, and the share of the "
      "step that is not kernels")
for m in models:
    path = f"{work}/{m}.summary"
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        continue
    s = json.load(open(path))
    steps = s["iterations"]["count"]
    stream = s["streams"][0]
    kernels = stream["kernels"] / steps
    kernel_us = stream["kernel_us"] / steps
    step_us = s["iterations"]["mean_us"]
    print(f"{m:>12}: {kernels:6.0f} kernels, step {step_us / 1e3:8.3f} ms, kernels "
          f"{kernel_us / 1e3:8.3f} ms, overhead {1 - kernel_us / step_us:6.1%} "
          f"({(step_us - kernel_us) / kernels:.2f} us per kernel)")
PY
exit $status
