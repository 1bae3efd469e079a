#!/usr/bin/env bash
# Gradient compression (int8/int4 with error feedback): what it costs in
# accuracy and what it buys in bytes and throughput, in one command, on one
# machine. Three parts, each run for --gradient-compression C in the order shown.
#
# 1. Accuracy, 2 places in one process (C = none int8 int4):
#      rill train --model mlp --places cpu:2 --threads 2 --blas-threads 1
#        --epochs E --batch 64 --lr 1e-3 --optimizer adam --input preloaded
#        --gradient-compression C --json
#      --seed K
#    One JSON line per epoch; the last one is used. Parts 1 and 2 run once per
#    seed K in $RILL_BENCH_SEEDS (default "0 1 2"): the seed picks the initial
#    weights and the shuffling, and one run's accuracy moves by about ±0.4
#    point from seed to seed at 5 epochs, as much as the int8 target itself.
# 2. Accuracy, 2 trainers + 1 parameter server on loopback (C = none int8 int4):
#      rill launch --trainers 2 --pservers 1 --model mlp --optimizer adam --lr 1e-3 --
#        --epochs E --batch 32 --threads 1 --blas-threads 1 --gradient-compression C --json
#    Global batch 64 (2 trainers x 32), same optimizer and learning rate as part 1
#    (rill launch takes --optimizer/--lr itself and gives them to the transpiler,
#    which puts the optimizer on the server, and to the trainers). Trainer 0's
#    last epoch is used for accuracy and bytes.
# 3. Throughput, distributed vs local (C = none int8), global batch B, S steps
#    (S = 32768 / B, at least 20), the same commands as tools/bench/distributed.sh
#    plus --gradient-compression C:
#      local:        rill train --model mlp --places cpu:2 --threads 2 --blas-threads 1
#                      --epochs 1 --max-steps S --batch B --json --input preloaded
#                      --gradient-compression C
#      distributed:  rill launch --trainers 2 --pservers 1 --model mlp --
#                      --epochs 1 --max-steps S --batch B/2 --threads 1 --blas-threads 1
#                      --json --gradient-compression C
#
# What each figure means:
# - test acc %: the JSON "test_accuracy" (fraction of the 10k test images right
#   after the last epoch) x 100.
# - test acc %: the mean over the seeds; d vs none: mean over the seeds of
#   (acc_C - acc_none) x 100 for the same seed, in percentage points, with each
#   seed's difference after it. Targets (issue): |d| <= 0.5 point for int8,
#   <= 1.5 points for int4; PASS/FAIL per row. The script prints everything,
#   then exits 1 if any row failed.
# - bytes/step: gradient bytes per step as they travel (compressed codes plus
#   scales); f32 bytes/step: the same gradients as float32. Part 1: the JSON
#   "merge_bytes_per_step" / "merge_raw_bytes_per_step" (the merges between the
#   two places, last step of the epoch); part 2: "sent_bytes_per_step" /
#   "sent_raw_bytes_per_step" (pushed to the servers by ONE trainer, averaged
#   over the epoch). ratio = f32 bytes / bytes. Only gradients of 4096 elements
#   or more are compressed, so the ratio is a little under 4x (int8) or 8x (int4).
# - samples/s: part 1 the JSON "samples_per_sec" (training loop of the last
#   epoch / its wall time; evaluation outside it); parts 2 and 3 the job's
#   GLOBAL rate, steps x global batch / max over trainers of the JSON "seconds"
#   (as in tools/bench/distributed.sh).
# - part 3 ratio: distributed global samples/s / local samples/s with the SAME
#   compression. Compression also applies to the in-process merge of the local
#   run, so local int8 is not the local job anyone would run: the column
#   "vs f32 local" divides by the local run WITHOUT compression, the fair
#   baseline, and the closing yes/no line compares those (none vs int8 against
#   float32 local). One run each, on a shared 2-core machine: expect a few
#   percent of noise in the throughput figures.
#
# 4. The same distributed job across a veth pair shaped to 1 and 10 Gbit/s
#    (tools/bench/compression_link.sh; needs root, skipped otherwise).
#
# Threads: as in tools/bench/distributed.sh (2 cores: local 2 places on 2
# scheduler threads; distributed 2 trainers x 1 thread + the server).
#
# Usage: tools/bench/compression.sh [EPOCHS, default 5] [global batch for part 3, default 64]
# Set RILL_BENCH_NO_BUILD=1 to skip the build step.
set -euo pipefail
cd "$(dirname "$0")/../.."
epochs=${1:-5}
batch=${2:-64}
if ((batch % 2)); then echo "global batch $batch is odd" >&2; exit 2; fi
build_dir=${RILL_BUILD_DIR:-build}
if [[ -z ${RILL_BENCH_NO_BUILD:-} ]]; then
  RILL_JOBS=${RILL_JOBS:-1} RILL_TARGETS=rill_cli bash tools/build.sh >/dev/null
fi
rill="$build_dir/tools/rill/rill"
work=$(mktemp -d /tmp/rill-bench-compression-XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=0
seeds=(${RILL_BENCH_SEEDS:-0 1 2})

# run_local NAME ARGS...: rill train ARGS, stdout to $work/NAME.out; stops the script on failure.
run_local() {
  local name=$1
  shift
  "$rill" train "$@" >"$work/$name.out" 2>"$work/$name.err" || {
    echo "rill train failed ($name):" >&2
    tail -20 "$work/$name.err" >&2
    exit 1
  }
}

# run_launch NAME ARGS...: rill launch ARGS, stdout and stderr to $work/NAME.log.
run_launch() {
  local name=$1
  shift
  "$rill" launch "$@" >"$work/$name.log" 2>&1 || {
    echo "rill launch failed ($name):" >&2
    tail -20 "$work/$name.log" >&2
    exit 1
  }
}

# accuracy_table local|launch GLOBAL_BATCH: the table of part 1 or 2 from $work/{a,l}C.*;
# exits 1 when a row misses its target.
accuracy_table() {
  python3 - "$1" "$2" "$work" "${seeds[@]}" <<'EOF'
import json, re, sys
kind, global_batch, work = sys.argv[1], int(sys.argv[2]), sys.argv[3]
seeds = sys.argv[4:]
targets = {"int8": 0.5, "int4": 1.5}  # points of |acc_C - acc_none|

def last_local(c, seed):
    lines = [l for l in open(f"{work}/a{c}_s{seed}.out") if l.startswith("{")]
    if not lines:
        sys.exit(f"no JSON from rill train --gradient-compression {c}")
    j = json.loads(lines[-1])
    return (j["test_accuracy"], j["merge_bytes_per_step"], j["merge_raw_bytes_per_step"],
            j["samples_per_sec"])

def last_launch(c, seed):
    trainers = {}
    for line in open(f"{work}/l{c}_s{seed}.log"):
        m = re.match(r"\[trainer (\d+)\] (\{.*\})\s*$", line)
        if m:
            trainers[int(m.group(1))] = json.loads(m.group(2))  # the last epoch wins
    if sorted(trainers) != [0, 1]:
        sys.exit(f"expected JSON from 2 trainers with {c}, got {sorted(trainers)}")
    t0 = trainers[0]
    rate = t0["steps"] * global_batch / max(t["seconds"] for t in trainers.values())
    return t0["test_accuracy"], t0["sent_bytes_per_step"], t0["sent_raw_bytes_per_step"], rate

get = last_local if kind == "local" else last_launch
runs = {c: [get(c, seed) for seed in seeds] for c in ("none", "int8", "int4")}
mean = lambda values: sum(values) / len(values)
print(f"{'compression':>11} {'test acc %':>10} {'d vs none':>10} {'bytes/step':>12} "
      f"{'f32 bytes/step':>14} {'ratio':>7} {'samples/s':>10}  target   (d per seed "
      f"{' '.join(seeds)})")
bad = 0
for c, per_seed in runs.items():
    ds = [(run[0] - base[0]) * 100 for run, base in zip(per_seed, runs["none"])]
    d = mean(ds)
    acc = mean([run[0] for run in per_seed])
    sent, raw = per_seed[-1][1], per_seed[-1][2]
    rate = mean([run[3] for run in per_seed])
    ratio = f"{raw / sent:6.2f}x" if sent else "    n/a"
    if c in targets:
        ok = abs(d) <= targets[c] + 1e-9
        bad += not ok
        verdict = f"|d| <= {targets[c]:.1f}  {'PASS' if ok else 'FAIL'}"
    else:
        verdict = "baseline"
    print(f"{c:>11} {acc * 100:10.2f} {d:+10.2f} {sent:12.0f} {raw:14.0f} {ratio:>7} "
          f"{rate:10.0f}  {verdict}   ({' '.join(f'{x:+.2f}' for x in ds)})")
sys.exit(1 if bad else 0)
EOF
}

echo "1. accuracy, 2 places (rill train --places cpu:2), $epochs epochs, batch 64, adam lr 1e-3," \
  "seeds ${seeds[*]}"
for seed in "${seeds[@]}"; do
  for c in none int8 int4; do
    run_local "a${c}_s$seed" --model mlp --places cpu:2 --threads 2 --blas-threads 1 \
      --epochs "$epochs" --batch 64 --lr 1e-3 --optimizer adam --input preloaded \
      --gradient-compression "$c" --seed "$seed" --json
  done
done
accuracy_table local 64 || failed=1
echo "bytes/step: merged between the 2 places per step (last step); f32: the same as float32"

echo
echo "2. accuracy, 2 trainers + 1 server on loopback (rill launch), $epochs epochs," \
  "global batch 64 (2 x 32), adam lr 1e-3, seeds ${seeds[*]}"
for seed in "${seeds[@]}"; do
  for c in none int8 int4; do
    run_launch "l${c}_s$seed" --trainers 2 --pservers 1 --model mlp --optimizer adam --lr 1e-3 \
      --seed "$seed" --dir "$work/l${c}_s$seed" -- --epochs "$epochs" --batch 32 --threads 1 \
      --blas-threads 1 --gradient-compression "$c" --json
  done
done
accuracy_table launch 64 || failed=1
echo "bytes/step: pushed to the server per step by one trainer (trainer 0); samples/s: global"

echo
steps=$((32768 / batch))
((steps < 20)) && steps=20
echo "3. throughput, distributed vs local, global batch $batch, $steps steps"
for c in none int8; do
  run_local "t$c" --model mlp --places cpu:2 --threads 2 --blas-threads 1 --epochs 1 \
    --max-steps "$steps" --batch "$batch" --json --input preloaded --gradient-compression "$c"
  run_launch "d$c" --trainers 2 --pservers 1 --model mlp --dir "$work/d$c" -- \
    --epochs 1 --max-steps "$steps" --batch $((batch / 2)) --threads 1 --blas-threads 1 --json \
    --gradient-compression "$c"
done
python3 - "$batch" "$steps" "$work" <<'EOF'
import json, re, sys
b, steps, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

def local_rate(c):
    lines = [l for l in open(f"{work}/t{c}.out") if l.startswith("{")]
    return json.loads(lines[-1])["samples_per_sec"]

def dist_rate(c):
    trainers = {}
    for line in open(f"{work}/d{c}.log"):
        m = re.match(r"\[trainer (\d+)\] (\{.*\})\s*$", line)
        if m:
            trainers[int(m.group(1))] = json.loads(m.group(2))
    if len(trainers) != 2:
        sys.exit(f"expected JSON from 2 trainers with {c}, got {sorted(trainers)}")
    return steps * b / max(t["seconds"] for t in trainers.values())

f32_local = local_rate("none")
print(f"{'compression':>11} {'local s/s':>10} {'dist global s/s':>15} {'ratio':>7} "
      f"{'vs f32 local':>12}")
fair = {}
same = {}
for c in ("none", "int8"):
    loc, dist = local_rate(c), dist_rate(c)
    same[c], fair[c] = dist / loc, dist / f32_local
    print(f"{c:>11} {loc:10.0f} {dist:15.0f} {same[c]:6.2f}x {fair[c]:11.2f}x")
print("ratio = distributed / local with the same compression; "
      "vs f32 local = distributed / local without compression (the fair baseline)")
print(f"compression improves the distributed/local ratio: "
      f"{'yes' if fair['int8'] > fair['none'] else 'no'} "
      f"(none {fair['none']:.2f}x \u2192 int8 {fair['int8']:.2f}x, against float32 local; "
      f"against local int8: {same['int8']:.2f}x)")
EOF

echo
echo "4. throughput across a link with a bandwidth limit (tools/bench/compression_link.sh:"
echo "   network namespaces, tc tbf; loopback above is a memory copy that compression cannot beat)"
for rate in 1gbit 10gbit; do
  RILL_BENCH_NO_BUILD=1 bash tools/bench/compression_link.sh "$rate" "$batch" 200 || {
    status=$?
    ((status == 77)) || failed=1
  }
done

if ((failed)); then
  echo
  echo "FAIL: an accuracy target was missed or a run failed (see above)"
  exit 1
fi
