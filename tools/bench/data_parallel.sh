#!/usr/bin/env bash
# Data parallelism on CPU places, in one command. Per model (the MLP at batch
# 256, the CNN at batch 64) and input (pipeline, preloaded), `rill train` on
# one place and on two, alternated (1, 2, 2', 1, 2, 2', ...) PAIRS times,
# OpenBLAS at one thread per place (--blas-threads 1); 2' is two places with a
# thread decoding or gathering their batches (--decode-threads 1) instead of
# each place its own slice (the default when the places take every core);
# and "2 x cpu", two one-place trainers side by side, each on half the batch
# (twice the steps) reading its own slices: the same per-place batch on the
# same two cores with nothing shared, no merge and no lockstep, so the
# ceiling of the two-place figure here (a place on half the batch runs its
# kernels less efficiently than one on the whole batch; that is in this
# ceiling, not in the executor).
# Each run trains two epochs of at most STEPS steps; the figure is the second
# epoch (the first also pays for first touches of the data and the buffers,
# reported beside it). Prints per
# configuration the median samples/s with its spread (min-max), the cores the
# process kept busy (getrusage user + system over wall, decode and gather
# threads included: "cpu:1" is not quietly using a second core), the median of
# the pairs' 2-place / 1-place ratios, and preloaded / pipeline per place count.
#
# Then, from one traced run per place count (rill trace summarize's time
# split), where a step's time goes, its serial fraction, and a projection past
# the two cores this machine has (actors/README.md, "Data-parallel scaling"):
#   T(P) = S + B + M + C * g / P
# with C the compute kernels of a one-place step, g how much slower the same
# kernels ran with two places running (memory bandwidth shared), S the time
# no place computes and the driver's (between iterations, before the first
# and after the last kernel), M a place's share of the merge (allreduce
# chunks, about constant in P: each place reduces 1/P of the gradients from
# P copies), and B the imbalance: what the two-place step took beyond
# S + M + C g / 2 (a place starting late, one waiting at a barrier for the
# other), taken as constant in P. Last, cpu:4 and cpu:8 on the MLP (oversubscribed here: it shows
# whether anything grows worse than linearly with places), and the peak
# tensor memory of the AllReduce and Reduce strategies on two places.
# Usage: tools/bench/data_parallel.sh [PAIRS, default 5] [MLP STEPS, default 235] [CNN STEPS, default 30]
set -euo pipefail
cd "$(dirname "$0")/../.."
pairs=${1:-5}
mlp_steps=${2:-235}
cnn_steps=${3:-30}
build_dir=${RILL_BUILD_DIR:-build}
RILL_TARGETS=rill_cli bash tools/build.sh >/dev/null
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores before the runs"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
trace_dir=$(mktemp -d)
trap 'rm -rf "$trace_dir"' EXIT

/usr/bin/python3 - "$build_dir/tools/rill/rill" "$pairs" "$mlp_steps" "$cnn_steps" "$trace_dir" <<'PY'
import json, statistics, subprocess, sys
rill, pairs, mlp_steps, cnn_steps, trace_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
models = [("mlp", 256, mlp_steps), ("cnn", 64, cnn_steps)]
inputs = ["pipeline", "preloaded"]

def train_command(model, batch, steps, places, source, extra=()):
    return [rill, "train", "--model", model, "--batch", str(batch), "--epochs", "2", "--max-steps",
            str(steps), "--places", places, "--blas-threads", "1", "--input", source, "--json",
            *extra]

def epochs(out):
    """rill train --json's lines, one per epoch."""
    return [json.loads(l) for l in out.splitlines() if l.startswith("{")]

def train(model, batch, steps, places, source, extra=()):
    cmd = train_command(model, batch, steps, places, source, extra)
    return epochs(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)

def train_side_by_side(model, batch, steps, source):
    """Two one-place trainers at once, each on half the batch for twice the
    steps, reading their own batches as the places of cpu:2 do: what two
    places could reach with nothing shared (no merge, no lockstep), but the
    same per-place batch and the same two cores. Returns one run whose
    samples/s are the two trainers' summed, epoch by epoch."""
    cmd = train_command(model, batch // 2, 2 * int(steps), "cpu", source, ["--decode-threads", "0"])
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode != 0 for p in procs):
        sys.exit(f"a side-by-side trainer failed: {cmd}")
    runs = [epochs(out) for out in outs]
    return [{"samples_per_sec": a["samples_per_sec"] + b["samples_per_sec"],
             "cores_used": a["cores_used"] + b["cores_used"]} for a, b in zip(*runs)]

def per_round(base, other):
    """Each round's samples/s of `other` over `base`'s (second epochs)."""
    return [b[-1]["samples_per_sec"] / a[-1]["samples_per_sec"] for a, b in zip(base, other)]

def spread(values):
    return f"{statistics.median(values):>9.0f} ({min(values):.0f}-{max(values):.0f})"

# Two places run two ways: each place decoding (pipeline) or gathering
# (preloaded) its own slice in its read op, rill train's default when the
# places take every core ("cpu:2"), and a thread of its own doing it for them
# ("cpu:2 thr", --decode-threads 1: the arrangement before that default).
# Last, "2 x cpu": two one-place trainers side by side on half the batch each
# (train_side_by_side), the ceiling of the two-place figure on this machine.
configs = [("cpu", "cpu", []), ("cpu:2", "cpu:2", []),
           ("cpu:2 thr", "cpu:2", ["--decode-threads", "1"]), ("2 x cpu", None, [])]
print(f"\n{'model':<5} {'input':<10} {'places':<9} {'samples/s, epoch 2':>26} {'epoch 1':>9} "
      f"{'cores':>6}   / 1 place, per pair")
medians = {}
for model, batch, steps in models:
    for source in inputs:
        runs = {name: [] for name, _, _ in configs}
        for _ in range(pairs):
            for name, places, extra in configs:
                runs[name].append(train(model, batch, steps, places, source, extra)
                                  if places else train_side_by_side(model, batch, steps, source))
        for name, _, _ in configs:
            last = [r[-1]["samples_per_sec"] for r in runs[name]]
            first = [r[0]["samples_per_sec"] for r in runs[name]]
            cores = statistics.median(r[-1]["cores_used"] for r in runs[name])
            medians[(model, source, name)] = statistics.median(last)
            tail = ""
            if name != "cpu":
                ratios = per_round(runs["cpu"], runs[name])
                tail = (f"   median {statistics.median(ratios):.2f}x "
                        f"({min(ratios):.2f}-{max(ratios):.2f}"
                        f"{'; target >= 1.75x' if name == 'cpu:2' else ''})")
            if name == "2 x cpu":
                shares = per_round(runs[name], runs["cpu:2"])
                tail += (f"; cpu:2 reaches {statistics.median(shares):.2f} of it "
                         f"({min(shares):.2f}-{max(shares):.2f})")
            print(f"{model:<5} {source:<10} {name:<9} {spread(last):>26} "
                  f"{statistics.median(first):>9.0f} {cores:>6.2f}{tail}", flush=True)
        gains = per_round(runs["cpu:2 thr"], runs["cpu:2"])
        print(f"{model} {source}: places reading their own slices / a thread for them, per pair: "
              f"median {statistics.median(gains):.2f}x ({min(gains):.2f}-{max(gains):.2f})")
    for name, _, _ in configs:
        ratio = medians[(model, "preloaded", name)] / medians[(model, "pipeline", name)]
        print(f"{model} {name}: preloaded / pipeline = {ratio:.2f} (target >= 1.0)")

def split(model, batch, steps, places, extra=()):
    path = f"{trace_dir}/{model}-{places.replace(':', '')}-{len(extra)}.json"
    # Up to 20 steps of the second epoch (the figures' epoch: the first one
    # also pays for first touches), past its first quarter; --trace-skip
    # counts global steps.
    quarter = max(1, int(steps) // 4)
    skip = int(steps) + quarter
    count = max(1, min(20, int(steps) - quarter - 1))
    train(model, batch, steps, places, "pipeline",
          [*extra, "--trace", path, "--trace-skip", str(skip), "--trace-steps", str(count)])
    out = subprocess.run([rill, "trace", "summarize", "--json", path], check=True,
                         capture_output=True, text=True).stdout
    t = json.loads(out)["time_split"]
    n = t["iterations"]
    return {k: (v / n if k.endswith("_us") else v) for k, v in t.items()}

print("\ntime split of a traced step (pipeline input, µs per step)")
print(f"{'model':<5} {'places':<9} {'step':>8} {'all':>8} {'some':>8} {'none':>8} {'driver':>8} "
      f"{'compute':>8} {'merge':>7} {'serial':>7}")
projection = []
for model, batch, steps in models:
    s = {name: split(model, batch, steps, places, extra) for name, places, extra in configs
         if places}
    for places, t in s.items():
        driver = t["between_us"] + t["before_first_us"] + t["after_last_us"]
        compute = t["kernel_us"] - t["merge_us"]
        print(f"{model:<5} {places:<9} {t['total_us']:>8.0f} {t['all_places_us']:>8.0f} "
              f"{t['some_places_us']:>8.0f} {t['no_place_us']:>8.0f} {driver:>8.0f} "
              f"{compute:>8.0f} {t['merge_us']:>7.0f} {100 * t['serial_fraction']:>6.1f}%")
    one, two = s["cpu"], s["cpu:2"]
    C = one["kernel_us"] - one["merge_us"]
    g = (two["kernel_us"] - two["merge_us"]) / C
    S = two["between_us"] + two["before_first_us"] + two["after_last_us"] + two["no_place_us"]
    M = two["merge_us"] / 2
    B = max(0.0, two["total_us"] - S - M - C * g / 2)
    T1 = one["total_us"]
    model_T = lambda P: S + B + M + C * g / P
    serial = (S + B + M) / model_T(2)
    cells = ", ".join(f"cpu:{P} {T1 / model_T(P):.2f}x" for P in (2, 4, 8, 16, 32))
    projection.append(f"{model}: C {C:.0f} µs, g {g:.2f}, S {S:.0f} µs, B {B:.0f} µs, M {M:.0f} µs "
                      f"(serial {100 * serial:.1f}% of the 2-place step); {cells}")
print("\nprojection T(P) = S + B + M + C * g / P, speedup T(1) / T(P) (the traced one-place step; "
      "cpu:2 is the traced two-place step by construction)")
for line in projection:
    print(" ", line)

print("\nmore places than cores (MLP, pipeline, oversubscribed on this machine)")
for places in ("cpu", "cpu:2", "cpu:4", "cpu:8"):
    r = train("mlp", 256, mlp_steps, places, "pipeline")
    print(f"  {places:<6} {r[-1]['samples_per_sec']:>9.0f} samples/s, {r[-1]['cores_used']:.2f} cores, "
          f"{r[-1]['merges_per_step']} merges per step", flush=True)

print("\npeak tensor memory on two places, by strategy (MLP)")
for strategy in ("allreduce", "reduce"):
    r = train("mlp", 256, mlp_steps, "cpu:2", "pipeline", ["--strategy", strategy])
    print(f"  {strategy:<9} {r[-1]['peak_tensor_mib']} MiB, {r[-1]['samples_per_sec']:.0f} samples/s, "
          f"test accuracy {r[-1]['test_accuracy']}")
PY
