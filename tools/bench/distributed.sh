#!/usr/bin/env bash
# Distributed training throughput, in one command, on one machine: Rill's
# parameter-server job (on Rill's transport) against local training and against
# PyTorch DistributedDataParallel (issue 17's figures).
#
# For each global batch B (default 64 256 1024), with S steps chosen so every
# run trains on about the same number of samples (S = SAMPLES / B, at least 20):
#   local:     rill train --model mlp --places cpu:2 --threads 2 --blas-threads 1
#                --epochs 1 --max-steps S --batch B --json --input preloaded
#   rill:      rill launch --trainers 2 --pservers 1 --model mlp --
#                --epochs 1 --max-steps S --batch B/2 --threads 1 --blas-threads 1 --json
#   ddp:       /usr/bin/python3 tools/bench/torch_ddp.py B S
#                (gloo, 2 processes on loopback, B/2 rows each, the same MLP
#                built as torch_mlp.py builds it, Adam lr 1e-3, real
#                Fashion-MNIST batches; one torch and one OpenBLAS thread per
#                process; 5 warm-up steps untimed; see its header)
# Same global batch, same number of steps, same model and optimizer (adam).
#
# What "samples/s" means here (each side leaves its first 5 steps untimed, as
# torch_ddp.py does: in them the processes, started one after the other, meet
# at their first exchange, and a trainer that waited for the other's first push
# would otherwise count that wait as training time):
# - local: the JSON "steady_samples_per_sec" (samples of the epoch's training
#   loop after its first 5 steps / their wall time; evaluation and start-up
#   are outside it).
# - rill: the job's GLOBAL rate, steady_steps * B / max over trainers of the
#   JSON "steady_seconds" (each trainer times the same steps of its training
#   loop: forward, backward, send, recv; start-up, connecting, the initial
#   pull and evaluation are outside it). The whole loop's rate, "seconds"
#   with the first 5 steps in it, is printed beside it.
# - ddp: S * B / the slower rank's time for its S timed steps (after 5
#   untimed warm-up steps and a barrier).
# Ratios and the issue's targets: rill/DDP >= 0.7 at B=64 and >= 1.0 at 256
# and 1024; rill/local >= 0.8 at 1024.
#
# Then the per-step split of the distributed trainers (ms per step, mean of
# the two trainers): "step" is the trainer's loop seconds / S; "send" the
# send ops' time in TrainerClient::Push (encoding the gradients and handing
# them to the links); "wait" the time its recv ops were pending after the
# step's last push (JSON send_seconds, wait_seconds); compute = step - send -
# wait (forward, backward, gathering the batch, scheduling). In sync mode
# "wait" holds the server's round trip and update AND the time spent waiting
# for the slower trainer's push.
#
# Then the DDP baseline's sanity figures (single-process torch on the same
# global batch, one gloo all-reduce of the gradients alone, the loss over the
# run), and torch_ddp.py's warnings when the baseline was implausible.
#
# Threads: the machine this was written for has 2 cores. Local runs 2 places on
# 2 scheduler threads, OpenBLAS single-threaded. Distributed runs two trainer
# processes with 1 scheduler thread and 1 OpenBLAS thread each, plus the
# parameter server (`rill launch` starts it with its default of 2 scheduler
# threads; it is mostly idle while the trainers compute), all on the same cores.
# Run it on an otherwise quiet machine: the load average is printed first, with
# a warning when it is above half the cores.
#
# Then runs build/tools/bench/net_latency (wire vs raw TCP round trips) if built.
#
# Usage: tools/bench/distributed.sh [SAMPLES per run, default 32768] [global batches...]
# Set RILL_BENCH_NO_BUILD=1 to skip the build step, RILL_BUILD_DIR for a build
# directory other than build/.
# Exit status: 1 when a run failed or the DDP baseline was implausible (after
# printing everything); a missed target is printed, not an error.
set -euo pipefail
cd "$(dirname "$0")/../.."
samples=${1:-32768}
shift || true
batches=("$@")
if [[ ${#batches[@]} -eq 0 ]]; then batches=(64 256 1024); fi
build_dir=${RILL_BUILD_DIR:-build}
if [[ -z ${RILL_BENCH_NO_BUILD:-} ]]; then
  RILL_JOBS=${RILL_JOBS:-1} RILL_TARGETS="rill_cli net_latency" bash tools/build.sh >/dev/null
fi
rill="$build_dir/tools/rill/rill"
work=$(mktemp -d /tmp/rill-bench-distributed-XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores before the runs"
if awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v n="$(nproc)" 'BEGIN { exit !(l > n / 2) }'; then
  echo "WARNING: the machine is busy (1-minute load above half its cores): every run here" \
    "shares the cores with others, so the figures and ratios below are not reliable"
fi

for b in "${batches[@]}"; do
  if ((b % 2)); then echo "global batch $b is odd; skipped" >&2; continue; fi
  steps=$((samples / b))
  ((steps < 20)) && steps=20
  "$rill" train --model mlp --places cpu:2 --threads 2 --blas-threads 1 \
    --epochs 1 --max-steps "$steps" --batch "$b" --json --input preloaded \
    2>/dev/null | tail -1 >"$work/local$b.json"
  "$rill" launch --trainers 2 --pservers 1 --model mlp --dir "$work/rill$b" -- \
    --epochs 1 --max-steps "$steps" --batch $((b / 2)) --threads 1 --blas-threads 1 --json \
    >"$work/rill$b.log" 2>&1 || {
    echo "rill launch failed at batch $b:" >&2
    tail -20 "$work/rill$b.log" >&2
    exit 1
  }
  /usr/bin/python3 tools/bench/torch_ddp.py "$b" "$steps" >"$work/ddp$b.json" 2>"$work/ddp$b.err" || {
    echo "torch_ddp.py failed at batch $b:" >&2
    tail -20 "$work/ddp$b.err" >&2
    exit 1
  }
  echo "$b $steps" >>"$work/batches"
done

status=0
python3 - "$work" <<'EOF' || status=$?
import json, re, sys
work = sys.argv[1]
TARGET_DDP = {64: 0.7, 256: 1.0, 1024: 1.0}
TARGET_LOCAL = {1024: 0.8}


def trainers(path):
    found = {}
    for line in open(path):
        m = re.match(r"\[trainer (\d+)\] (\{.*\})\s*$", line)
        if m:
            found[int(m.group(1))] = json.loads(m.group(2))
    if len(found) != 2:
        sys.exit(f"{path}: expected JSON from 2 trainers, got {sorted(found)}")
    return list(found.values())


def verdict(ratio, target):
    """The ratio, and the issue's target for it when there is one."""
    text = f"{ratio:5.2f}x"
    if target is not None:
        text += f" (>={target:.1f} {'ok' if ratio >= target else 'MISS'})"
    return text.ljust(18)


runs = []
for line in open(f"{work}/batches"):
    b, steps = map(int, line.split())
    run = {"b": b, "steps": steps,
           "local": json.loads(open(f"{work}/local{b}.json").read())["steady_samples_per_sec"],
           "ddp": json.loads(open(f"{work}/ddp{b}.json").read().strip().splitlines()[-1]),
           "ddp_err": open(f"{work}/ddp{b}.err").read().strip()}
    t = trainers(f"{work}/rill{b}.log")
    if len({x["steady_steps"] for x in t}) != 1 or t[0]["steady_steps"] < 1:
        sys.exit(f"batch {b}: the trainers timed {[x['steady_steps'] for x in t]} steps "
                 "after their first 5; expected the same number, >= 1")
    run["rill"] = t[0]["steady_steps"] * b / max(x["steady_seconds"] for x in t)
    run["rill_all"] = steps * b / max(x["seconds"] for x in t)
    run["rill_split"] = [
        sum(x[k] for x in t) / len(t) / steps * 1e3
        for k in ("seconds", "send_seconds", "wait_seconds")]
    runs.append(run)

print("\nglobal samples/s (2 trainers + 1 server vs local cpu:2 vs PyTorch DDP, 2 processes)")
print("(rill: after each trainer's first 5 steps; rill all: every step, the start-up skew included)")
print(f"{'batch':>6} {'steps':>6} {'local':>9} {'rill':>9} {'rill all':>9} {'DDP':>9}  "
      f"{'rill/DDP':<18} {'rill/local':<18}")
for r in runs:
    ddp = r["ddp"]["samples_per_sec"]
    print(f"{r['b']:6d} {r['steps']:6d} {r['local']:9.0f} {r['rill']:9.0f} {r['rill_all']:9.0f} "
          f"{ddp:9.0f}  {verdict(r['rill'] / ddp, TARGET_DDP.get(r['b']))} "
          f"{verdict(r['rill'] / r['local'], TARGET_LOCAL.get(r['b']))}")

print("\nper-step split of the distributed trainers, ms (mean of the 2 trainers; "
      "compute = step - send - wait)")
print(f"{'batch':>6} {'step':>8} {'compute':>8} {'send':>8} {'wait':>8}")
for r in runs:
    step, send, wait = r["rill_split"]
    print(f"{r['b']:6d} {step:8.3f} {step - send - wait:8.3f} {send:8.3f} {wait:8.3f}")

print("\nDDP baseline sanity (single: one torch process on the whole global batch; "
      "all-reduce: the gradients alone over gloo)")
print(f"{'batch':>6} {'DDP ms/step':>12} {'single ms':>10} {'DDP/single':>10} "
      f"{'allreduce ms':>12} {'loss first->last':>18}")
implausible = False
for r in runs:
    d = r["ddp"]
    print(f"{r['b']:6d} {d['step_ms']:12.3f} {d['single_step_ms']:10.3f} "
          f"{d['samples_per_sec'] / d['single_samples_per_sec']:9.2f}x {d['allreduce_ms']:12.3f} "
          f"{d['first_loss']:8.4f}->{d['last_loss']:.4f}")
    if d["warnings"]:
        implausible = True
        for w in d["warnings"]:
            print(f"  batch {r['b']}: DDP baseline IMPLAUSIBLE: {w}")
    other = [l for l in r["ddp_err"].splitlines() if not l.startswith("torch_ddp: IMPLAUSIBLE")]
    if other:
        print(f"  batch {r['b']}: torch_ddp.py also said: " + "\n    ".join(other))
sys.exit(1 if implausible else 0)
EOF

if [[ -x $build_dir/tools/bench/net_latency ]]; then
  echo
  echo "net_latency (round trips over loopback between two processes):"
  "$build_dir/tools/bench/net_latency"
fi
exit $status
