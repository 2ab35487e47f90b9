#!/usr/bin/env bash
# `make demo`: builds what is needed (engine, images, the kubectl-rdx plugin), uses the cluster in $KUBECONFIG when it
# is reachable or brings the local offline cluster up, installs the operator with Helm, applies the sample TxCluster
# (1 shard x 3 replicas, tcp) and the SmallBank Benchmark sample (load, a run whose history is checked for strict
# serializability, the exact balance invariant), follows the Benchmark with `kubectl rdx bench watch`, then prints its
# result table and where its report is, how to connect with redis-cli and how to stop (`make down`).
# The cluster stays up. Re-running is safe (helm upgrade --install, kubectl apply; the Benchmark is recreated).
#
# Settings: RDX_DEMO_NAMESPACE (rdx-demo), RDX_DEMO_OUT (_out/demo: the report goes to its report/),
#           RDX_ENGINE_RELEASE_DIR (use a finished engine build instead of make engine).
source "$(dirname "$0")/lib.sh"
source "$RDX_ROOT/hack/e2e-lib.sh"

[ "$(id -u)" = 0 ] || die "hack/demo.sh needs root (it may bring up the local cluster and builds images)"
require_go
NS=${RDX_DEMO_NAMESPACE:-rdx-demo}
OPERATOR_NS=rdx-system
OUT=${RDX_DEMO_OUT:-$RDX_ROOT/_out/demo}
SAMPLE=$RDX_ROOT/operator/config/samples/rdx_v1alpha1_txcluster_tcp.yaml
BENCH_SAMPLE=$RDX_ROOT/operator/config/samples/rdx_v1alpha1_benchmark_smallbank.yaml
BENCH=smallbank
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
      kc -n "$NS" get txc,bench,sts,jobs,pods -o wide >&2 || true
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

build_plugin() {
  (cd "$RDX_ROOT/operator" && go build -o "$TOOLS_BIN/kubectl-rdx" ./cmd/kubectl-rdx)
  log "kubectl-rdx: $("$TOOLS_BIN/kubectl-rdx" --version)"
}

rdx() { timeout 900 "$TOOLS_BIN/kubectl-rdx" --kubeconfig "$KUBECONFIG" -n "$NS" "$@"; }

# run_bench: the SmallBank Benchmark sample; a finished Benchmark is immutable, so a re-run replaces it.
run_bench() {
  kc -n "$NS" delete bench "$BENCH" --ignore-not-found --wait=true >/dev/null
  rdx bench run -f "$BENCH_SAMPLE" --watch --timeout 10m >&2
  BENCH_TABLE=$(rdx bench results "$BENCH")
  rm -rf "$OUT/report" && mkdir -p "$OUT"
  rdx bench report "$BENCH" --out "$OUT/report" >&2
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
phase "kubectl-rdx plugin" build_plugin
phase "Benchmark smallbank (load, run, check)" run_bench
phase "port-forward check" check_port_forward
print_phases
PHASES=()

cat <<EOF

================ rdx demo: Benchmark $NS/$BENCH against TxCluster demo ================
$BENCH_TABLE
=======================================================================================
Report: $OUT/report/report.html (plots: $OUT/report/throughput.png, $OUT/report/latency.png)
Ready in $((SECONDS - T0)) s.

Use it:
  export KUBECONFIG=$KUBECONFIG
  export PATH=$K8S_BIN:$TOOLS_BIN:\$PATH      # the kubectl, helm and kubectl-rdx built for this cluster
  kubectl -n $NS get txc demo -o wide          # status, epoch, endpoint
  kubectl rdx -n $NS status demo               # shards, primaries, pods
  kubectl -n $NS get bench                     # Benchmarks: phase, progress, throughput, p99, verdict
  kubectl -n $NS port-forward svc/demo 6379:6379 &
  redis-cli -p 6379 SET greeting hello && redis-cli -p 6379 GET greeting

Stop everything (the local cluster, and every process, mount, iptables chain and sysctl it changed):
  make down
EOF
