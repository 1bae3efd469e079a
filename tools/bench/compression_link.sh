#!/usr/bin/env bash
# Gradient compression over a link with a bandwidth limit: what loopback
# cannot show. Two network namespaces joined by a veth pair whose two ends
# are each shaped by a token bucket (tc tbf: RATE, default 1gbit, bursts of
# 256 KB, 2 ms at 1 Gbit/s) — a parameter-server cluster's network, not a
# memory copy:
#   ns rill_bench_a (10.232.0.1): rill pserver (MLP, adam, 2 trainers)
#   ns rill_bench_b (10.232.0.2): rill train --role trainer, ids 0 and 1, each
#     --batch B/2 --epochs 1 --max-steps S --threads 1 --blas-threads 1 --json
#     --gradient-compression C          for C in none int8 int4
# and, for the ratio, the local job on the same machine with no network:
#   rill train --model mlp --places cpu:2 --threads 2 --blas-threads 1
#     --epochs 1 --max-steps S --batch B --input preloaded --json
# Figures: global samples/s = S * B / the slower trainer's JSON "seconds"
# (its training loop: forward, backward, send, recv); ratio = that / the
# local float32 samples/s; bytes up = a trainer's "sent_bytes_per_step"
# (parameters come back as float32 either way: 940,584 bytes a step).
# Needs root and iproute2 (ip, tc with tbf); otherwise it says why and exits 77.
#
# Usage: tools/bench/compression_link.sh [RATE, default 1gbit] [global batch, default 64]
#        [steps, default 200]
# Set RILL_BENCH_NO_BUILD=1 to skip the build step.
set -euo pipefail
cd "$(dirname "$0")/../.."
rate=${1:-1gbit}
batch=${2:-64}
steps=${3:-200}
build_dir=${RILL_BUILD_DIR:-build}
if [[ -z ${RILL_BENCH_NO_BUILD:-} ]]; then
  RILL_JOBS=${RILL_JOBS:-1} RILL_TARGETS=rill_cli bash tools/build.sh >/dev/null
fi
rill="$build_dir/tools/rill/rill"
ns_a=rill_bench_a
ns_b=rill_bench_b
addr_a=10.232.0.1
addr_b=10.232.0.2
endpoint=$addr_a:${RILL_BENCH_PORT:-47232}
token=bench-token

skip() {
  echo "compression_link.sh skipped: $*"
  exit 77
}
command -v ip >/dev/null && command -v tc >/dev/null || skip "no ip/tc (install iproute2)"
[[ $(id -u) -eq 0 ]] || skip "not root: network namespaces need CAP_SYS_ADMIN"

work=$(mktemp -d /tmp/rill-bench-link-XXXXXX)
server_pid=
cleanup() {
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  ip netns del "$ns_a" 2>/dev/null
  ip netns del "$ns_b" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
ip netns del "$ns_a" 2>/dev/null || true
ip netns del "$ns_b" 2>/dev/null || true
ip netns add "$ns_a" 2>/dev/null || skip "ip netns add failed (no CAP_SYS_ADMIN?)"
ip netns add "$ns_b"
ip -n "$ns_a" link add veth_a type veth peer name veth_b 2>/dev/null || skip "no veth support"
ip -n "$ns_a" link set veth_b netns "$ns_b"
ip -n "$ns_a" addr add "$addr_a/24" dev veth_a
ip -n "$ns_b" addr add "$addr_b/24" dev veth_b
for ns in "$ns_a" "$ns_b"; do ip -n "$ns" link set lo up; done
ip -n "$ns_a" link set veth_a up
ip -n "$ns_b" link set veth_b up
tc -n "$ns_a" qdisc add dev veth_a root tbf rate "$rate" burst 256kb latency 200ms 2>/dev/null ||
  skip "tc tbf is not available (kernel module sch_tbf)"
tc -n "$ns_b" qdisc add dev veth_b root tbf rate "$rate" burst 256kb latency 200ms

"$rill" transpile --model mlp --trainers 2 --pservers "$endpoint" --out "$work/programs" \
  >"$work/transpile.log" 2>&1 || {
  cat "$work/transpile.log" >&2
  exit 1
}

# run C: one job over the shaped link; the trainers' JSON in $work/C.t0, $work/C.t1.
run() {
  local c=$1
  ip netns exec "$ns_a" timeout 300 "$rill" pserver --program "$work/programs/pserver0.main.pbtxt" \
    --server-index 0 --trainers 2 --pservers "$endpoint" --endpoint "$endpoint" --bind "$addr_a" \
    --token "$token" >"$work/$c.server" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 200); do
    grep -q "listening on" "$work/$c.server" 2>/dev/null && break
    sleep 0.1
  done
  local pids=()
  for id in 0 1; do
    ip netns exec "$ns_b" timeout 300 "$rill" train --role trainer --trainer-id "$id" \
      --trainers 2 --pservers "$endpoint" --token "$token" --model mlp --epochs 1 \
      --max-steps "$steps" --batch $((batch / 2)) --threads 1 --blas-threads 1 --json \
      --gradient-compression "$c" >"$work/$c.t$id" 2>"$work/$c.t$id.err" &
    pids+=($!)
  done
  local status=0
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  wait "$server_pid" || status=1
  server_pid=
  if ((status)); then
    echo "the job with --gradient-compression $c failed:" >&2
    tail -5 "$work/$c.server" "$work/$c.t0.err" "$work/$c.t1.err" >&2
    exit 1
  fi
}

"$rill" train --model mlp --places cpu:2 --threads 2 --blas-threads 1 --epochs 1 \
  --max-steps "$steps" --batch "$batch" --input preloaded --json >"$work/local" 2>/dev/null
for c in none int8 int4; do run "$c"; done

python3 - "$work" "$batch" "$steps" "$rate" <<'EOF'
import json, sys
work, batch, steps, rate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
last = lambda path: json.loads([l for l in open(path) if l.startswith("{")][-1])
local = last(f"{work}/local")["samples_per_sec"]
print(f"2 trainers + 1 server across a {rate} link (tc tbf), MLP, global batch {batch}, "
      f"{steps} steps; local = rill train --places cpu:2, float32: {local:.0f} samples/s")
print(f"{'compression':>11} {'bytes up/step':>14} {'global s/s':>11} {'ms/step':>8} "
      f"{'vs local f32':>12}")
ratios = {}
for c in ("none", "int8", "int4"):
    t = [last(f"{work}/{c}.t{i}") for i in (0, 1)]
    seconds = max(x["seconds"] for x in t)
    rate_c = steps * batch / seconds
    ratios[c] = rate_c / local
    print(f"{c:>11} {t[0]['sent_bytes_per_step']:14.0f} {rate_c:11.0f} "
          f"{seconds / steps * 1e3:8.2f} {ratios[c]:11.2f}x")
print(f"compression improves the distributed/local ratio: "
      f"{'yes' if ratios['int8'] > ratios['none'] else 'no'} "
      f"(none {ratios['none']:.2f}x -> int8 {ratios['int8']:.2f}x, int4 {ratios['int4']:.2f}x)")
EOF
