#!/usr/bin/env bash
# Soft-RoCE on kind: the e2e suite with a verbs TxCluster, for Docker hosts whose kernel has rdma_rxe (self-hosted
# runners, laptops). GitHub's hosted runners have Docker but their kernel has no rdma_rxe: there, use the VM route
# (`make test-softroce`, whose stage k8s is the same TxCluster on rxe inside qemu); hack/softroce/README.md.
#
#   hack/softroce/kind.sh check   the prerequisites only; fails within seconds naming every missing one
#   hack/softroce/kind.sh up      kind cluster rdx-rdma: a control plane and 3 workers with the host's /dev/infiniband,
#                                 one rxe device in each worker's network namespace, the rdx images loaded
#   hack/softroce/kind.sh test    up, then the e2e suite (hack/e2e.sh) with the sample demo-rxe over verbs
#   hack/softroce/kind.sh down    delete the cluster (each rxe device goes with its worker's namespace)
#   hack/softroce/kind.sh ci      `make test`'s kind tier: `test` where the prerequisites are met; elsewhere it
#                                 checks that `up` fails within 30 s naming what is missing (and says it did not run)
#
# How the pods get RDMA: the TxCluster runs in rdma mode hostDevice with hostNetwork, so each rdxd shares its kind
# node's network namespace, where its node's rxe device sits on eth0, and with no device named it takes the device
# that owns its IP. The network-operator's RDMA shared device plugin discovers only PCI devices, so it cannot hand
# out rxe. This needs a kernel whose rxe works outside the initial network namespace; Debian 12's 6.1 does not
# (../shared/notes/softroce-vm.md): QPs reach RTS and the first send fails, which the suite reports.
# Settings: RDX_KIND_RDMA_WORKERS (3), KIND_NODE_IMAGE, KIND_VERSION (see hack/kind.sh).
set -euo pipefail
export KIND_CLUSTER_NAME=${KIND_CLUSTER_NAME:-rdx-rdma}
source "$(dirname "${BASH_SOURCE[0]}")/../kind.sh"

WORKERS=${RDX_KIND_RDMA_WORKERS:-3}
SAMPLE=$RDX_ROOT/operator/config/samples/rdx_v1alpha1_txcluster_verbs_rxe.yaml

usage() { sed -n '2,19s/^# \{0,1\}//p' "$0" >&2; exit 2; }

# missing_prerequisites prints one line per missing prerequisite (nothing when all are there); every probe is bounded.
missing_prerequisites() {
  docker_probe
  [ -z "$DOCKER_PROBLEM" ] || echo "no Docker (kind runs its nodes as Docker containers): $DOCKER_PROBLEM"
  if [ ! -d /sys/module/rdma_rxe ] && ! timeout 10 modprobe -n rdma_rxe >/dev/null 2>&1; then
    echo "no soft-RoCE: kernel $(uname -r) has no rdma_rxe module (GitHub's hosted runner kernels lack it: build it" \
      "out of tree from the kernel's drivers/infiniband/sw/rxe, or use the VM route: make test-softroce)"
  fi
  command -v rdma >/dev/null || echo "no rdma tool (iproute2) to create rxe devices: apt-get install iproute2"
}

check() {
  local missing
  missing=$(missing_prerequisites)
  [ -z "$missing" ] || die "soft-RoCE on kind cannot run on this host:"$'\n'"$(sed 's/^/  - /' <<<"$missing")"
  log "prerequisites: Docker, rdma_rxe, rdma tool"
}

kind_config() {  # a control plane and $WORKERS workers, each with the host's /dev/infiniband
  local f=$RDX_CACHE/kind/$KIND_CLUSTER_NAME.config.yaml i
  mkdir -p "$(dirname "$f")"
  {
    echo "kind: Cluster"
    echo "apiVersion: kind.x-k8s.io/v1alpha4"
    echo "nodes:"
    echo "  - role: control-plane"
    for i in $(seq 1 "$WORKERS"); do
      echo "  - role: worker"
      echo "    extraMounts: [{hostPath: /dev/infiniband, containerPath: /dev/infiniband}]"
    done
  } >"$f"
  echo "$f"
}

# rxe_per_worker: one rxe device on each worker's eth0, created inside the worker's network namespace.
rxe_per_worker() {
  local node pid n=0 seen
  for node in $(docker ps --filter "label=io.x-k8s.kind.cluster=$KIND_CLUSTER_NAME" \
      --filter "label=io.x-k8s.kind.role=worker" --format '{{.Names}}' | sort); do
    pid=$(docker inspect -f '{{.State.Pid}}' "$node")
    if ! nsenter -t "$pid" -n rdma link show "rxe-$node/1" >/dev/null 2>&1; then  # up is re-runnable
      nsenter -t "$pid" -n rdma link add "rxe-$node" type rxe netdev eth0 \
        || die "cannot create an rxe device on $node's eth0 (rdma link add in its network namespace failed)"
    fi
    seen=$(docker exec "$node" sh -c 'ls /sys/class/infiniband 2>/dev/null' | tr '\n' ' ')
    grep -qw "rxe-$node" <<<"$seen" || die "$node does not see its device rxe-$node (it sees: ${seen:-none})"
    log "$node: RDMA device rxe-$node on its eth0 ($(docker exec "$node" cat "/sys/class/infiniband/rxe-$node/ports/1/state" 2>/dev/null))"
    n=$((n + 1))
  done
  [ "$n" = "$WORKERS" ] || die "found $n kind workers, want $WORKERS"
}

up() {
  check
  modprobe -a rdma_rxe ib_uverbs rdma_ucm || die "modprobe rdma_rxe ib_uverbs rdma_ucm failed"
  [ -d /dev/infiniband ] || die "/dev/infiniband is missing after loading ib_uverbs and rdma_ucm"
  KIND_CONFIG=$(kind_config) kind_up >&2
  rxe_per_worker
  echo "$KIND_KUBECONFIG"
}

case "${1:-}" in
  check) check ;;
  up) up ;;
  test)
    kubeconfig=$(up)
    KUBECONFIG=$kubeconfig RDX_E2E_SAMPLE=$SAMPLE RDX_E2E_TRANSPORT=verbs bash "$RDX_ROOT/hack/e2e.sh" ;;
  down)
    command -v docker >/dev/null || die "no Docker: nothing to tear down"
    ensure_kind
    if cluster_exists; then timeout 300 "$KIND_BIN" delete cluster --name "$KIND_CLUSTER_NAME"; fi
    rm -f "$KIND_KUBECONFIG" ;;
  ci)
    if [ -z "$(missing_prerequisites)" ]; then exec bash "$0" test; fi
    t0=$SECONDS rc=0
    out=$(timeout 60 bash "$0" up 2>&1) || rc=$?
    [ $rc -ne 0 ] || die "hack/softroce/kind.sh up succeeded although prerequisites are missing"
    [ $((SECONDS - t0)) -le 30 ] || die "hack/softroce/kind.sh up took $((SECONDS - t0)) s to fail (want <= 30 s): $out"
    grep -q "cannot run on this host" <<<"$out" || die "hack/softroce/kind.sh up failed without naming the reason: $out"
    log "soft-RoCE on kind NOT run on this host; up fails in $((SECONDS - t0)) s (exit $rc) with:"
    printf '%s\n' "$out" >&2 ;;
  *) usage ;;
esac
