#!/usr/bin/env bash
# The input pipeline against preloaded data, in one command: `rill train` on
# the MLP (actor executor) with --input pipeline and --input preloaded,
# alternated ROUNDS times; prints each run's training samples/s, the medians,
# their ratio (pipeline / preloaded; target >= 1.0) and how many steps had to
# wait for their batch (the pipeline's counters; target: none after the first).
# Usage: tools/bench/pipeline_vs_preloaded.sh [ROUNDS, default 3] [EPOCHS, default 2] [extra rill train flags]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
epochs=${2:-2}
shift $(( $# > 2 ? 2 : $# ))
bash tools/build.sh >/dev/null
rill="${RILL_BUILD_DIR:-build}/tools/rill/rill"

python3 - "$rill" "$rounds" "$epochs" "$@" <<'PY'
import json, statistics, subprocess, sys
rill, rounds, epochs, extra = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
rates = {"pipeline": [], "preloaded": []}
waited = ready = 0
print(f"{'input':<10} {'round':>5} {'samples/s':>11} {'loss (last epoch)':>18} {'steps waited':>13}")
for r in range(rounds):
    for mode in ("pipeline", "preloaded"):
        out = subprocess.run([rill, "train", "--model", "mlp", "--epochs", str(epochs), "--json",
                              "--input", mode, *extra], check=True, capture_output=True, text=True).stdout
        lines = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
        samples = sum(l["steps"] for l in lines)  # steps; weight each epoch's rate by its steps
        rate = sum(l["samples_per_sec"] * l["steps"] for l in lines) / samples
        rates[mode].append(rate)
        w = sum(l["input_waited"] for l in lines)
        if mode == "pipeline":
            waited += w
            ready += sum(l["input_ready"] for l in lines)
        print(f"{mode:<10} {r + 1:>5} {rate:>11.0f} {lines[-1]['train_loss']:>18.6f} {w if mode == 'pipeline' else '-':>13}")
p, q = statistics.median(rates["pipeline"]), statistics.median(rates["preloaded"])
print(f"median samples/s: pipeline {p:.0f}, preloaded {q:.0f}; pipeline / preloaded = {p / q:.3f} (target >= 1.0)")
print(f"pipeline steps whose batch was already in its channel: {ready}; steps that waited: {waited} "
      f"over {rounds} runs (target: at most the first step of each run)")
PY
