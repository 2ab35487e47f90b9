# shellcheck shell=bash
# Shared by hack/e2e.sh and hack/demo.sh (source after hack/lib.sh): build what a cluster run needs, bring a
# cluster up or use the one in $KUBECONFIG, and tear down only what was brought up here.
source "$RDX_ROOT/hack/cluster/common.sh"
source "$RDX_ROOT/hack/cluster/tools.sh"

KIND_KUBECONFIG=$RDX_CACHE/kind/${KIND_CLUSTER_NAME:-rdx}.kubeconfig
BROUGHT_UP_LOCAL=0
declare -a PHASES=()

# phase <label> <command...>: runs a step and records its wall time for the summary.
phase() {
  local label=$1 t=$SECONDS; shift
  log "== $label"
  "$@"
  PHASES+=("$(printf '%-34s %5d s' "$label" $((SECONDS - t)))")
}

print_phases() {
  local p
  log "phase times:"
  for p in "${PHASES[@]}"; do printf '  %s\n' "$p" >&2; done
}

# build_engine: the release build (make engine) unless RDX_ENGINE_RELEASE_DIR names a finished one.
build_engine() {
  if [ -n "${RDX_ENGINE_RELEASE_DIR:-}" ]; then
    [ -x "$RDX_ENGINE_RELEASE_DIR/bin/rdxd" ] && [ -x "$RDX_ENGINE_RELEASE_DIR/bin/rdx-bench" ] \
      || die "RDX_ENGINE_RELEASE_DIR=$RDX_ENGINE_RELEASE_DIR has no bin/rdxd and bin/rdx-bench"
    log "using the engine build in $RDX_ENGINE_RELEASE_DIR"
    return 0
  fi
  make -C "$RDX_ROOT" --no-print-directory engine
}

build_images() {
  bash "$RDX_ROOT/hack/images.sh" engine
  [ -f "$(image_archive_path "$ENGINE_IMAGE")" ] || die "the engine image was not built (see above)"
  bash "$RDX_ROOT/hack/images.sh" operator
  [ -f "$(image_archive_path "$OPERATOR_IMAGE")" ] || die "the operator image was not built (see above)"
}

image_archive_path() { printf '%s/%s.tar' "$IMAGE_CACHE" "$(printf '%s' "$1" | tr '/:' '__')"; }

# use_or_bring_up_cluster: a reachable $KUBECONFIG other than the local cluster's is used as it is (a kind cluster
# of hack/kind.sh gets the images loaded); otherwise the local cluster comes up and BROUGHT_UP_LOCAL=1.
# Sets KUBECONFIG.
use_or_bring_up_cluster() {
  local kubeconfig
  if [ -n "${KUBECONFIG:-}" ] && [ "$(readlink -f "$KUBECONFIG")" != "$(readlink -f "$CLUSTER_KUBECONFIG")" ] \
      && [ -f "$KUBECONFIG" ] && timeout 20 "$K8S_BIN/kubectl" --request-timeout=10s get --raw /readyz >/dev/null 2>&1; then
    log "using the reachable cluster in KUBECONFIG=$KUBECONFIG"
    if [ "$(readlink -f "$KUBECONFIG")" = "$(readlink -f "$KIND_KUBECONFIG")" ]; then
      bash "$RDX_ROOT/hack/kind.sh" load
    else
      log "images are not loaded into it: it must be able to pull $OPERATOR_IMAGE and $ENGINE_IMAGE (and the e2e client image)"
    fi
    return 0
  fi
  if ! component_pid kube-apiserver >/dev/null; then BROUGHT_UP_LOCAL=1; fi
  kubeconfig=$(bash "$RDX_ROOT/hack/cluster.sh" up) || die "hack/cluster.sh up failed"
  export KUBECONFIG=$kubeconfig
}

# tear_down_if_ours: `hack/cluster.sh down` (with its host checks) when this script brought the local cluster up.
tear_down_if_ours() {
  if [ "$BROUGHT_UP_LOCAL" != 1 ]; then return 0; fi
  log "tearing down the local cluster this run brought up"
  bash "$RDX_ROOT/hack/cluster.sh" down
}
