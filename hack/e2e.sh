#!/usr/bin/env bash
# The e2e tier (`make test-e2e`): builds the engine (`make engine`), the engine and operator images and the e2e
# client image, uses the cluster in $KUBECONFIG when it is reachable or else brings the local offline cluster up,
# runs the Go suite in e2e/ against it, and ALWAYS tears down a cluster it brought up (trap), printing the host
# checks of `hack/cluster.sh down`. Exit status: the suite's, or down's when the suite passed.
#
#   hack/e2e.sh            the whole tier
#   hack/e2e.sh prepare    only build and cache what does not depend on the engine (Kubernetes binaries, CoreDNS,
#                          helm, the pause/CoreDNS/base/e2e-client images, the compiled suite); meant to run in
#                          the background while the engine builds and tests (every piece is locked, so the tier
#                          itself then waits for what is still being built instead of building it twice)
#
# Settings: RDX_ENGINE_RELEASE_DIR  use a finished engine release build instead of `make engine`
#           RDX_E2E_KEEP_CLUSTER=1  leave a cluster this run brought up running (then: make down)
#           RDX_E2E_KEYS (500)      keys written and read back around the pod deletions
#           RDX_E2E_ARTIFACTS       where diagnostics go on failure (default _out/e2e)
#           RDX_E2E_TIMEOUT (30m)   go test -timeout;  RDX_E2E_RUN  go test -run filter
# More suite settings: e2e/README.md.
source "$(dirname "$0")/lib.sh"
source "$RDX_ROOT/hack/e2e-lib.sh"

[ "$(id -u)" = 0 ] || die "hack/e2e.sh needs root (it may bring up the local cluster and builds images)"
require_go
T0=$SECONDS

on_exit() {
  local rc=$? down_rc=0
  trap - EXIT INT TERM
  if [ "${RDX_E2E_KEEP_CLUSTER:-0}" = 1 ] && [ "$BROUGHT_UP_LOCAL" = 1 ]; then
    log "RDX_E2E_KEEP_CLUSTER=1: the local cluster stays up (KUBECONFIG=$CLUSTER_KUBECONFIG); stop it with: make down"
  else
    phase "cluster down + host checks" tear_down_if_ours || down_rc=$?
  fi
  print_phases
  log "e2e total: $((SECONDS - T0)) s"
  [ $rc -ne 0 ] || rc=$down_rc
  if [ $rc -eq 0 ]; then log "e2e PASSED"; else log "e2e FAILED (exit $rc)"; fi
  exit $rc
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

run_suite() {
  local artifacts=${RDX_E2E_ARTIFACTS:-$RDX_ROOT/_out/e2e} client_image
  client_image=$(bash "$RDX_ROOT/hack/images.sh" e2e-client | tail -n 1)
  mkdir -p "$artifacts"
  rm -f "$artifacts/e2e-diagnostics.txt"  # the suite appends to it
  log "go test ./... in e2e/ against $KUBECONFIG (client image $client_image); log: $artifacts/e2e.log"
  (
    cd "$RDX_ROOT/e2e"
    RDX_E2E_HELM="$TOOLS_BIN/helm" RDX_E2E_KUBECTL="$K8S_BIN/kubectl" RDX_E2E_OPERATOR_IMAGE="$OPERATOR_IMAGE" RDX_E2E_ENGINE_IMAGE="$ENGINE_IMAGE" \
      RDX_E2E_ROLLOUT_IMAGE="$ENGINE_ROLLOUT_IMAGE" \
      RDX_E2E_CLIENT_IMAGE="$client_image" RDX_E2E_ARTIFACTS="$artifacts" \
      timeout --kill-after=30s "$(( $(duration_seconds "${RDX_E2E_TIMEOUT:-30m}") + 120 ))" \
      go test -v -count=1 -timeout "${RDX_E2E_TIMEOUT:-30m}" ${RDX_E2E_RUN:+-run "$RDX_E2E_RUN"} ./...
  ) 2>&1 | tee "$artifacts/e2e.log"
  return "${PIPESTATUS[0]}"
}

# duration_seconds <go duration of whole minutes or seconds, e.g. 30m, 90s>
duration_seconds() {
  case $1 in
    *m) echo $(( ${1%m} * 60 )) ;;
    *s) echo "${1%s}" ;;
    *) die "RDX_E2E_TIMEOUT=$1: use minutes (30m) or seconds (1800s)" ;;
  esac
}

# prepare_only: the engine-independent half, for running alongside the engine build (see the header).
prepare_only() {
  trap - EXIT INT TERM
  phase "cluster artifacts (k8s, CoreDNS, helm)" bash "$RDX_ROOT/hack/cluster.sh" prepare
  phase "base image" bash "$RDX_ROOT/hack/images.sh" base
  phase "e2e client image" bash "$RDX_ROOT/hack/images.sh" e2e-client >/dev/null
  phase "compile the e2e suite" bash -c "cd '$RDX_ROOT/e2e' && go test -c -o /dev/null ."
  print_phases
  log "e2e prepare done in $((SECONDS - T0)) s"
}

case "${1:-}" in
  "") ;;
  prepare) prepare_only; exit 0 ;;
  *) sed -n '2,22s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac

phase "engine release build" build_engine
phase "helm + chart lint" bash "$RDX_ROOT/hack/helm.sh" lint
phase "images (engine, operator)" build_images
phase "engine image, rollout tag" bash "$RDX_ROOT/hack/images.sh" engine-rollout
phase "cluster up (or use KUBECONFIG)" use_or_bring_up_cluster
phase "e2e suite" run_suite
