#!/bin/bash
# One-sided latency, perftest vs rdx, on the same rxe device: 8-byte READ (ib_read_lat), WRITE ping-pong (ib_write_lat,
# half round trip) and CAS (ib_atomic_lat -A CMP_AND_SWAP) against rdx's verbs backend (bin/verbs_lat, same method).
# Emulated RDMA is noisy and the host is shared, so runs alternate (perftest run k, rdx run k, ...) and each side
# reports the median of its per-run medians; both pin the measuring side to CPU 1 and the passive side to CPU 0.
# Both are measured warm: under emulation a process measured right after its setup (or an idle pause) often runs at
# half speed for its first 50-200 ms, sometimes throughout. verbs_lat repeats each op for 300 ms before its runs
# (--warmup-ms); perftest has no such option, so CPU 1 is kept busy for 300 ms right before its client starts (that
# helps perftest, if anything).
# Writes "<tool> <op> <run medians...>" lines to results/latency.txt.
set -euo pipefail
ITERS=${PERFTEST_ITERS:-1000}
RUNS=${PERFTEST_RUNS:-7}
out=$RESULTS/latency.txt
: >"$out"
[ -x "$RDX_BIN/verbs_lat" ] || { echo "missing $RDX_BIN/verbs_lat"; exit 1; }
port=18515
# Same placement for both tools: the measuring side on CPU 1, the passive/echo side on CPU 0 (unpinned, run-to-run
# placement made the per-run medians bimodal).
CLIENT_CPU=1
SERVER_CPU=0

wait_port() {  # perftest's out-of-band TCP port
  for _ in $(seq 1 200); do
    ss -ltn | grep -q ":$1 " && return 0
    sleep 0.05
  done
  echo "perftest server did not open port $1" >&2
  return 1
}

perftest_once() {  # tool args... -> t_typical (median) in us
  local tool=$1; shift
  port=$((port + 1))
  taskset -c "$SERVER_CPU" "$tool" -d "$RDMA_DEV" -x "$GID_INDEX" -n "$ITERS" -F -p "$port" "$@" >/tmp/server.out 2>&1 &
  local spid=$! rc=0
  wait_port "$port" || { kill $spid 2>/dev/null; cat /tmp/server.out >&2; return 1; }
  timeout 0.3 taskset -c "$CLIENT_CPU" sh -c 'while :; do :; done' || true
  timeout 120 taskset -c "$CLIENT_CPU" "$tool" -d "$RDMA_DEV" -x "$GID_INDEX" -n "$ITERS" -F -p "$port" "$@" "$RDMA_IP" >/tmp/client.out 2>&1 || rc=$?
  wait $spid || true
  [ $rc -eq 0 ] || { echo "$tool failed ($rc):" >&2; cat /tmp/client.out /tmp/server.out >&2; return 1; }
  # Data line: #bytes #iterations t_min t_max t_typical ...
  awk '$1 == 8 && $2 ~ /^[0-9]+$/ {print $5; found = 1} END {exit !found}' /tmp/client.out
}

rdx_once() {  # op -> median in us
  RDX_VERBS_ADDR=$RDMA_IP "$RDX_BIN/verbs_lat" --ops "$1" --size 8 --iters "$ITERS" --runs 1 --warmup-ms 300 \
    --client-cpu "$CLIENT_CPU" --server-cpu "$SERVER_CPU" >/tmp/rdx.out 2>&1 ||
    { cat /tmp/rdx.out >&2; return 1; }
  grep '^rdx_lat' /tmp/rdx.out >&2  # diagnostics (post path, polls per op, empty poll cost) into the stage log
  grep -oE "^rdx_lat op=$1 .*median_us=[0-9.]+" /tmp/rdx.out | grep -oE '[0-9.]+$'
}

declare -A P R
for r in $(seq 1 "$RUNS"); do
  for spec in "read ib_read_lat -s 8" "write ib_write_lat -s 8" "cas ib_atomic_lat -A CMP_AND_SWAP"; do
    set -- $spec
    op=$1; shift
    p=$(perftest_once "$@")
    x=$(rdx_once "$op")
    echo "run $r $op: perftest $p us, rdx $x us"
    P[$op]="${P[$op]:-} $p"
    R[$op]="${R[$op]:-} $x"
  done
done
for op in read write cas; do
  echo "perftest $op${P[$op]}" >>"$out"
  echo "rdx $op${R[$op]}" >>"$out"
done
cat "$out"
