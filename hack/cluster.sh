#!/usr/bin/env bash
# The offline single-node Kubernetes cluster: no registry and no release downloads are needed. Kubernetes is
# built from Go modules (hack/build-k8s.sh), etcd/containerd/runc/CNI come from Debian, and CoreDNS and the pause
# image are built locally.
#
#   hack/cluster.sh up          bring the cluster up (idempotent); prints the kubeconfig path on stdout.
#                               If $KUBECONFIG points at a reachable cluster, uses it and does nothing else.
#   hack/cluster.sh prepare     build and cache what up needs (binaries, images) without starting anything.
#   hack/cluster.sh down        tear everything down, restore the host, verify; non-zero if anything is left.
#   hack/cluster.sh status      component pids and health, nodes and pods.
#   hack/cluster.sh kubeconfig  print the kubeconfig path of the local cluster.
#   hack/cluster.sh smoke       prove the local cluster works: Pod, Deployment + ClusterIP Service, StatefulSet
#                               pods resolving each other through a headless Service (busybox image, built locally).
#
# Must run as root. Component logs: $RDX_CACHE/cluster/logs (kept after down). A failed up tears down what it
# started (set RDX_KEEP_FAILED_CLUSTER=1 to keep it for debugging).
source "$(dirname "$0")/lib.sh"
source "$RDX_ROOT/hack/cluster/common.sh"
source "$RDX_ROOT/hack/cluster/tools.sh"
source "$RDX_ROOT/hack/cluster/oci.sh"
source "$RDX_ROOT/hack/cluster/pki.sh"
source "$RDX_ROOT/hack/cluster/node.sh"
source "$RDX_ROOT/hack/cluster/teardown.sh"
source "$RDX_ROOT/hack/cluster/smoke.sh"

usage() { sed -n '2,17s/^# \{0,1\}//p' "$0" >&2; exit 2; }

# external_cluster_reachable: $KUBECONFIG names a cluster other than ours and it answers.
external_cluster_reachable() {
  [ -n "${KUBECONFIG:-}" ] || return 1
  [ "$(readlink -f "$KUBECONFIG" 2>/dev/null)" != "$(readlink -f "$CLUSTER_KUBECONFIG" 2>/dev/null)" ] || return 1
  [ -f "$KUBECONFIG" ] || { log "KUBECONFIG=$KUBECONFIG does not exist: bringing up the local cluster"; return 1; }
  local kubectl
  kubectl=$(command -v kubectl || echo "$K8S_BIN/kubectl")
  if [ ! -x "$kubectl" ]; then "$RDX_ROOT/hack/build-k8s.sh" kubectl >&2; fi
  if timeout 20 "$kubectl" --request-timeout=10s get --raw /readyz >/dev/null 2>&1; then return 0; fi
  log "KUBECONFIG=$KUBECONFIG is not reachable: bringing up the local cluster instead"
  return 1
}

preflight() {
  [ "$(id -u)" = 0 ] || die "the local cluster needs root (it runs kubelet, containerd and kube-proxy)"
  [ -d /sys/fs/cgroup/memory ] || [ -f /sys/fs/cgroup/cgroup.controllers ] || die "no memory cgroup controller mounted under /sys/fs/cgroup"
  local node ip
  node=$(node_name); ip=$(node_ip)
  if ! [[ $node =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$ ]] || [ ${#node} -gt 253 ]; then
    die "node name '$node' (RDX_NODE_NAME, default: the hostname) is not a valid DNS-1123 name; set RDX_NODE_NAME"
  fi
  [[ $ip =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]] || die "node IP '$ip' is not an IPv4 address (RDX_NODE_IP)"
  case $ip in 127.*) die "node IP $ip is a loopback address: the kubernetes Service cannot point there (RDX_NODE_IP)" ;; esac
  # grep reads a captured copy: with pipefail, `ip | grep -q` fails when grep exits before ip finished writing.
  grep -q " inet $ip/" <<<"$(ip -4 -o addr show)" || die "node IP $ip is not an address of this host (RDX_NODE_IP)"
  local cmd
  for cmd in curl ip ss openssl flock setsid timeout; do command -v "$cmd" >/dev/null || die "$cmd is required"; done
}

# ensure_cluster_images builds the pause and CoreDNS images once (cached archives keyed by their versions).
ensure_cluster_images() {
  local pause_bin
  if [ ! -f "$(image_archive "$PAUSE_IMAGE")" ]; then
    pause_bin=$RDX_CACHE/pause/${PAUSE_IMAGE##*:}/pause
    mkdir -p "$(dirname "$pause_bin")"
    (cd "$RDX_ROOT/hack/cluster/pause" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$pause_bin" main.go) \
      || die "building the pause binary failed"
    log "building image $PAUSE_IMAGE"
    build_scratch_image "$PAUSE_IMAGE" "$pause_bin" /pause 65535:65535
  fi
  if [ ! -f "$(image_archive "$COREDNS_IMAGE")" ]; then
    log "building image $COREDNS_IMAGE"
    build_scratch_image "$COREDNS_IMAGE" "$COREDNS_BIN" /coredns
  fi
}

on_up_exit() {
  local rc=$?
  [ "$rc" -eq 0 ] && return 0
  log "cluster up FAILED (exit $rc); component logs follow"
  dump_logs 25
  if [ "${RDX_KEEP_FAILED_CLUSTER:-0}" = 1 ]; then
    log "RDX_KEEP_FAILED_CLUSTER=1: leaving it running; run 'hack/cluster.sh down' when done"
  else
    log "tearing down what was started"
    cluster_teardown || true
    verify_clean >&2 || true
  fi
  exit "$rc"
}

# prepare_artifacts builds and caches everything up needs (Debian packages, Kubernetes binaries, CoreDNS, helm,
# the pause and CoreDNS images) and starts nothing. Each piece is locked on its own, so a prepare running in the
# background (e.g. while the engine builds) and an up that needs its results wait for each other, not fail.
prepare_artifacts() {
  local t
  if [ "${RDX_CLUSTER_PREBUILT:-0}" = 1 ]; then check_prebuilt; return; fi
  apt_install etcd-server containerd runc containernetworking-plugins iptables conntrack openssl curl iproute2 buildah
  require_go
  t=$SECONDS; "$RDX_ROOT/hack/build-k8s.sh" >&2; log "kubernetes binaries ready ($((SECONDS - t)) s)"
  t=$SECONDS; ensure_coredns; ensure_helm; log "CoreDNS and helm ready ($((SECONDS - t)) s)"
  t=$SECONDS
  mkdir -p "$IMAGE_CACHE"
  (exec 6>"$IMAGE_CACHE/.cluster-images.lock"; flock 6; ensure_cluster_images)
  log "pause and CoreDNS images ready ($((SECONDS - t)) s)"
}

# check_prebuilt: RDX_CLUSTER_PREBUILT=1 says a machine without Go or apt (the soft-RoCE VM) got every artifact from
# elsewhere; name whatever is missing instead of trying to build it.
check_prebuilt() {
  local missing=() c
  for c in etcd containerd runc ctr iptables conntrack openssl curl; do command -v "$c" >/dev/null || missing+=("$c (command)"); done
  [ -x /usr/lib/cni/bridge ] || missing+=("/usr/lib/cni/bridge (containernetworking-plugins)")
  for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do
    [ -x "$K8S_BIN/$c" ] || missing+=("$K8S_BIN/$c")
  done
  [ -x "$COREDNS_BIN" ] || missing+=("$COREDNS_BIN")
  for c in "$PAUSE_IMAGE" "$COREDNS_IMAGE"; do [ -f "$(image_archive "$c")" ] || missing+=("$(image_archive "$c")"); done
  [ ${#missing[@]} -eq 0 ] || die "RDX_CLUSTER_PREBUILT=1 but these are missing: ${missing[*]}"
  log "prebuilt cluster artifacts present (RDX_CLUSTER_PREBUILT=1)"
}

cluster_up() {
  if external_cluster_reachable; then
    log "using the reachable cluster in KUBECONFIG; nothing to bring up"
    echo "$KUBECONFIG"
    return 0
  fi
  preflight
  local t0=$SECONDS t
  prepare_artifacts

  trap on_up_exit EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  t=$SECONDS
  if ! any_component_running; then
    # A fresh start: every port must be free, and the logs start over (the previous run's stay in logs.prev).
    check_ports_free "$ETCD_CLIENT_PORT" "$ETCD_PEER_PORT" "$APISERVER_PORT" 10248 10250 10256 10257 10259
    rm -rf "$CLUSTER_LOGS.prev"
    [ -d "$CLUSTER_LOGS" ] && mv "$CLUSTER_LOGS" "$CLUSTER_LOGS.prev"
  fi
  mkdir -p "$CLUSTER_LOGS" "$CLUSTER_RUN"
  save_host_state
  ensure_pki
  write_containerd_config
  write_kubelet_config
  start_control_plane
  start_node
  deploy_coredns
  trap - EXIT INT TERM
  log "cluster up: node $(node_name) ($(node_ip)) Ready, CoreDNS available; start-up $((SECONDS - t)) s, total $((SECONDS - t0)) s"
  log "logs: $CLUSTER_LOGS   stop with: hack/cluster.sh down (make down)"
  log "kubeconfig: export KUBECONFIG=$CLUSTER_KUBECONFIG"
  echo "$CLUSTER_KUBECONFIG"
}

any_component_running() {
  local name
  for name in "${COMPONENTS[@]}"; do component_pid "$name" >/dev/null && return 0; done
  return 1
}

cluster_down() {
  [ "$(id -u)" = 0 ] || die "hack/cluster.sh down needs root"
  local t=$SECONDS rc=0
  cluster_teardown
  log "verifying the host is clean"
  verify_clean || rc=1
  if [ $rc -eq 0 ]; then
    rm -rf "$CLUSTER_HOST_STATE"
    log "down: clean in $((SECONDS - t)) s"
  else
    log "down: something was left behind (see the checks above); host state kept in $CLUSTER_HOST_STATE, run down again"
  fi
  return $rc
}

cluster_status() {
  local name pid rc=0
  for name in "${COMPONENTS[@]}"; do
    if pid=$(component_pid "$name"); then printf '%-24s running (pid %s)\n' "$name" "$pid"
    else printf '%-24s not running\n' "$name"; rc=1; fi
  done
  printf 'logs: %s\nkubeconfig: %s\n' "$CLUSTER_LOGS" "$CLUSTER_KUBECONFIG"
  if api_reachable; then kubectl_local get nodes -o wide && kubectl_local get pods -A -o wide
  else echo "kube-apiserver: not reachable"; rc=1; fi
  return $rc
}

# Serialize up/down/status: two scripts (e.g. demo and e2e) must not start or tear down components at once.
with_lock() {
  mkdir -p "$CLUSTER_DIR"
  exec 7>"$CLUSTER_DIR/.lock"
  if ! flock -n 7; then
    log "waiting (at most 15 min) for another hack/cluster.sh holding $CLUSTER_DIR/.lock"
    flock -w 900 7 || die "another hack/cluster.sh has held $CLUSTER_DIR/.lock for 15 minutes"
  fi
  "$@"
}

case "${1:-}" in
  up) with_lock cluster_up ;;
  prepare) prepare_artifacts ;;
  down) with_lock cluster_down ;;
  status) cluster_status ;;
  smoke) cluster_smoke ;;
  kubeconfig)
    [ -f "$CLUSTER_KUBECONFIG" ] || die "the local cluster is not up; run: hack/cluster.sh up"
    echo "$CLUSTER_KUBECONFIG" ;;
  *) usage ;;
esac
