#!/bin/bash
# Test driver inside the soft-RoCE VM (started by the image's PID 1 from the 9p share). Sets up one rxe device on a
# dummy netdev, detects its GID index, then runs the stages listed in /mnt/host/stages (one name per line; each is
# guest/stages/<name>.sh, run with a timeout). Every stage's output goes to results/<name>.log; results/summary gets
# one "<name> PASS|FAIL <seconds>" line each. Exit code: 0 when every stage passed (PID 1 writes it to
# results/verdict). Stages see: RDX_BIN (host-built binaries), RESULTS, RDMA_DEV, RDMA_IP, GID_INDEX, STAGE_DIR.
set -uo pipefail
SHARE=/mnt/host
export RESULTS=$SHARE/results RDX_BIN=$SHARE/bin STAGE_DIR=$SHARE/guest/stages
export RDMA_DEV=rxe0 RDMA_NETDEV=rxedev0 RDMA_IP=10.99.1.1
exec > >(tee -a "$RESULTS/guest.log" >/dev/console) 2>&1
# Settings from the host (run.sh), e.g. iteration counts.
if [ -f "$SHARE/env" ]; then set -a; . "$SHARE/env"; set +a; fi

log() { printf '[guest %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
fatal() {
  log "FATAL: $*"
  echo "setup FAIL 0 $*" >>"$RESULTS/summary"
  exit 2
}

setup_rxe() {
  modprobe -a rdma_rxe ib_uverbs rdma_ucm || fatal "modprobe rdma_rxe ib_uverbs rdma_ucm failed (guest kernel without rxe?)"
  ip link add "$RDMA_NETDEV" type dummy || fatal "cannot create the dummy netdev"
  ip addr add "$RDMA_IP/24" dev "$RDMA_NETDEV"
  ip link set "$RDMA_NETDEV" up
  if [ "${RDX_SOFTROCE_SKIP_RXE:-0}" = 1 ]; then
    log "RDX_SOFTROCE_SKIP_RXE=1: not creating $RDMA_DEV (failure-path check)"
  else
    rdma link add "$RDMA_DEV" type rxe netdev "$RDMA_NETDEV" || fatal "rdma link add $RDMA_DEV failed"
  fi
  # No udev in the guest: create the verbs character devices if the kernel did not.
  local port=/sys/class/infiniband/$RDMA_DEV/ports/1 i
  for i in $(seq 1 50); do
    grep -q ACTIVE "$port/state" 2>/dev/null && [ -e /dev/infiniband/rdma_cm ] && [ -e /dev/infiniband/uverbs0 ] && break
    sleep 0.1
  done
  grep -q ACTIVE "$port/state" 2>/dev/null || fatal "missing rxe device: $port/state is '$(cat "$port/state" 2>/dev/null)'"
  [ -e /dev/infiniband/uverbs0 ] || fatal "missing /dev/infiniband/uverbs0"
  [ -e /dev/infiniband/rdma_cm ] || fatal "missing /dev/infiniband/rdma_cm"
  # GID index of the RoCE v2 IPv4-mapped GID of our address (rxe has only RoCE v2 entries; the index varies).
  local want hex f idx
  hex=$(printf '%02x%02x:%02x%02x' ${RDMA_IP//./ })
  want="0000:0000:0000:0000:0000:ffff:$hex"
  GID_INDEX=
  for i in $(seq 1 50); do
    for f in "$port"/gids/*; do  # builtins only: hundreds of slots, forks are slow under emulation
      idx=${f##*/}
      read -r g <"$f"
      [ "$g" = "$want" ] || continue
      t=
      read -r t <"$port/gid_attrs/types/$idx" 2>/dev/null || true
      if [ "$t" = "RoCE v2" ]; then
        GID_INDEX=$idx
        break 2
      fi
    done
    sleep 0.1
  done
  [ -n "$GID_INDEX" ] || fatal "no RoCE v2 GID for $RDMA_IP on $RDMA_DEV: $(sort -u "$port"/gids/* | tr '\n' ' ')"
  export GID_INDEX
  log "rxe ready: $RDMA_DEV on $RDMA_NETDEV $RDMA_IP, GID index $GID_INDEX"
}

: >"$RESULTS/summary"
log "kernel $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/{print int($2/1024)}' /proc/meminfo) MiB"
setup_rxe
echo 128 >/proc/sys/vm/nr_hugepages  # 256 MiB of 2 MB pages: the backend's huge-page path runs too
log "huge pages: $(cat /proc/sys/vm/nr_hugepages) x 2 MB"

rc=0
while read -r stage limit; do
  case $stage in ''|'#'*) continue ;; esac
  script=$STAGE_DIR/$stage.sh
  [ -f "$script" ] || { log "stage $stage: $script missing"; echo "$stage FAIL 0 missing" >>"$RESULTS/summary"; rc=1; continue; }
  log "stage $stage (limit ${limit:-600}s)"
  start=$(date +%s)
  timeout --kill-after=10 "${limit:-600}" bash "$script" </dev/null >"$RESULTS/$stage.log" 2>&1
  src=$?
  secs=$(( $(date +%s) - start ))
  if [ $src -eq 0 ]; then
    status=PASS
  else
    status=FAIL
    rc=1
    [ $src -eq 124 ] && log "stage $stage: timed out after ${limit:-600}s"
    tail -n 30 "$RESULTS/$stage.log" | sed "s/^/  [$stage] /"
  fi
  log "stage $stage: $status in ${secs}s"
  echo "$stage $status $secs" >>"$RESULTS/summary"
done <"$SHARE/stages"
log "driver done: exit $rc"
exit $rc
