# What the cluster stages share: a 3-node rdxd cluster (one shard, 3 replicas) on the single rxe device (rxe cannot
# connect two devices in one namespace, so all nodes share rxe0 and its IP, each with its own rdma_cm port).
# Sourced by stages/cluster.sh and stages/table3.sh: topology REPLICATION TXN, start LOG_SUFFIX, start_node I SUFFIX,
# wait_ready, cleanup. RDX_STAGE_TRANSPORT=tcp runs a stage's clusters on tcp instead (to debug a stage outside the VM:
# RDX_BIN, RESULTS and RDMA_IP=127.0.0.1 set by hand).
dir=/tmp/rdx-cluster
rm -rf "$dir" && mkdir -p "$dir"
for b in rdxd rdx-bench rdx-lincheck; do [ -x "$RDX_BIN/$b" ] || { echo "missing $RDX_BIN/$b"; exit 1; }; done
nodes=""
for i in 0 1 2; do
  nodes+="${nodes:+,}{\"name\":\"n$i\",\"host\":\"$RDMA_IP\",\"rdma_addr\":\"$RDMA_IP\",\"port\":$((17100 + i)),\"redis_port\":0,\"http_port\":$((19100 + i))}"
done
if [ "${RDX_STAGE_TRANSPORT:-verbs}" = tcp ]; then
  transport='"kind":"tcp"'
else
  transport="\"kind\":\"verbs\",\"device\":\"$RDMA_DEV\",\"gid_index\":$GID_INDEX,\"hugepages\":false"
fi
topology() {  # replication protocol, transaction protocol[, primitives (default rpc)]
  cat >"$dir/topology.json" <<JSON
{"cluster":"softroce","epoch":1,
 "transport":{$transport,"primitives":"${3:-rpc}"},
 "workers":1,"memory_mb":64,"replication":{"protocol":"$1"},"txn":{"protocol":"$2"},
 "shards":[{"id":0,"members":["n0","n1","n2"]}],
 "nodes":[$nodes]}
JSON
}
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; pids=(); }
trap cleanup EXIT
pids=()  # of n0, n1, n2, in order (start_node replaces one)
start_node() {  # node index, log suffix (appended to: a restarted node's log follows its first life's)
  "$RDX_BIN/rdxd" --config "$dir/topology.json" --node "n$1" --listen "$RDMA_IP" >>"$RESULTS/rdxd-n$1$2.log" 2>&1 &
  pids[$1]=$!
}
start() {  # log suffix
  for i in 0 1 2; do
    : >"$RESULTS/rdxd-n$i$1.log"
    start_node "$i" "$1"
  done
}
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
  echo "3 rdxd nodes ready on ${RDMA_DEV:-tcp} ($RDMA_IP${GID_INDEX:+, gid index $GID_INDEX})"
}
