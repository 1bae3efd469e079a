#!/usr/bin/env bash
# Where one thread's training step stands, in one command: for the MLP at
# batch 64 and 256 (and the CNN at batch 64), in alternation, ROUNDS times:
#   gemm      the step's matrix products replayed alone (the GEMM-only bound:
#             mlp_benchmark --bound records them from a real step)
#   bench     mlp_benchmark: the sequential executor on preloaded real batches
#   train     `rill train` with each executor (sequential, actor) and each
#             input (pipeline, preloaded): two epochs (the CNN: of 100 steps),
#             the second one's samples/s (steady state, as mlp_benchmark
#             times it: the first epoch also pays for first touches of pages)
#   torch     Debian's PyTorch on the same model and the same real batches
#             (tools/bench/torch_gpu_models.py --device cpu)
# Everything runs on one thread: OpenBLAS, OpenMP and torch pinned to 1,
# `rill train --threads 1 --blas-threads 1`. Prints each round's samples/s,
# then per model and batch the median and spread (min-max) of each, and the
# ratios of medians the performance issue sets targets for:
#   bench / gemm  >= 0.90     every train variant / bench  >= 0.95
# plus bench / torch. A torch median step past 5x the GEMM-only bound means
# PyTorch is not on its usual path (or the machine is busy): that ratio is
# then refused, not printed. Run it on a quiet machine; the load average
# before the runs is printed first.
# Usage: tools/bench/train_vs_bound.sh [ROUNDS, default 5] [SECONDS per timed benchmark, default 2]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5}
seconds=${2:-2}
build_dir=${RILL_BUILD_DIR:-build}
RILL_SETUP_TORCH=1 bash tools/setup.sh >/dev/null
RILL_TARGETS="mlp_benchmark rill_cli" bash tools/build.sh >/dev/null
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores before the runs"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# glibc malloc as malloc.env sets it, for both sides (why: see there).
[[ ${RILL_BENCH_MALLOC:-fixed} == default ]] || { set -a; . tools/bench/malloc.env; set +a; }

/usr/bin/python3 - "$build_dir" "$rounds" "$seconds" <<'PY'
import json, statistics, subprocess, sys
build, rounds, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3]
bench = f"{build}/tools/bench/mlp_benchmark"
rill = f"{build}/tools/rill/rill"
cases = [("mlp", 64, None), ("mlp", 256, None), ("cnn", 64, 100)]  # model, batch, steps (None: an epoch)
variants = [(e, i) for e in ("sequential", "actor") for i in ("pipeline", "preloaded")]

def fields(line):
    return dict(kv.split("=", 1) for kv in line.split()[1:])

def run_bench(model, batch):
    out = subprocess.run([bench, "--model", model, "--bound", seconds, str(batch)],
                         check=True, capture_output=True, text=True).stdout.splitlines()
    rill_line = fields(next(l for l in out if l.startswith("rill ")))
    gemm_line = fields(next(l for l in out if l.startswith("gemm ")))
    return {"bench": float(rill_line["samples_per_sec"]), "gemm": float(gemm_line["samples_per_sec"]),
            "gemm_ms": float(gemm_line["median_step_ms"])}

def run_train(model, batch, steps, executor, source):
    cmd = [rill, "train", "--model", model, "--batch", str(batch), "--epochs", "2", "--threads", "1",
           "--blas-threads", "1", "--executor", executor, "--input", source, "--json"]
    if steps:
        cmd += ["--max-steps", str(steps)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    lines = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    return float(lines[-1]["samples_per_sec"])

def run_torch(model, batch):
    out = subprocess.run(["/usr/bin/python3", "tools/bench/torch_gpu_models.py", "--device", "cpu",
                          "--seconds", seconds, "--models", model, "--batches", str(batch)],
                         check=True, capture_output=True, text=True).stdout.splitlines()
    f = fields(next(l for l in out if l.startswith("torch ")))
    return float(f["samples_per_sec"]), float(f["median_step_ms"])

names = ["gemm", "bench"] + [f"{e}/{i}" for e, i in variants] + ["torch"]
rates = {c: {n: [] for n in names} for c in cases}
torch_ms, gemm_ms = {c: [] for c in cases}, {c: [] for c in cases}
for r in range(rounds):
    for case in cases:
        model, batch, steps = case
        # Alternate the order each round, so that no variant always runs first.
        order = list(range(len(variants) + 2))
        if r % 2:
            order.reverse()
        line = []
        for k in order:
            if k == 0:
                b = run_bench(model, batch)
                rates[case]["gemm"].append(b["gemm"])
                rates[case]["bench"].append(b["bench"])
                gemm_ms[case].append(b["gemm_ms"])
            elif k == 1:
                t, ms = run_torch(model, batch)
                rates[case]["torch"].append(t)
                torch_ms[case].append(ms)
            else:
                e, i = variants[k - 2]
                rates[case][f"{e}/{i}"].append(run_train(model, batch, steps, e, i))
        print(f"round {r + 1} {model} batch {batch}: " +
              ", ".join(f"{n} {rates[case][n][-1]:.0f}" for n in names), flush=True)

print()
for case in cases:
    model, batch, _ = case
    med = {n: statistics.median(v) for n, v in rates[case].items()}
    print(f"{model} batch {batch}, samples/s over {rounds} rounds (median, min-max):")
    for n in names:
        v = rates[case][n]
        print(f"  {n:<22} {med[n]:>9.0f}   {min(v):>9.0f} - {max(v):<9.0f}")
    print(f"  mlp_benchmark / GEMM-only bound: {med['bench'] / med['gemm']:.3f} (target >= 0.90)")
    for e, i in variants:
        n = f"{e}/{i}"
        print(f"  rill train {n:<20} / mlp_benchmark: {med[n] / med['bench']:.3f} (target >= 0.95)")
    slow = statistics.median(torch_ms[case]) / statistics.median(gemm_ms[case])
    if slow > 5:
        print(f"  torch: its median step is {slow:.1f}x the GEMM-only bound: PyTorch is off its usual "
              "path or the machine is busy; no ratio")
    else:
        print(f"  mlp_benchmark / torch: {med['bench'] / med['torch']:.3f}")
PY
