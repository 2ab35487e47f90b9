#!/usr/bin/env bash
# `make demo`: builds what is needed (engine, images), uses the cluster in $KUBECONFIG when it is reachable or brings
# the local offline cluster up, installs the operator with Helm, applies the sample TxCluster (1 shard x 3 replicas,
# tcp), runs a short rdx-bench load from a pod inside the cluster (the engine image, with the cluster's topology
# ConfigMap mounted) and prints its numbers, then how to connect with redis-cli and how to stop (`make down`).
# The cluster stays up. Re-running is safe (helm upgrade --install, kubectl apply).
#
# Settings: RDX_DEMO_NAMESPACE (rdx-demo), RDX_DEMO_DURATION (10 s), RDX_DEMO_THREADS (2), RDX_DEMO_KEYS (10000),
#           RDX_DEMO_READ_RATIO (0.5), RDX_ENGINE_RELEASE_DIR (use a finished engine build instead of make engine).
source "$(dirname "$0")/lib.sh"
source "$RDX_ROOT/hack/e2e-lib.sh"

[ "$(id -u)" = 0 ] || die "hack/demo.sh needs root (it may bring up the local cluster and builds images)"
require_go
NS=${RDX_DEMO_NAMESPACE:-rdx-demo}
OPERATOR_NS=rdx-system
DURATION=${RDX_DEMO_DURATION:-10}
THREADS=${RDX_DEMO_THREADS:-2}
KEYS=${RDX_DEMO_KEYS:-10000}
READ_RATIO=${RDX_DEMO_READ_RATIO:-0.5}
SAMPLE=$RDX_ROOT/operator/config/samples/rdx_v1alpha1_txcluster_tcp.yaml
[[ $DURATION =~ ^[0-9]+$ ]] && [ "$DURATION" -ge 1 ] && [ "$DURATION" -le 600 ] || die "RDX_DEMO_DURATION=$DURATION: want 1..600 seconds"
[[ $THREADS =~ ^[0-9]+$ ]] && [ "$THREADS" -ge 1 ] && [ "$THREADS" -le 64 ] || die "RDX_DEMO_THREADS=$THREADS: want 1..64"
[[ $KEYS =~ ^[0-9]+$ ]] && [ "$KEYS" -ge 1 ] && [ "$KEYS" -le 10000000 ] || die "RDX_DEMO_KEYS=$KEYS: want 1..10000000"
[[ $READ_RATIO =~ ^(0(\.[0-9]+)?|1(\.0+)?)$ ]] || die "RDX_DEMO_READ_RATIO=$READ_RATIO: want a number in 0..1"
[[ $NS =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ ]] || die "RDX_DEMO_NAMESPACE=$NS is not a namespace name"
T0=$SECONDS

kc() { timeout 330 "$K8S_BIN/kubectl" --request-timeout=30s "$@"; }

on_exit() {
  local rc=$?
  trap - EXIT
  [ ${#PHASES[@]} -eq 0 ] || print_phases
  if [ $rc -ne 0 ]; then
    log "demo FAILED (exit $rc) after $((SECONDS - T0)) s"
    if [ -n "${KUBECONFIG:-}" ] && kc get ns "$NS" >/dev/null 2>&1; then
      kc -n "$NS" get txc,sts,pods -o wide >&2 || true
      kc -n "$NS" get events --sort-by=.lastTimestamp 2>/dev/null | tail -n 25 >&2 || true
      kc -n "$OPERATOR_NS" logs deploy/rdx-operator --tail=30 >&2 2>/dev/null || true
    fi
    [ "$BROUGHT_UP_LOCAL" = 1 ] && log "the local cluster is still up for debugging; stop it with: make down"
  fi
  exit $rc
}
trap on_exit EXIT

install_operator() {
  local op_repo=${OPERATOR_IMAGE%:*} eng_repo=${ENGINE_IMAGE%:*}
  timeout 330 "$TOOLS_BIN/helm" upgrade --install rdx-operator "$RDX_ROOT/charts/rdx-operator" \
    --namespace "$OPERATOR_NS" --create-namespace --wait --timeout 5m \
    --set image.repository="$op_repo" --set image.tag="${OPERATOR_IMAGE##*:}" \
    --set engineImage.repository="$eng_repo" --set engineImage.tag="${ENGINE_IMAGE##*:}" >/dev/null
  log "operator: $(kc -n "$OPERATOR_NS" get deploy rdx-operator -o jsonpath='{.status.readyReplicas}/{.spec.replicas} ready, image {.spec.template.spec.containers[0].image}')"
}

apply_cluster() {
  kc get ns "$NS" >/dev/null 2>&1 || kc create namespace "$NS" >/dev/null
  kc -n "$NS" apply -f "$SAMPLE" >&2
  log "waiting (at most 5 min) for TxCluster demo to be Ready"
  kc -n "$NS" wait txc/demo --for=condition=Ready --timeout=300s >&2
  kc -n "$NS" get txc demo -o wide >&2
}

# run_bench: rdx-bench in a pod, as a native client of the cluster: the topology ConfigMap tells it every node.
run_bench() {
  kc -n "$NS" delete pod rdx-bench --ignore-not-found --wait=true >/dev/null
  kc -n "$NS" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: rdx-bench
  labels: {app.kubernetes.io/name: rdx-bench, app.kubernetes.io/part-of: rdx}
spec:
  restartPolicy: Never
  securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
    - name: rdx-bench
      image: $ENGINE_IMAGE
      imagePullPolicy: IfNotPresent
      command: [rdx-bench]
      args: [--config, /etc/rdx/topology.json, --threads, "$THREADS", --outstanding, "8", --warmup, "2",
             --duration, "$DURATION", --keys, "$KEYS", --load, --read-ratio, "$READ_RATIO", --verify-acked,
             --connect-timeout, "30"]
      resources: {requests: {cpu: 500m, memory: 64Mi}, limits: {memory: 512Mi}}
      securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
      volumeMounts: [{name: topology, mountPath: /etc/rdx, readOnly: true}]
  volumes:
    - name: topology
      configMap: {name: demo-topology}
YAML
  log "rdx-bench runs in pod $NS/rdx-bench: load $KEYS keys, then ${DURATION}s of YCSB (read ratio $READ_RATIO, $THREADS threads)"
  local deadline=$((SECONDS + DURATION + 180)) phase=
  while [ $SECONDS -lt $deadline ]; do
    phase=$(kc -n "$NS" get pod rdx-bench -o jsonpath='{.status.phase}')
    case $phase in Succeeded | Failed) break ;; esac
    sleep 2
  done
  BENCH_OUTPUT=$(kc -n "$NS" logs rdx-bench)
  [ "$phase" = Succeeded ] || { printf '%s\n' "$BENCH_OUTPUT" >&2; die "rdx-bench pod ended in phase '${phase:-unknown}'"; }
}

# check_port_forward proves the printed redis-cli instructions work: a port-forward to the endpoint Service
# answers PING (RESP over bash's /dev/tcp, so no redis-cli is needed here).
check_port_forward() {
  local port pid reply=
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$K8S_BIN/kubectl" -n "$NS" port-forward svc/demo "$port:6379" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 40); do
    if reply=$(timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && printf '*1\r\n\$4\r\nPING\r\n' >&3 && head -c 7 <&3" 2>/dev/null) \
        && [ "${reply%$'\r'*}" = "+PONG" ]; then break; fi
    reply=; sleep 0.5
  done
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
  [ -n "$reply" ] || die "kubectl port-forward svc/demo did not answer PING on 127.0.0.1:$port"
  log "checked: kubectl port-forward svc/demo answers PING with +PONG"
}

phase "engine release build" build_engine
phase "images (engine, operator)" build_images
phase "cluster up (or use KUBECONFIG)" use_or_bring_up_cluster
phase "helm upgrade --install rdx-operator" install_operator
phase "TxCluster demo Ready" apply_cluster
phase "rdx-bench in the cluster" run_bench
phase "port-forward check" check_port_forward
print_phases
PHASES=()

cat <<EOF

================ rdx demo: rdx-bench from pod $NS/rdx-bench against TxCluster demo ================
$BENCH_OUTPUT
==================================================================================================
Ready in $((SECONDS - T0)) s.

Use it:
  export KUBECONFIG=$KUBECONFIG
  export PATH=$K8S_BIN:$TOOLS_BIN:\$PATH      # the kubectl and helm built for this cluster
  kubectl -n $NS get txc demo -o wide          # status, epoch, endpoint
  kubectl -n $NS port-forward svc/demo 6379:6379 &
  redis-cli -p 6379 SET greeting hello && redis-cli -p 6379 GET greeting
  kubectl -n $NS logs pod/rdx-bench             # the benchmark output again

Stop everything (the local cluster, and every process, mount, iptables chain and sysctl it changed):
  make down
EOF
