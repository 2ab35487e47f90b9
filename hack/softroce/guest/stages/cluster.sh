#!/bin/bash
# A 3-node rdxd cluster (one shard, 3 replicas) on the single rxe device (rxe cannot connect two devices in one
# namespace, so all nodes share rxe0 and its IP, each with its own rdma_cm port), then rdx-bench over verbs:
# single-key YCSB with every acknowledged write read back, and SmallBank with the strict-serializability checker.
# Then, for every replication protocol rdxd registers, a cluster of it (no transaction protocol) and rdx-bench kv
# with its history checked per key for linearizability (rdx-lincheck, Porcupine), reads and writes spread over every
# member; a protocol that offers read-modify-writes also runs FAA and compare-and-set (--write-mix set,incr,cas).
# Prints the transport metrics that prove the traffic went over verbs. Emulated RDMA is slow: small loads.
set -uo pipefail
dir=/tmp/rdx-cluster
rm -rf "$dir" && mkdir -p "$dir"
for b in rdxd rdx-bench rdx-lincheck; do [ -x "$RDX_BIN/$b" ] || { echo "missing $RDX_BIN/$b"; exit 1; }; done
nodes=""
for i in 0 1 2; do
  nodes+="${nodes:+,}{\"name\":\"n$i\",\"host\":\"$RDMA_IP\",\"rdma_addr\":\"$RDMA_IP\",\"port\":$((17100 + i)),\"redis_port\":0,\"http_port\":$((19100 + i))}"
done
topology() {  # replication protocol, transaction protocol
  cat >"$dir/topology.json" <<JSON
{"cluster":"softroce","epoch":1,
 "transport":{"kind":"verbs","device":"$RDMA_DEV","gid_index":$GID_INDEX,"hugepages":false},
 "workers":1,"memory_mb":64,"replication":{"protocol":"$1"},"txn":{"protocol":"$2"},
 "shards":[{"id":0,"members":["n0","n1","n2"]}],
 "nodes":[$nodes]}
JSON
}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; pids=(); }
trap cleanup EXIT
start() {  # log suffix
  for i in 0 1 2; do
    "$RDX_BIN/rdxd" --config "$dir/topology.json" --node "n$i" --listen "$RDMA_IP" >"$RESULTS/rdxd-n$i$1.log" 2>&1 &
    pids+=($!)
  done
}
topology primary-backup dnl4
start ""
http() {  # port path -> body (bash's /dev/tcp: no curl in the image)
  exec 3<>"/dev/tcp/$RDMA_IP/$1" || return 1
  printf 'GET %s HTTP/1.0\r\n\r\n' "$2" >&3
  cat <&3
  exec 3<&-
}
wait_ready() {
  local ready=0
  for _ in $(seq 1 600); do
    ready=0
    for i in 0 1 2; do http $((19100 + i)) /readyz 2>/dev/null | head -1 | grep -q " 200 " && ready=$((ready + 1)); done
    [ $ready -eq 3 ] && break
    sleep 0.5
  done
  [ $ready -eq 3 ] || { echo "cluster not ready after 300 s"; tail -n 20 "$RESULTS"/rdxd-n*.log; return 1; }
  echo "3 rdxd nodes ready on $RDMA_DEV ($RDMA_IP, gid index $GID_INDEX)"
}
wait_ready || exit 1

rc=0
"$RDX_BIN/rdx-bench" --config "$dir/topology.json" --threads 1 --outstanding 8 --keys 500 --load --duration 10 \
  --warmup 1 --verify-acked --json "$RESULTS/cluster-kv.json" --connect-timeout 120 || rc=1
"$RDX_BIN/rdx-bench" --config "$dir/topology.json" --workload smallbank:accounts=200,hot_percent=10 --load \
  --duration 10 --coroutines 4 --history "$RESULTS/cluster-smallbank.history" --json "$RESULTS/cluster-smallbank.json" \
  --connect-timeout 120 || rc=1
echo "--- transport metrics of n0 (verbs) ---"
http 19100 /metrics | grep -E '^rdx_transport_(packets_sent|onesided|doorbells)|^rdx_ops_total' | tee "$RESULTS/cluster-metrics.txt"
grep -q 'transport="verbs"' "$RESULTS/cluster-metrics.txt" || { echo "metrics do not show the verbs transport"; rc=1; }
cleanup

# Every registered replication protocol over verbs: single-key operations only (txn none), history checked.
protocols=$("$RDX_BIN/rdxd" --list | awk '/^replication:/ {f = 1; next} /^[^ ]/ {f = 0} f {print $1}')
[ -n "$protocols" ] || { echo "rdxd --list names no replication protocol"; exit 1; }
rmw=$("$RDX_BIN/rdxd" --list --json | awk -F'"' '/"name":/ {n = $4} /"ops": "read-modify-write"/ {print n}')
grep -qx primary-backup <<<"$rmw" || { echo "rdxd --list --json names no read-modify-write protocol"; exit 1; }
for p in $protocols; do
  mix=set
  grep -qx "$p" <<<"$rmw" && mix=set,incr,cas
  echo "--- replication $p over verbs: rdx-bench kv --history (linearizability per key) ---"
  topology "$p" none
  start "-$p"
  wait_ready || { rc=1; cleanup; continue; }
  "$RDX_BIN/rdx-bench" --config "$dir/topology.json" --threads 1 --outstanding 8 --keys 20 --load --duration 10 \
    --warmup 1 --read-from any --write-to any --write-mix "$mix" --history "$RESULTS/cluster-kv-$p.history" \
    --json "$RESULTS/cluster-kv-$p.json" --connect-timeout 120 || { echo "replication $p: rdx-bench kv --history failed"; rc=1; }
  cleanup
done
exit $rc
