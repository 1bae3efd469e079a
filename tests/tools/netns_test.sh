#!/usr/bin/env bash
# A distributed job across two network namespaces joined by a veth pair, so
# the processes reach each other over a real (virtual) link rather than
# loopback: ns rill_ns_a (10.231.0.1/24) and ns rill_ns_b (10.231.0.2/24).
#   pserver (default): ns a runs `rill pserver`, ns b one `rill train --role
#     trainer` (linreg, 20 steps). Passes when both exit 0 and the server
#     logged that trainer 0 connected.
#   collective: ns a runs rank 0 of `rill train --collective` (its rendezvous
#     store and Gloo bound to 10.231.0.1), ns b rank 1 (Gloo on 10.231.0.2);
#     20 steps of the MLP. Passes when both exit 0, rank 0's store saw rank 1
#     arrive from 10.231.0.2, and both end with the same parameters (the
#     digest each prints).
# Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2's `ip`; without
# them it prints why and exits 77 (CTest: skipped).
# Usage: netns_test.sh RILL_BINARY [WORK_DIR] [pserver|collective]
set -uo pipefail
rill=${1:?usage: netns_test.sh RILL_BINARY [WORK_DIR] [pserver|collective]}
work=${2:-$(mktemp -d /tmp/rill-netns-XXXXXX)}
mode=${3:-pserver}
ns_a=rill_ns_a
ns_b=rill_ns_b
addr_a=10.231.0.1
addr_b=10.231.0.2
port=${RILL_NETNS_PORT:-47231}
endpoint=$addr_a:$port
token=netns-test-token

skip() {
  echo "SKIPPED: $*"
  exit 77
}
fail() {
  echo "FAILED: $*"
  for f in "$work"/pserver.log "$work"/trainer.log "$work"/rank0.log "$work"/rank1.log; do
    [[ -f $f ]] && { echo "--- $f"; tail -30 "$f"; }
  done
  exit 1
}

[[ -x $rill ]] || fail "no rill binary at $rill"
[[ $mode == pserver || $mode == collective ]] || fail "unknown mode '$mode' (pserver or collective)"
command -v ip >/dev/null || skip "no 'ip' command (install iproute2)"
[[ $(id -u) -eq 0 ]] || skip "not root: creating network namespaces needs CAP_SYS_ADMIN"
command -v timeout >/dev/null || skip "no 'timeout' command"

pserver_pid=
rank0_pid=
cleanup() {
  if [[ -n $pserver_pid ]]; then kill "$pserver_pid" 2>/dev/null; wait "$pserver_pid" 2>/dev/null; fi
  if [[ -n $rank0_pid ]]; then kill "$rank0_pid" 2>/dev/null; wait "$rank0_pid" 2>/dev/null; fi
  ip netns del "$ns_a" 2>/dev/null
  ip netns del "$ns_b" 2>/dev/null
}
trap cleanup EXIT
# Left over from an interrupted run.
ip netns del "$ns_a" 2>/dev/null
ip netns del "$ns_b" 2>/dev/null

if ! out=$(ip netns add "$ns_a" 2>&1); then
  skip "ip netns add failed (no CAP_SYS_ADMIN, or namespaces unsupported here): $out"
fi
ip netns add "$ns_b" || fail "ip netns add $ns_b"
# The veth pair is created inside ns a, and one end moved to ns b, so nothing
# is left in the host's namespace when the namespaces go.
if ! out=$(ip -n "$ns_a" link add veth_a type veth peer name veth_b 2>&1); then
  skip "cannot create a veth pair (no veth support or CAP_NET_ADMIN): $out"
fi
ip -n "$ns_a" link set veth_b netns "$ns_b" || fail "moving veth_b to $ns_b"
ip -n "$ns_a" addr add "$addr_a/24" dev veth_a || fail "address on veth_a"
ip -n "$ns_b" addr add "$addr_b/24" dev veth_b || fail "address on veth_b"
for ns in "$ns_a" "$ns_b"; do
  ip -n "$ns" link set lo up || fail "lo up in $ns"
done
ip -n "$ns_a" link set veth_a up || fail "veth_a up"
ip -n "$ns_b" link set veth_b up || fail "veth_b up"
echo "namespaces $ns_a ($addr_a) and $ns_b ($addr_b) joined by veth_a/veth_b"

mkdir -p "$work"

if [[ $mode == collective ]]; then
  # Both ranks on the same global batches; rank 0's store at $endpoint.
  train=(train --collective --model mlp --max-steps 20 --epochs 1 --batch 32 --json --threads 1
    --blas-threads 1 --connect-timeout-ms 20000)
  ip netns exec "$ns_a" env RILL_RANK=0 RILL_WORLD_SIZE=2 RILL_MASTER="$endpoint" \
    RILL_TOKEN="$token" RILL_BIND_HOST="$addr_a" timeout 50 "$rill" "${train[@]}" \
    >"$work/rank0.log" 2>&1 &
  rank0_pid=$!
  ip netns exec "$ns_b" env RILL_RANK=1 RILL_WORLD_SIZE=2 RILL_MASTER="$endpoint" \
    RILL_TOKEN="$token" RILL_BIND_HOST="$addr_b" timeout 50 "$rill" "${train[@]}" \
    >"$work/rank1.log" 2>&1
  rank1_status=$?
  wait "$rank0_pid"
  rank0_status=$?
  rank0_pid=
  [[ $rank0_status -eq 0 ]] || fail "rank 0 in $ns_a exited with $rank0_status"
  [[ $rank1_status -eq 0 ]] || fail "rank 1 in $ns_b exited with $rank1_status"
  grep -q "rank 1 at $addr_b" "$work/rank0.log" || fail "rank 0's store does not say rank 1 came from $addr_b"
  digest0=$(grep -o '"parameters_digest":"[0-9a-f]*"' "$work/rank0.log" | tail -1)
  digest1=$(grep -o '"parameters_digest":"[0-9a-f]*"' "$work/rank1.log" | tail -1)
  [[ -n $digest0 && $digest0 == "$digest1" ]] ||
    fail "the ranks end with different parameters ($digest0 vs $digest1)"
  echo "--- rank 0 ($ns_a):"
  cat "$work/rank0.log"
  echo "--- rank 1 ($ns_b):"
  cat "$work/rank1.log"
  echo "PASSED: ranks in $ns_a and $ns_b trained 20 steps together, both ending with $digest0"
  exit 0
fi

timeout 30 "$rill" transpile --model linreg --trainers 1 --pservers "$endpoint" \
  --out "$work/programs" >"$work/transpile.log" 2>&1 || {
  cat "$work/transpile.log"
  fail "rill transpile"
}
[[ -f $work/programs/pserver0.main.pbtxt ]] || fail "rill transpile wrote no pserver0.main.pbtxt"

ip netns exec "$ns_a" timeout 50 "$rill" pserver --program "$work/programs/pserver0.main.pbtxt" \
  --server-index 0 --trainers 1 --pservers "$endpoint" --endpoint "$endpoint" --bind "$addr_a" \
  --token "$token" >"$work/pserver.log" 2>&1 &
pserver_pid=$!
for _ in $(seq 1 200); do
  grep -q "listening on" "$work/pserver.log" 2>/dev/null && break
  kill -0 "$pserver_pid" 2>/dev/null || fail "rill pserver exited before listening"
  sleep 0.1
done
grep -q "listening on" "$work/pserver.log" || fail "rill pserver did not start listening in 20 s"

ip netns exec "$ns_b" timeout 40 "$rill" train --role trainer --trainer-id 0 --trainers 1 \
  --pservers "$endpoint" --token "$token" --model linreg --max-steps 20 --epochs 1 --json \
  --threads 1 --blas-threads 1 >"$work/trainer.log" 2>&1
trainer_status=$?
wait "$pserver_pid"
pserver_status=$?
pserver_pid=
[[ $trainer_status -eq 0 ]] || fail "trainer in $ns_b exited with $trainer_status"
[[ $pserver_status -eq 0 ]] || fail "pserver in $ns_a exited with $pserver_status"
grep -q "trainer 0 connected" "$work/pserver.log" || fail "the server log does not say trainer 0 connected"
echo "--- pserver ($ns_a):"
cat "$work/pserver.log"
echo "--- trainer ($ns_b):"
cat "$work/trainer.log"
echo "PASSED: trainer in $ns_b trained 20 steps against the server at $endpoint in $ns_a"
