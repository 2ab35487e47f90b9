#!/usr/bin/env bash
# Helm charts in charts/: keeps charts/rdx-operator in sync with its single sources and checks every chart.
#
#   hack/helm.sh sync      copy crds/*.yaml into charts/rdx-operator/crds/ (adding helm.sh/resource-policy: keep) and
#                          operator/config/rbac/role.yaml into charts/rdx-operator/files/role.yaml
#   hack/helm.sh verify    fail if those copies differ from what sync writes (run after `make manifests`)
#   hack/helm.sh lint      verify, then `helm lint --strict` and `helm template` of every chart with its default
#                          values and with the value sets in charts/<chart>/ci/*.yaml (for Kubernetes $K8S_VERSION:
#                          a go-installed helm otherwise assumes v1.20)
#   hack/helm.sh package   sync, lint, then `helm package` every chart into _out/charts/
#
# The copies are committed so `helm install ./charts/rdx-operator` works from a clone; crds/ and role.yaml stay the
# only files anyone edits (through the operator's `make manifests`).
source "$(dirname "$0")/lib.sh"
source "$RDX_ROOT/hack/cluster/tools.sh"

OPERATOR_CHART=$RDX_ROOT/charts/rdx-operator
CHARTS=("$RDX_ROOT"/charts/*/)

# render_copies <dir>: writes into <dir>/crds and <dir>/files what the operator chart must hold.
render_copies() {
  local out=$1 f
  mkdir -p "$out/crds" "$out/files"
  for f in "$RDX_ROOT"/crds/*.yaml; do
    # Helm never upgrades or deletes what a chart's crds/ holds; the annotation keeps them too for tools that
    # template CRDs as ordinary resources (helm template | kubectl apply, Argo CD, helmfile).
    awk '
      /^  annotations:$/ && !done { print; print "    helm.sh/resource-policy: keep"; done = 1; next }
      { print }
      END { if (!done) exit 3 }' "$f" >"$out/crds/$(basename "$f")" \
      || die "$f has no metadata.annotations block to add the keep policy to"
  done
  cp "$RDX_ROOT/operator/config/rbac/role.yaml" "$out/files/role.yaml"
}

sync_copies() {
  rm -f "$OPERATOR_CHART"/crds/*.yaml
  render_copies "$OPERATOR_CHART"
  log "synced $(ls "$OPERATOR_CHART"/crds/*.yaml | wc -l) CRDs and the ClusterRole rules into $OPERATOR_CHART"
}

verify_copies() {
  local tmp rc=0
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" RETURN
  render_copies "$tmp"
  diff -r "$tmp/crds" "$OPERATOR_CHART/crds" >&2 || rc=1
  diff "$tmp/files/role.yaml" "$OPERATOR_CHART/files/role.yaml" >&2 || rc=1
  [ $rc -eq 0 ] || die "charts/rdx-operator is stale against crds/ or operator/config/rbac/role.yaml: run hack/helm.sh sync and commit"
  log "charts/rdx-operator matches crds/ and operator/config/rbac/role.yaml"
}

lint_charts() {
  local chart values name out
  verify_copies
  for chart in "${CHARTS[@]}"; do
    chart=${chart%/}; name=$(basename "$chart")
    out=$("$HELM_BIN" lint --strict --kube-version "$K8S_VERSION" "$chart" 2>&1) || { printf '%s\n' "$out" >&2; die "helm lint $name failed"; }
    grep -q '0 chart(s) failed' <<<"$out" || { printf '%s\n' "$out" >&2; die "helm lint $name reported failures"; }
    if printf '%s\n' "$out" | grep -E '^\[(WARNING|ERROR)\]' >&2; then die "helm lint $name is not clean"; fi
    "$HELM_BIN" template lint-check "$chart" --namespace lint-check --kube-version "$K8S_VERSION" >/dev/null || die "helm template $name failed"
    for values in "$chart"/ci/*.yaml; do
      [ -f "$values" ] || continue
      "$HELM_BIN" lint --strict --kube-version "$K8S_VERSION" "$chart" -f "$values" >/dev/null 2>&1 \
        || { "$HELM_BIN" lint --strict --kube-version "$K8S_VERSION" "$chart" -f "$values" >&2; die "helm lint $name -f $(basename "$values") failed"; }
      "$HELM_BIN" template lint-check "$chart" --namespace lint-check --kube-version "$K8S_VERSION" -f "$values" >/dev/null \
        || die "helm template $name -f $(basename "$values") failed"
    done
    log "$name: helm lint --strict and helm template clean"
  done
}

package_charts() {
  sync_copies
  lint_charts
  mkdir -p "$RDX_ROOT/_out/charts"
  local chart
  for chart in "${CHARTS[@]}"; do "$HELM_BIN" package "${chart%/}" -d "$RDX_ROOT/_out/charts" >&2; done
}

ensure_helm
case "${1:-}" in
  sync) sync_copies ;;
  verify) verify_copies ;;
  lint) lint_charts ;;
  package) package_charts ;;
  *) sed -n '2,12s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
