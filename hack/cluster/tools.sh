# shellcheck shell=bash
# Builds and caches the Go tools the cluster and its scripts need (sourced by hack/*.sh after hack/lib.sh).
# Each tool is installed into a directory keyed by its version, under a lock, so concurrent callers and
# version bumps never see a half-written or stale binary.

COREDNS_BIN=$RDX_CACHE/coredns/$COREDNS_VERSION/bin/coredns
HELM_BIN=$RDX_CACHE/tools/helm/$HELM_VERSION/helm

# go_install_cached <binary path> <module@version> <label>: static, stripped go install into dirname(binary path).
go_install_cached() {
  local bin=$1 pkg=$2 label=$3 dir
  dir=$(dirname "$bin")
  [ -x "$bin" ] && return 0
  require_go
  mkdir -p "$dir"
  (
    exec 8>"$dir/.lock"; flock 8
    [ -x "$bin" ] && exit 0
    local start=$SECONDS
    log "building $label ($pkg)"
    CGO_ENABLED=0 GOBIN="$dir" timeout 2400 go install -trimpath -ldflags "-s -w" "$pkg" \
      || die "go install $pkg failed (is the Go module proxy reachable?)"
    [ -x "$bin" ] || die "go install $pkg produced no $bin"
    log "built $label in $((SECONDS - start)) s: $bin"
  )
}

ensure_coredns() { go_install_cached "$COREDNS_BIN" "github.com/coredns/coredns@$COREDNS_VERSION" "CoreDNS $COREDNS_VERSION"; }

# ensure_helm installs helm keyed by version and points $TOOLS_BIN/helm at it.
ensure_helm() {
  go_install_cached "$HELM_BIN" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" "helm $HELM_VERSION"
  mkdir -p "$TOOLS_BIN"
  [ "$(readlink "$TOOLS_BIN/helm" 2>/dev/null)" = "$HELM_BIN" ] || ln -sfn "$HELM_BIN" "$TOOLS_BIN/helm"
}
