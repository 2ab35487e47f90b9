# shellcheck shell=bash
# Configuration and start-up of each cluster component, in dependency order. Every start is a no-op when the
# component already runs, and every readiness wait has a deadline, so `up` can be re-run safely.

# write_if_changed <file> [component] < content: replaces the file only when the content differs (kube-proxy
# exits when its config file changes, so an idempotent up must not touch unchanged files); a running component
# whose config did change is stopped, so the start that follows runs it with the new config.
write_if_changed() {
  local file=$1 component=${2:-}
  cat >"$file.new"
  if cmp -s "$file.new" "$file"; then rm -f "$file.new"; return 0; fi
  mv "$file.new" "$file"
  if [ -n "$component" ] && component_pid "$component" >/dev/null; then
    log "$(basename "$file") changed: restarting $component"
    stop_component "$component"
  fi
}

write_containerd_config() {
  mkdir -p "$CNI_CONF_DIR" "$CONTAINERD_ROOT" "$CONTAINERD_STATE"
  # restrict_oom_score_adj: this host withholds CAP_SYS_RESOURCE, so sandboxes that lower oom_score_adj fail
  # ("can't get final child's PID from pipe"). The pause image is local: nothing can be pulled here.
  write_if_changed "$CLUSTER_CONF/containerd.toml" containerd <<EOF
version = 2
root = "$CONTAINERD_ROOT"
state = "$CONTAINERD_STATE"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "$CONTAINERD_SOCK"
[ttrpc]
  address = "$CLUSTER_RUN/containerd-ttrpc.sock"
[debug]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$CONTAINERD_ROOT/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN_DIR"
    conf_dir = "$CNI_CONF_DIR"
    max_conf_num = 1
EOF
  # Pods stay on a node-local bridge: no masquerading (nothing is meant to leave the host) and no portmap, so
  # the CNI plugins create no iptables rules at all. IPAM state lives with the cluster's data, not in /var/lib/cni.
  write_if_changed "$CNI_CONF_DIR/10-$CNI_NETWORK.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$CNI_NETWORK",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$CNI_BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$POD_CIDR_NODE"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$CLUSTER_DATA/cni-ipam"
      }
    }
  ]
}
EOF
}

write_kubelet_config() {
  mkdir -p "$CLUSTER_CONF"
  # cgroupfs + failCgroupV1=false: no systemd and a cgroup v1 host. localStorageCapacityIsolation=false: the
  # eviction manager cannot stat this VM's root device. makeIPTablesUtilChains=false: kube-proxy owns iptables.
  write_if_changed "$CLUSTER_CONF/kubelet.yaml" kubelet <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
makeIPTablesUtilChains: false
enforceNodeAllocatable: []
localStorageCapacityIsolation: false
podCIDR: $POD_CIDR_NODE
clusterDNS: [$CLUSTER_DNS_IP]
clusterDomain: $CLUSTER_DOMAIN
resolvConf: /etc/resolv.conf
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $CLUSTER_PKI/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $CLUSTER_PKI/kubelet-serving.crt
tlsPrivateKeyFile: $CLUSTER_PKI/kubelet-serving.key
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
serializeImagePulls: false
imageGCHighThresholdPercent: 100
evictionHard: {memory.available: "100Mi"}
rotateCertificates: false
serverTLSBootstrap: false
EOF
  # iptables mode; localhostNodePorts=false keeps route_localnet untouched and zero conntrack settings keep the
  # host's conntrack sysctls (down still restores and checks both).
  write_if_changed "$CLUSTER_CONF/kube-proxy.yaml" kube-proxy <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $CLUSTER_CONF/kube-proxy.kubeconfig}
hostnameOverride: $(node_name)
mode: iptables
clusterCIDR: $POD_CIDR_CLUSTER
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: [primary]
iptables: {localhostNodePorts: false}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
}

check_ports_free() {
  local port
  for port in "$@"; do
    if [ -n "$(ss -Hltn "sport = :$port")" ]; then
      die "port $port is in use by another process ($(ss -Hltnp "sport = :$port" | grep -o 'users:.*' | head -1)); stop it or choose other ports (RDX_ETCD_PORT, RDX_APISERVER_PORT)"
    fi
  done
}

https_ok() { curl -fsS --max-time 3 --cacert "$CLUSTER_PKI/ca.crt" --cert "$CLUSTER_PKI/admin.crt" --key "$CLUSTER_PKI/admin.key" "$1"; }
https_insecure_ok() { curl -fsSk --max-time 3 "$1"; }
http_ok() { curl -fsS --max-time 3 "$1"; }

# require_up <seconds> <component> <what> <check...>: wait_until, and on timeout fail with that component's log.
require_up() {
  local seconds=$1 component=$2 what=$3; shift 3
  if ! wait_until "$seconds" "$what" "$@"; then
    if ! component_pid "$component" >/dev/null; then log "$component is not running (exited)"; fi
    tail -n 30 "$CLUSTER_LOGS/$component.log" >&2 2>/dev/null || true
    die "$what did not happen within ${seconds}s; full log: $CLUSTER_LOGS/$component.log"
  fi
}

start_control_plane() {
  local ip; ip=$(node_ip)
  mkdir -p "$ETCD_DATA"; chmod 700 "$ETCD_DATA"
  start_component etcd --name rdx-local --data-dir "$ETCD_DATA" \
    --listen-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "rdx-local=http://127.0.0.1:$ETCD_PEER_PORT" --log-level warn
  require_up 30 etcd "etcd health" http_ok "http://127.0.0.1:$ETCD_CLIENT_PORT/health"

  start_component kube-apiserver --advertise-address="$ip" --bind-address=0.0.0.0 --secure-port="$APISERVER_PORT" \
    --etcd-servers="http://127.0.0.1:$ETCD_CLIENT_PORT" --service-cluster-ip-range="$SERVICE_CIDR" \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction --allow-privileged=true \
    --tls-cert-file="$CLUSTER_PKI/apiserver.crt" --tls-private-key-file="$CLUSTER_PKI/apiserver.key" \
    --client-ca-file="$CLUSTER_PKI/ca.crt" --kubelet-certificate-authority="$CLUSTER_PKI/ca.crt" \
    --kubelet-client-certificate="$CLUSTER_PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$CLUSTER_PKI/apiserver-kubelet-client.key" --kubelet-preferred-address-types=InternalIP \
    --service-account-issuer="https://kubernetes.default.svc.$CLUSTER_DOMAIN" \
    --service-account-key-file="$CLUSTER_PKI/sa.pub" --service-account-signing-key-file="$CLUSTER_PKI/sa.key" \
    --profiling=false --v=1
  require_up 90 kube-apiserver "kube-apiserver /readyz" https_ok "https://127.0.0.1:$APISERVER_PORT/readyz"

  local kcm=$CLUSTER_CONF/controller-manager.kubeconfig sched=$CLUSTER_CONF/scheduler.kubeconfig
  start_component kube-controller-manager --kubeconfig="$kcm" --authentication-kubeconfig="$kcm" \
    --authorization-kubeconfig="$kcm" --bind-address=127.0.0.1 --leader-elect=false \
    --allocate-node-cidrs=true --cluster-cidr="$POD_CIDR_CLUSTER" --node-cidr-mask-size=24 \
    --service-cluster-ip-range="$SERVICE_CIDR" --cluster-signing-cert-file="$CLUSTER_PKI/ca.crt" \
    --cluster-signing-key-file="$CLUSTER_PKI/ca.key" --root-ca-file="$CLUSTER_PKI/ca.crt" \
    --service-account-private-key-file="$CLUSTER_PKI/sa.key" --use-service-account-credentials=true \
    --profiling=false --v=1
  start_component kube-scheduler --kubeconfig="$sched" --authentication-kubeconfig="$sched" \
    --authorization-kubeconfig="$sched" --bind-address=127.0.0.1 --leader-elect=false --profiling=false --v=1
  require_up 60 kube-controller-manager "kube-controller-manager /healthz" https_insecure_ok https://127.0.0.1:10257/healthz
  require_up 60 kube-scheduler "kube-scheduler /healthz" https_insecure_ok https://127.0.0.1:10259/healthz
}

# import_cached_images loads every cached image archive that containerd does not have yet (pause, CoreDNS, and
# whatever hack/images.sh built), so a cluster brought up again has the same images without rebuilding.
import_cached_images() {
  local tar ref
  for tar in "$IMAGE_CACHE"/*.tar; do
    [ -f "$tar" ] || continue
    ref=$(cat "$tar.ref" 2>/dev/null) || { log "skipping $tar: no $tar.ref beside it"; continue; }
    if [ -n "$(ctr_local -n k8s.io images ls -q "name==$ref")" ]; then continue; fi
    log "importing $ref into containerd"
    ctr_local -n k8s.io images import "$tar" >/dev/null || die "ctr images import $tar failed"
  done
}

node_ready() {
  [ "$(kubectl_local get node "$(node_name)" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

start_node() {
  local ip; ip=$(node_ip)
  start_component containerd --config "$CLUSTER_CONF/containerd.toml"
  require_up 60 containerd "containerd to serve its socket" ctr_local version
  import_cached_images
  start_component kubelet --config="$CLUSTER_CONF/kubelet.yaml" --kubeconfig="$CLUSTER_CONF/kubelet.kubeconfig" \
    --hostname-override="$(node_name)" --node-ip="$ip" --v=1
  require_up 60 kubelet "kubelet /healthz" http_ok http://127.0.0.1:10248/healthz
  require_up 90 kubelet "node $(node_name) to be Ready" node_ready
  start_component kube-proxy --config="$CLUSTER_CONF/kube-proxy.yaml" --v=1
  require_up 60 kube-proxy "kube-proxy /healthz" http_ok http://127.0.0.1:10256/healthz
}

deploy_coredns() {
  sed -e "s|@COREDNS_IMAGE@|$COREDNS_IMAGE|g" -e "s|@CLUSTER_DNS_IP@|$CLUSTER_DNS_IP|g" \
    -e "s|@CLUSTER_DOMAIN@|$CLUSTER_DOMAIN|g" "$RDX_ROOT/hack/cluster/coredns.yaml" | kubectl_local apply -f - >/dev/null
  if ! kubectl_local -n kube-system rollout status deployment/coredns --timeout=120s >/dev/null; then
    kubectl_local -n kube-system describe pods -l k8s-app=kube-dns >&2 || true
    die "CoreDNS did not become available within 120s"
  fi
}
