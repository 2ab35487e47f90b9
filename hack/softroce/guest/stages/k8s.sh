#!/bin/bash
# Part 2: Kubernetes on soft-RoCE. Inside the VM: the offline single-node cluster of hack/cluster.sh (binaries and
# images from the share, node IP = the rxe netdev's address), the operator installed with Helm, and a TxCluster
# with transport verbs in hostDevice mode whose pods open rxe0; then rdx-bench in a pod runs SmallBank over verbs
# with the strict-serializability checker, and every rdxd's metrics must show verbs traffic.
#
# Why hostNetwork: rdma_cm resolves addresses in the caller's network namespace, and rxe on this guest kernel (6.1)
# works only in the initial one (see ../shared/notes/softroce-vm.md), so the pods share the node's namespace and
# its rxe0; each shard binds its own ports, so the shards (one replica each: replicas of a shard need distinct
# nodes) fit on the one node. Everything is slow under emulation: generous deadlines, small loads.
set -euo pipefail
K=/mnt/host/k8s
[ -f "$K/env" ] || { echo "k8s stage: $K/env missing (the host's hack/softroce/k8s-share.sh did not run)"; exit 1; }
set -a; . "$K/env"; set +a
export RDX_CACHE=/var/lib/rdx-cache RDX_NODE_IP=$RDMA_IP RDX_NODE_NAME=softroce
export RDX_CLUSTER_PREBUILT=1 RDX_CLUSTER_TIMEOUT_SCALE=${RDX_K8S_TIMEOUT_SCALE:-10}
repo=$K/repo
NS=rdx-verbs
SHARDS=3
t0=$(date +%s)
step() { echo "[k8s $(( $(date +%s) - t0 ))s] $*"; }

# --- node prerequisites the image's PID 1 does not set up (no init system in the guest) -------------------------
mountpoint -q /sys/fs/cgroup || mount -t cgroup2 cgroup2 /sys/fs/cgroup
for c in cpuset cpu io memory hugetlb pids; do echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true; done
modprobe -a overlay br_netfilter bridge veth nf_conntrack 2>/dev/null || true
[ -s /etc/resolv.conf ] || echo "nameserver $RDMA_IP" >/etc/resolv.conf  # CoreDNS reads it; it forwards nothing
# The guest has no default route. A packet a host-network pod sends to a ClusterIP (CoreDNS at 10.96.0.10) is
# routed before kube-proxy's DNAT rewrites it, so without a route to the service range it fails with "network
# unreachable" and the rdxd pods cannot resolve each other's names.
ip route show 10.96.0.0/16 | grep -q . || ip route add 10.96.0.0/16 dev "$RDMA_NETDEV"

# --- local copies of the binaries (executables stay off 9p); images are read from the share once -----------------
mkdir -p "$RDX_CACHE/k8s/$K8S_VERSION/bin" "$RDX_CACHE/coredns/$COREDNS_VERSION/bin" "$RDX_CACHE/tools/helm/$HELM_VERSION" \
  "$RDX_CACHE/tools/bin"
cp "$K"/bin/kube* "$RDX_CACHE/k8s/$K8S_VERSION/bin/"
cp "$K/bin/coredns" "$RDX_CACHE/coredns/$COREDNS_VERSION/bin/coredns"
cp "$K/bin/helm" "$RDX_CACHE/tools/helm/$HELM_VERSION/helm"
ln -sfn "$K/images" "$RDX_CACHE/images"
export PATH=$RDX_CACHE/k8s/$K8S_VERSION/bin:$RDX_CACHE/tools/helm/$HELM_VERSION:$PATH
step "binaries copied"

dump() {
  set +e
  echo "--- diagnostics ---"
  kubectl get nodes,pods -A -o wide
  kubectl -n "$NS" get txc,sts,pods,events -o wide
  kubectl -n rdx-system logs deploy/rdx-operator --tail=40
  for p in $(kubectl -n "$NS" get pods -o name 2>/dev/null); do echo "--- $p"; kubectl -n "$NS" logs "$p" --tail=30; done
  for s in $(seq 0 $((SHARDS - 1))); do echo "verbs-s$s-0 /readyz: $(curl -s -m 5 "http://$RDMA_IP:$((9100 + s))/readyz")"; done
  ip route
  tail -n 20 "$RDX_CACHE"/cluster/logs/*.log
}
trap 'rc=$?; [ $rc -eq 0 ] || dump; exit $rc' EXIT

# --- cluster, operator ------------------------------------------------------------------------------------------
bash "$repo/hack/cluster.sh" up >/dev/null
export KUBECONFIG=$RDX_CACHE/cluster/kubeconfig
step "cluster up: $(kubectl get nodes --no-headers | awk '{print $1, $2}')"
helm upgrade --install rdx-operator "$repo/charts/rdx-operator" --namespace rdx-system --create-namespace \
  --wait --timeout 20m --set image.repository="${OPERATOR_IMAGE%:*}" --set image.tag="${OPERATOR_IMAGE##*:}" \
  --set engineImage.repository="${ENGINE_IMAGE%:*}" --set engineImage.tag="${ENGINE_IMAGE##*:}" >/dev/null
step "operator installed with helm: $(kubectl -n rdx-system get deploy rdx-operator -o jsonpath='{.status.readyReplicas}/{.spec.replicas} ready')"

# --- a TxCluster on verbs -----------------------------------------------------------------------------------------
kubectl create namespace "$NS" >/dev/null
kubectl -n "$NS" apply -f - <<EOF
apiVersion: rdx.dev/v1alpha1
kind: TxCluster
metadata: {name: verbs}
spec:
  shards: $SHARDS
  replicas: 1
  workers: 1
  transport:
    kind: verbs
    rdma: {mode: hostDevice, hostNetwork: true, device: $RDMA_DEV}
  transactions: {protocol: dnl4}
  resources:
    limits: {memory: 768Mi}
EOF
# Polled rather than `kubectl wait`, so the log shows progress (or a crash loop) while it waits.
ready=
for i in $(seq 1 120); do
  ready=$(kubectl -n "$NS" get txc verbs -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' || true)
  [ "$ready" = True ] && break
  if [ $((i % 6)) -eq 0 ]; then
    step "waiting for Ready: $(kubectl -n "$NS" get pods --no-headers 2>/dev/null | awk '{printf "%s %s %s restarts=%s; ", $1, $2, $3, $4}')"
    for s in $(seq 0 $((SHARDS - 1))); do
      echo "    verbs-s$s-0: $(kubectl -n "$NS" logs "verbs-s$s-0" --tail=1 2>&1 | cut -c1-200)"
      echo "    verbs-s$s-0 /readyz: $(curl -s -m 5 "http://$RDMA_IP:$((9100 + s))/readyz" | cut -c1-300)"
    done
  fi
  sleep 10
done
[ "$ready" = True ] || { echo "TxCluster verbs not Ready after 1200 s"; exit 1; }
step "TxCluster Ready"
kubectl -n "$NS" get txc verbs -o wide
kubectl -n "$NS" get pods -o wide

# --- a transactional workload from a pod, over verbs ------------------------------------------------------------
kubectl -n "$NS" apply -f - <<EOF
apiVersion: v1
kind: Pod
metadata: {name: rdx-bench}
spec:
  restartPolicy: Never
  hostNetwork: true
  dnsPolicy: ClusterFirstWithHostNet
  containers:
    - name: rdx-bench
      image: $ENGINE_IMAGE
      imagePullPolicy: Never
      command: [rdx-bench]
      args: [--config, /etc/rdx/topology.json, --workload, "smallbank:accounts=300,hot_percent=10", --load,
             --duration, "15", --coroutines, "4", --history, /tmp/smallbank.history, --connect-timeout, "300"]
      securityContext: {privileged: true, runAsUser: 0}  # uid 0: capabilities (IPC_LOCK) need it
      volumeMounts:
        - {name: topology, mountPath: /etc/rdx, readOnly: true}
        - {name: infiniband, mountPath: /dev/infiniband}
  volumes:
    - name: topology
      configMap: {name: verbs-topology}
    - name: infiniband
      hostPath: {path: /dev/infiniband, type: Directory}
EOF
phase=
for _ in $(seq 1 360); do
  phase=$(kubectl -n "$NS" get pod rdx-bench -o jsonpath='{.status.phase}' || true)
  case $phase in Succeeded|Failed) break ;; esac
  sleep 5
done
kubectl -n "$NS" logs rdx-bench | tee "$RESULTS/k8s-bench.txt"
[ "$phase" = Succeeded ] || { echo "rdx-bench pod ended in phase '${phase:-unknown}' (checker verdict or error above)"; exit 1; }
step "rdx-bench pod Succeeded (SmallBank over verbs, history checked)"

# --- proof: each rdxd opened rxe0 and moved its traffic over verbs ------------------------------------------------
rc=0
: >"$RESULTS/k8s-metrics.txt"
for s in $(seq 0 $((SHARDS - 1))); do
  pod=verbs-s$s-0
  opened=$(kubectl -n "$NS" logs "$pod" | grep "verbs: device $RDMA_DEV" || true)
  if [ -n "$opened" ]; then echo "$pod log: ${opened%%$'\n'*}"; else echo "$pod: no 'verbs: device $RDMA_DEV' in its log"; rc=1; fi
  metrics=$(curl -sf "http://$RDMA_IP:$((9100 + s))/metrics") || { echo "$pod: /metrics on port $((9100 + s)) failed"; rc=1; continue; }
  grep -E '^rdx_transport_(packets_sent|packets_received|onesided_issued)_total|^rdx_store_keys' <<<"$metrics" | sed "s/^/$pod /" | tee -a "$RESULTS/k8s-metrics.txt"
  sent=$(awk '/^rdx_transport_packets_sent_total\{.*transport="verbs"/ {s += $NF} END {print s + 0}' <<<"$metrics")
  if grep -q 'transport="tcp"' <<<"$metrics" || ! awk -v n="$sent" 'BEGIN {exit !(n > 0)}'; then
    echo "$pod: expected verbs traffic only, got packets_sent(verbs)=$sent"; rc=1
  fi
done
[ $rc -eq 0 ] && step "every rdxd pod shows verbs traffic and no tcp transport"
exit $rc
