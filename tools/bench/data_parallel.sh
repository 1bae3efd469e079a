#!/usr/bin/env bash
# Data parallelism on CPU places, in one command: `rill train` at batch 256 on
# one place and on two, for the MLP and the CNN, side by side, and the peak
# tensor memory of the AllReduce and Reduce strategies. Each run sets OpenBLAS
# to one thread per place (--blas-threads 1), so one place uses one core and
# two places two.
# Usage: tools/bench/data_parallel.sh [MLP steps, default 300] [CNN steps, default 30]
set -euo pipefail
cd "$(dirname "$0")/../.."
mlp_steps=${1:-300}
cnn_steps=${2:-30}
bash tools/build.sh >/dev/null
rill="${RILL_BUILD_DIR:-build}/tools/rill/rill"

run() {  # model steps places strategy -> one JSON line
  "$rill" train --model "$1" --batch 256 --epochs 1 --max-steps "$2" --places "$3" \
    --strategy "$4" --blas-threads 1 --json
}
field() { python3 -c "import json,sys; print(json.loads(sys.stdin.read())['$1'])"; }

printf '%-5s %-9s %-8s %12s %16s %10s\n' model strategy places samples/s "peak tensor MiB" test_acc
for model in mlp cnn; do
  steps=$mlp_steps
  if [[ $model == cnn ]]; then steps=$cnn_steps; fi
  declare -A rate
  for strategy in allreduce reduce; do
    for places in cpu cpu:2; do
      line=$(run "$model" "$steps" "$places" "$strategy")
      r=$(echo "$line" | field samples_per_sec)
      rate[$strategy.$places]=$r
      printf '%-5s %-9s %-8s %12.0f %16s %10s\n' "$model" "$strategy" "$places" "$r" \
        "$(echo "$line" | field peak_tensor_mib)" "$(echo "$line" | field test_accuracy)"
    done
  done
  for strategy in allreduce reduce; do
    awk -v m="$model" -v s="$strategy" -v a="${rate[$strategy.cpu]}" -v b="${rate[$strategy.cpu:2]}" \
      'BEGIN { printf "%s %s: 2 places / 1 place = %.2fx (target 1.8x)\n", m, s, b / a }'
  done
  unset rate
done
