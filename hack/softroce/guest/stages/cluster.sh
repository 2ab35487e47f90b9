#!/bin/bash
# A 3-node rdxd cluster (lib/cluster.sh) on the rxe device, then rdx-bench over verbs:
# single-key YCSB with every acknowledged write read back, and SmallBank with the strict-serializability checker;
# SmallBank again for every other transaction protocol rdxd registers, and once more over one-sided primitives for
# each that honours them, with every read at the primary: the backups' coordinators read records with RDMA READs.
# Then, for every replication protocol rdxd registers, a cluster of it (no transaction protocol) and rdx-bench kv
# with its history checked per key for linearizability (rdx-lincheck, Porcupine), reads and writes spread over every
# member; a protocol that offers read-modify-writes also runs FAA and compare-and-set (--write-mix set,incr,cas); and a
# protocol that survives a minority runs it again while n0 is killed (-9) and restarted.
# Prints the transport metrics that prove the traffic went over verbs. Emulated RDMA is slow: small loads.
set -uo pipefail
source "$(dirname "$0")/../lib/cluster.sh"
topology primary-backup dnl4
start ""
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

# Every other registered transaction protocol over verbs: SmallBank with hot accounts (conflicting), its history
# through the strict-serializability checker and the total balance checked (rdx-bench exits non-zero otherwise).
txns=$("$RDX_BIN/rdxd" --list | awk '/^txn:/ {f = 1; next} /^[^ ]/ {f = 0} f {print $1}')
[ -n "$txns" ] || { echo "rdxd --list names no transaction protocol"; exit 1; }
for p in $txns; do
  [ "$p" = dnl4 ] && continue  # (above)
  echo "--- transactions $p over verbs: SmallBank, history checked ---"
  topology primary-backup "$p"
  start "-$p"
  wait_ready || { rc=1; cleanup; continue; }
  "$RDX_BIN/rdx-bench" --config "$dir/topology.json" --workload smallbank:accounts=200,hot_percent=10 --load \
    --duration 6 --coroutines 4 --history "$RESULTS/cluster-smallbank-$p.history" \
    --json "$RESULTS/cluster-smallbank-$p.json" --connect-timeout 120 || { echo "transactions $p: SmallBank failed"; rc=1; }
  cleanup
done
onesided=$("$RDX_BIN/rdxd" --list | awk '/^txn:/ {f = 1; next} /^[^ ]/ {f = 0} f && /"onesided"/ {print $1}')
[ -n "$onesided" ] || { echo "rdxd --list names no transaction protocol with one-sided primitives"; exit 1; }
for p in $onesided; do
  echo "--- transactions $p over verbs with primitives onesided: SmallBank, reads at the primary, history checked ---"
  topology primary-backup "$p" onesided
  start "-$p-onesided"
  wait_ready || { rc=1; cleanup; continue; }
  out="$RESULTS/cluster-smallbank-$p-onesided.json"
  "$RDX_BIN/rdx-bench" --config "$dir/topology.json" --workload smallbank:accounts=200,hot_percent=10 --load \
    --duration 6 --coroutines 4 --local-backup-reads off --history "$RESULTS/cluster-smallbank-$p-onesided.history" \
    --json "$out" --connect-timeout 120 || { echo "transactions $p onesided: SmallBank failed"; rc=1; }
  reads=$(tr -d ' \n' <"$out" | grep -o '"onesided":[0-9]*' | head -1 | cut -d: -f2)
  echo "transactions $p onesided: ${reads:-no} execution reads were RDMA READs"
  [ "${reads:-0}" -gt 0 ] || { echo "transactions $p onesided: no one-sided READ was issued"; rc=1; }
  http 19101 /metrics | grep -E '^rdx_transport_onesided_issued_total' || true
  cleanup
done

# Every registered replication protocol over verbs: single-key operations only (txn none), history checked.
protocols=$("$RDX_BIN/rdxd" --list | awk '/^replication:/ {f = 1; next} /^[^ ]/ {f = 0} f {print $1}')
[ -n "$protocols" ] || { echo "rdxd --list names no replication protocol"; exit 1; }
rmw=$("$RDX_BIN/rdxd" --list --json | awk -F'"' '/"name":/ {n = $4} /"ops": "read-modify-write"/ {print n}')
grep -qx primary-backup <<<"$rmw" || { echo "rdxd --list --json names no read-modify-write protocol"; exit 1; }
# Protocols whose reads are sequentially consistent per session (zab): an rdx-bench session spreads its reads over
# every replica, so they read at the key's leader here and rdx-lincheck checks reads per session.
sequential=$("$RDX_BIN/rdxd" --list --json | awk -F'"' '/"name":/ {n = $4} /"reads": "sequential"/ {print n}')
# A cluster of replication protocol $1 (no transaction protocol), its logs' names ending in $2, and the rdx-bench
# kv arguments of its history (kv_args): the writes it offers, and where its reads go.
kv_cluster() {
  local mix=set reads=(--read-from any)
  grep -qx "$1" <<<"$rmw" && mix=set,incr,cas
  grep -qx "$1" <<<"$sequential" && reads=(--read-from primary --reads sequential)
  kv_args=(--write-to any --write-mix "$mix" "${reads[@]}")
  topology "$1" none
  start "$2"
  wait_ready
}
for p in $protocols; do
  echo "--- replication $p over verbs: rdx-bench kv --history (checked per key) ---"
  kv_cluster "$p" "-$p" || { rc=1; cleanup; continue; }
  echo "rdx-bench kv ${kv_args[*]}"
  "$RDX_BIN/rdx-bench" --config "$dir/topology.json" --threads 1 --outstanding 8 --keys 20 --load --duration 10 \
    --warmup 1 "${kv_args[@]}" --history "$RESULTS/cluster-kv-$p.history" \
    --json "$RESULTS/cluster-kv-$p.json" --connect-timeout 120 || { echo "replication $p: rdx-bench kv --history failed"; rc=1; }
  cleanup
done
# Every replication protocol that survives a minority, over verbs, through a failure: n0 (the primary or leader of
# view 0 where the protocol has one) killed (-9) 3 s into 14 s of that load (4 sessions: the writes of unknown outcome
# stay a few per key, which the checker's search pays for) and restarted 3 s later. The history is checked as above;
# errors are only refusals while the shard has no leader (UNAVAILABLE) and operations in flight at the kill
# (TIMEOUT, of unknown outcome in the history); the load goes on (each of the last 4 seconds completed operations);
# and n0 is ready again after the run.
minority=$("$RDX_BIN/rdxd" --list --json | awk -F'"' '/"name":/ {n = $4} /"survives": "minority"/ {print n}')
[ -n "$minority" ] || { echo "rdxd --list --json names no protocol that survives a minority"; exit 1; }
for p in $minority; do
  echo "--- replication $p over verbs, n0 killed under the load and restarted: rdx-bench kv --history ---"
  kv_cluster "$p" "-$p-killed" || { rc=1; cleanup; continue; }
  json="$RESULTS/cluster-kv-$p-killed.json" out="$RESULTS/cluster-kv-$p-killed.out"
  "$RDX_BIN/rdx-bench" --config "$dir/topology.json" --threads 1 --outstanding 4 --keys 20 --load --duration 14 \
    --warmup 0 "${kv_args[@]}" --history "$RESULTS/cluster-kv-$p-killed.history" \
    --json "$json" --connect-timeout 120 >"$out" 2>&1 &
  bench=$!
  # The kill must hit the run, not the connection or the load: 3 s after the load is done.
  for _ in $(seq 1 240); do grep -q 'loaded [0-9]* keys' "$out" && break; sleep 0.5; done
  ok=1
  grep -q 'loaded [0-9]* keys' "$out" || { echo "replication $p: rdx-bench did not load its keys in 120 s"; ok=0; }
  sleep 3
  kill -9 "${pids[0]}"
  echo "n0 killed"
  sleep 3
  start_node 0 "-$p-killed"
  echo "n0 restarted"
  wait "$bench"
  code=$?
  cat "$out"
  [ "$code" -lt 128 ] || { echo "replication $p, n0 killed: rdx-bench died (exit $code)"; ok=0; }
  [ -s "$json" ] || { echo "replication $p, n0 killed: rdx-bench wrote no $json"; ok=0; }
  grep -Eq '^(linearizability|sequential-reads): .*: (linearizable|writes linearizable, reads sequentially consistent per session)$' "$out" ||
    { echo "replication $p, n0 killed: the history was not found correct"; ok=0; }
  errors=$(tr -d ' \n' <"$json" | grep -o '"errors":{[^}]*}' | head -1)
  if grep -o '"[A-Z_]*":' <<<"$errors" | grep -Evq '"(UNAVAILABLE|TIMEOUT)":'; then
    echo "replication $p, n0 killed: unexpected errors $errors"; ok=0
  fi
  per_sec=$(tr -d ' \n' <"$json" | grep -o '"ops_per_second":\[[^]]*\]' | head -1 | sed 's/.*\[//; s/\]//')
  tail4=$(tr , '\n' <<<"$per_sec" | tail -4 | tr '\n' ' ')
  echo "replication $p, n0 killed: errors $errors; operations in the last 4 seconds: $tail4"
  [ "$(wc -w <<<"$tail4")" -eq 4 ] || { echo "replication $p: no per-second counts in $json"; ok=0; }
  for x in $tail4; do awk -v x="$x" 'BEGIN { exit !(x > 0) }' || { echo "replication $p: the load stopped after the kill"; ok=0; break; }; done
  wait_ready || { echo "replication $p: n0 did not serve again after its restart"; ok=0; }
  [ "$ok" = 1 ] || rc=1
  cleanup
done

exit $rc
