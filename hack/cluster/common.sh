# shellcheck shell=bash
# Paths, settings and process helpers of the offline single-node cluster (sourced by hack/cluster.sh after
# hack/lib.sh). Everything the cluster writes lives under $CLUSTER_DIR and $CLUSTER_RUN, except the few host paths
# kubelet and containerd hard-code (see HOST_FIXED_PATHS), which `down` removes again.

CLUSTER_DIR=$RDX_CACHE/cluster
CLUSTER_PKI=$CLUSTER_DIR/pki                # CA, component certificates, service-account keys
CLUSTER_CONF=$CLUSTER_DIR/config            # component configs and kubeconfigs
CLUSTER_DATA=$CLUSTER_DIR/data              # etcd data, containerd root (removed by down)
CLUSTER_LOGS=${RDX_CLUSTER_LOGS:-$CLUSTER_DIR/logs}   # one log per component, kept after down for failure dumps
CLUSTER_HOST_STATE=$CLUSTER_DIR/host-state  # what the host looked like before up (sysctls, paths, iptables chains)
CLUSTER_RUN=/run/rdx-cluster                # pid files and sockets (short paths: unix sockets are limited to 108 bytes)
CLUSTER_KUBECONFIG=$CLUSTER_DIR/kubeconfig  # admin kubeconfig handed to users
IMAGE_CACHE=$RDX_CACHE/images               # docker-archive tarballs that up imports into containerd

CONTAINERD_SOCK=$CLUSTER_RUN/containerd.sock
CONTAINERD_ROOT=$CLUSTER_DATA/containerd
CONTAINERD_STATE=$CLUSTER_RUN/containerd
ETCD_DATA=$CLUSTER_DATA/etcd
CNI_CONF_DIR=$CLUSTER_CONF/cni
CNI_BIN_DIR=/usr/lib/cni
CNI_NETWORK=rdx-pods
CNI_BRIDGE=rdx-cni0

ETCD_CLIENT_PORT=${RDX_ETCD_PORT:-2379}
ETCD_PEER_PORT=${RDX_ETCD_PEER_PORT:-2380}
APISERVER_PORT=${RDX_APISERVER_PORT:-6443}
SERVICE_CIDR=10.96.0.0/16
KUBERNETES_SERVICE_IP=10.96.0.1
CLUSTER_DNS_IP=10.96.0.10
CLUSTER_DOMAIN=cluster.local
POD_CIDR_CLUSTER=10.244.0.0/16
POD_CIDR_NODE=10.244.0.0/24

PAUSE_IMAGE=localhost/rdx/pause:$(sha256sum "$RDX_ROOT/hack/cluster/pause/main.go" | cut -c1-12)
COREDNS_IMAGE=localhost/rdx/coredns:$COREDNS_VERSION

# Host paths kubelet and containerd use whatever they are told; up records which of them already existed.
HOST_FIXED_PATHS=(/var/lib/kubelet /var/lib/cni /var/log/pods /var/log/containers /run/containerd /run/netns)

# Kernel settings the node components change: kubelet's kernel tunables, kube-proxy's route_localnet and
# conntrack limits, the bridge plugin's ip_forward. Saved at up, restored and verified by down.
HOST_SYSCTLS=(
  kernel.panic kernel.panic_on_oops vm.overcommit_memory vm.panic_on_oom
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes
  net.ipv4.ip_forward net.ipv4.conf.all.forwarding net.ipv4.conf.default.forwarding net.ipv4.conf.all.route_localnet
  net.ipv6.conf.all.forwarding
  net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables
  net.netfilter.nf_conntrack_max net.netfilter.nf_conntrack_tcp_timeout_established
  net.netfilter.nf_conntrack_tcp_timeout_close_wait net.netfilter.nf_conntrack_tcp_be_liberal
  net.netfilter.nf_conntrack_udp_timeout net.netfilter.nf_conntrack_udp_timeout_stream
)

# Start order; down stops in reverse (so the apiserver always stops before etcd).
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy)

node_name() { printf '%s' "${RDX_NODE_NAME:-$(hostname | tr '[:upper:]' '[:lower:]')}"; }

# node_ip is the IPv4 address of the default-route interface. The apiserver advertises it (the `kubernetes`
# Service cannot point at loopback); traffic to it never leaves the host.
node_ip() {
  if [ -n "${RDX_NODE_IP:-}" ]; then printf '%s' "$RDX_NODE_IP"; return; fi
  local dev ip
  dev=$(ip -4 route show default 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit }}')
  [ -n "$dev" ] || die "no IPv4 default route to pick the node IP from; set RDX_NODE_IP to a non-loopback IPv4 address of this host"
  ip=$(ip -4 -o addr show dev "$dev" scope global | awk '{split($4, a, "/"); print a[1]; exit}')
  [ -n "$ip" ] || die "interface $dev has no global IPv4 address; set RDX_NODE_IP"
  printf '%s' "$ip"
}

kubectl_local() { "$K8S_BIN/kubectl" --kubeconfig "$CLUSTER_KUBECONFIG" --request-timeout=20s "$@"; }
ctr_local() { timeout $((120 * TIMEOUT_SCALE)) ctr --address "$CONTAINERD_SOCK" "$@"; }

# Every deadline below is multiplied by RDX_CLUSTER_TIMEOUT_SCALE: under software emulation (the soft-RoCE VM runs
# this cluster under TCG) the same steps take several times longer.
TIMEOUT_SCALE=${RDX_CLUSTER_TIMEOUT_SCALE:-1}
[[ $TIMEOUT_SCALE =~ ^[1-9][0-9]?$ ]] || die "RDX_CLUSTER_TIMEOUT_SCALE=$TIMEOUT_SCALE: want an integer 1..99"

# wait_until <seconds> <what> <command...>: polls the command until it succeeds; dies naming what did not
# happen (and the log to read) when the deadline passes. Every wait in these scripts goes through here.
wait_until() {
  local seconds=$(($1 * TIMEOUT_SCALE)) what=$2; shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      log "timed out after ${seconds}s waiting for $what"
      return 1
    fi
    sleep 0.5
  done
}

pid_file() { printf '%s/%s.pid' "$CLUSTER_RUN" "$1"; }
component_binary() {
  case $1 in
    etcd) echo /usr/bin/etcd ;;
    containerd) echo /usr/bin/containerd ;;
    *) echo "$K8S_BIN/$1" ;;
  esac
}

# component_pid prints the pid of a running component, checking the executable so a reused pid is never trusted.
component_pid() {
  local file pid exe
  file=$(pid_file "$1")
  [ -f "$file" ] || return 1
  pid=$(cat "$file")
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
  [ "${exe% (deleted)}" = "$(readlink -f "$(component_binary "$1")")" ] || return 1
  printf '%s' "$pid"
}

# start_component <name> <args...>: starts the component's binary detached, in its own session, logging to
# $CLUSTER_LOGS/<name>.log; no-op when it already runs.
start_component() {
  local name=$1; shift
  if component_pid "$name" >/dev/null; then log "$name already running"; return 0; fi
  local bin; bin=$(component_binary "$name")
  [ -x "$bin" ] || die "$name binary missing: $bin"
  mkdir -p "$CLUSTER_RUN" "$CLUSTER_LOGS"
  # 7>&-: the component must not inherit (and hold forever) the lock of hack/cluster.sh.
  setsid "$bin" "$@" </dev/null >>"$CLUSTER_LOGS/$name.log" 2>&1 7>&- &
  echo $! >"$(pid_file "$name")"
  log "started $name (pid $!, log $CLUSTER_LOGS/$name.log)"
}

# process_gone <pid>: exited (a zombie counts: whoever started it may no longer be there to reap it).
process_gone() { [ ! -d "/proc/$1" ] || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }

# stop_pid <pid> <label> <grace seconds>: SIGTERM, then SIGKILL after the grace period; returns once it is gone.
stop_pid() {
  local pid=$1 label=$2 grace=$3
  kill -TERM "$pid" 2>/dev/null || return 0
  if ! wait_until "$grace" "$label (pid $pid) to exit after SIGTERM" process_gone "$pid"; then
    log "killing $label (pid $pid)"
    kill -KILL "$pid" 2>/dev/null || true
    wait_until 10 "$label (pid $pid) to die after SIGKILL" process_gone "$pid" || true
  fi
}

# stop_components <grace seconds> <name...>: stops independent components in parallel (SIGTERM to all first).
stop_components() {
  local grace=$1 name pid; shift
  local -A pids=()
  for name in "$@"; do
    if pid=$(component_pid "$name"); then
      log "stopping $name (pid $pid)"
      kill -TERM "$pid" 2>/dev/null || true
      pids[$name]=$pid
    fi
  done
  for name in "${!pids[@]}"; do stop_pid "${pids[$name]}" "$name" "$grace"; done
  for name in "$@"; do rm -f "$(pid_file "$name")"; done
}

stop_component() { stop_components "${2:-20}" "$1"; }

# dump_logs prints the tail of every component log: what CI shows when up or a test fails.
dump_logs() {
  local lines=${1:-40} f
  for f in "$CLUSTER_LOGS"/*.log; do
    [ -f "$f" ] || continue
    printf '\n===== %s (last %s lines) =====\n' "$f" "$lines" >&2
    tail -n "$lines" "$f" >&2
  done
}
