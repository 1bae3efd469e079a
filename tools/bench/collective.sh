#!/usr/bin/env bash
# Collective data parallelism across processes vs local places vs parameter
# servers, in one command, on one machine (issue 18, "Figures to report").
#
# For each global batch B (default 64 256 1024), with S steps chosen so every
# run trains on about the same number of samples (S = SAMPLES / B, at least 20),
# for each model (default mlp cnn), adam, one OpenBLAS thread per process:
#   local:       rill train --places cpu:2 --threads 2 --blas-threads 1
#                  --epochs 1 --max-steps S --batch B --json --input preloaded
#   collective:  rill launch --nprocs 2 --collective --
#                  --epochs 1 --max-steps S --batch B/2 --threads 1 --blas-threads 1 --json
#   pserver:     rill launch --trainers 2 --pservers 1 -- (the same train flags)
#   ddp:         /usr/bin/python3 tools/bench/torch_ddp.py B S 5 MODEL (PyTorch
#                  DistributedDataParallel, gloo, 2 processes of 1 thread each)
# Same global batch, steps, model and optimizer; real Fashion-MNIST batches.
#
# samples/s, each side leaving its first 5 steps untimed as torch_ddp.py does
# (processes started one after the other meet at their first exchange there):
# local, the JSON "steady_samples_per_sec" (the epoch's training loop after its
# first 5 steps over their wall time; evaluation and start-up outside it);
# collective and pserver, the job's global rate steady_steps * B / max over the
# two processes of the JSON "steady_seconds" (each times the same steps of its
# training loop; the rendezvous, the first broadcast or pull, and evaluation
# are outside it).
# ddp, torch_ddp.py's global rate (its timed loop over the slower rank's
# seconds, warm-up outside), and its plausibility warnings, printed under the
# table when it gives any (then its ratio is not a fair one).
# Ratios: collective / local (issue target at B = 1024: >= 0.9), collective /
# pserver, and collective / DDP (target: >= 1.2 at every batch).
#
# Threads: written for a 2-core machine. Local runs 2 places on 2 scheduler
# threads; collective runs two processes of 1 scheduler thread each (plus
# Gloo's and the transport's I/O threads); pserver adds the server process.
#
# Usage: tools/bench/collective.sh [SAMPLES per run, default 32768] [global batches...]
# RILL_BENCH_MODELS="mlp cnn" picks the models; RILL_BENCH_NO_BUILD=1 skips the build.
set -euo pipefail
cd "$(dirname "$0")/../.."
samples=${1:-32768}
shift || true
batches=("$@")
if [[ ${#batches[@]} -eq 0 ]]; then batches=(64 256 1024); fi
read -r -a models <<<"${RILL_BENCH_MODELS:-mlp cnn}"
build_dir=${RILL_BUILD_DIR:-build}
if [[ -z ${RILL_BENCH_NO_BUILD:-} ]]; then
  RILL_JOBS=${RILL_JOBS:-1} RILL_TARGETS="rill_cli" bash tools/build.sh >/dev/null
fi
rill="$build_dir/tools/rill/rill"
work=$(mktemp -d /tmp/rill-bench-collective-XXXXXX)
trap 'rm -rf "$work"' EXIT

# The global samples/s of a launched job whose JSON lines are prefixed "[<who> N]".
job_rate() {
  python3 - "$1" "$2" "$3" "$4" <<'EOF'
import json, re, sys
log, who, steps, b = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
runs = {}
for line in open(log):
    m = re.match(r"\[" + who + r" (\d+)\] (\{.*\})\s*$", line)
    if m:
        runs[int(m.group(1))] = json.loads(m.group(2))
if len(runs) != 2:
    sys.exit(f"{log}: expected JSON from 2 {who}s, got {sorted(runs)}")
steady = [r["steady_steps"] for r in runs.values()]
if len(set(steady)) != 1 or steady[0] < 1:
    sys.exit(f"{log}: the {who}s timed {steady} steps after their first 5; expected the same, >= 1")
print(steady[0] * b / max(r["steady_seconds"] for r in runs.values()))
EOF
}

launch() {  # name, log, launch flags... -- train flags...
  local name=$1 log=$2
  shift 2
  "$rill" launch "$@" >"$log" 2>&1 || {
    echo "rill launch ($name) failed:" >&2
    tail -20 "$log" >&2
    exit 1
  }
}

printf '%5s %6s %6s %11s %13s %11s %9s %9s %9s %9s\n' model batch steps "local s/s" \
  "collective s/s" "pserver s/s" "ddp s/s" "coll/loc" "coll/ps" "coll/ddp"
warnings=$work/warnings
for model in "${models[@]}"; do
  for b in "${batches[@]}"; do
    if ((b % 2)); then echo "global batch $b is odd; skipped" >&2; continue; fi
    steps=$((samples / b))
    ((steps < 20)) && steps=20
    train=(--epochs 1 --max-steps "$steps" --batch $((b / 2)) --threads 1 --blas-threads 1 --json)
    local_json=$("$rill" train --model "$model" --places cpu:2 --threads 2 --blas-threads 1 \
      --epochs 1 --max-steps "$steps" --batch "$b" --json --input preloaded 2>/dev/null)
    local_rate=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1].strip().splitlines()[-1])["steady_samples_per_sec"])' "$local_json")
    launch collective "$work/c$model$b.log" --nprocs 2 --collective --model "$model" -- "${train[@]}"
    coll_rate=$(job_rate "$work/c$model$b.log" rank "$steps" "$b")
    launch pserver "$work/p$model$b.log" --trainers 2 --pservers 1 --model "$model" \
      --dir "$work/p$model$b" -- "${train[@]}"
    ps_rate=$(job_rate "$work/p$model$b.log" trainer "$steps" "$b")
    /usr/bin/python3 tools/bench/torch_ddp.py "$b" "$steps" 5 "$model" >"$work/d$model$b.json" \
      2>"$work/d$model$b.err" || {
      echo "torch_ddp.py failed ($model, batch $b):" >&2
      tail -20 "$work/d$model$b.err" >&2
      exit 1
    }
    grep "IMPLAUSIBLE" "$work/d$model$b.err" >>"$warnings" || true
    python3 - "$model" "$b" "$steps" "$local_rate" "$coll_rate" "$ps_rate" "$work/d$model$b.json" <<'EOF'
import json, sys
model, b, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
local, coll, ps = (float(x) for x in sys.argv[4:7])
ddp = json.loads(open(sys.argv[7]).read().strip().splitlines()[-1])["samples_per_sec"]
print(f"{model:>5} {b:6d} {steps:6d} {local:11.0f} {coll:13.0f} {ps:11.0f} {ddp:9.0f} "
      f"{coll / local:8.2f}x {coll / ps:8.2f}x {coll / ddp:8.2f}x")
EOF
  done
done
echo "coll/loc = collective global samples/s / local --places cpu:2 samples/s (target at 1024: >= 0.9)"
echo "coll/ps  = collective / parameter-server (2 trainers, 1 server) global samples/s"
echo "coll/ddp = collective / PyTorch DDP (gloo, 2 processes) global samples/s (target: >= 1.2)"
if [[ -s $warnings ]]; then
  echo "The PyTorch baseline was implausible here (its coll/ddp is not a fair ratio):"
  cat "$warnings"
fi
