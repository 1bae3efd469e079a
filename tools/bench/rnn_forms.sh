#!/usr/bin/env bash
# The three forms of the recurrent layers on the actor executor, in one
# command: `rill train --model lstm|gru --rnn fused|unrolled|while` at batch
# 64 and 256, on one and two executor threads (one BLAS thread each), the
# forms alternated (fused, unrolled, while, fused, ...) ROUNDS times. Each run
# trains STEPS steps on preloaded data; the figure is the steady samples/s
# (the first steps left out, as `rill train` reports them). Prints per
# configuration the median samples/s with its spread, the peak RSS, and the
# ratios of the medians: unrolled / fused, while / fused, while / unrolled.
# Usage: tools/bench/rnn_forms.sh [ROUNDS, default 3] [STEPS, default 60]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
steps=${2:-60}
build_dir=${RILL_BUILD_DIR:-build}
RILL_TARGETS=rill_cli bash tools/build.sh >/dev/null
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores before the runs"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

/usr/bin/python3 - "$build_dir/tools/rill/rill" "$rounds" "$steps" <<'PY'
import json, statistics, subprocess, sys
rill, rounds, steps = sys.argv[1], int(sys.argv[2]), sys.argv[3]
forms = ["fused", "unrolled", "while"]

def train(model, batch, threads, form):
    cmd = [rill, "train", "--model", model, "--rnn", form, "--batch", str(batch), "--epochs", "1",
           "--max-steps", steps, "--threads", str(threads), "--blas-threads", "1",
           "--input", "preloaded", "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    run = [json.loads(l) for l in out.splitlines() if l.startswith("{")][-1]
    return run["steady_samples_per_sec"], run["peak_rss_mib"]

print(f"\n{'model':<5} {'batch':>5} {'threads':>7} " +
      " ".join(f"{f + ' samples/s':>24} {'RSS MiB':>7}" for f in forms) +
      f" {'unrolled/fused':>14} {'while/fused':>11} {'while/unrolled':>14}")
for model in ("lstm", "gru"):
    for batch in (64, 256):
        for threads in (1, 2):
            rates = {f: [] for f in forms}
            rss = {f: [] for f in forms}
            for _ in range(rounds):
                for f in forms:
                    rate, mib = train(model, batch, threads, f)
                    rates[f].append(rate)
                    rss[f].append(mib)
            med = {f: statistics.median(rates[f]) for f in forms}
            cells = " ".join(f"{med[f]:>9.0f} ({min(rates[f]):>5.0f}-{max(rates[f]):>5.0f}) "
                             f"{max(rss[f]):>7.0f}" for f in forms)
            print(f"{model:<5} {batch:>5} {threads:>7} {cells} "
                  f"{med['unrolled'] / med['fused']:>14.2f} {med['while'] / med['fused']:>11.2f} "
                  f"{med['while'] / med['unrolled']:>14.2f}", flush=True)
PY
