#!/usr/bin/env bash
# Runs controller-gen at a pinned version, installing it into $TOOLS_BIN on first use (keyed by version).
# Usage: hack/controller-gen.sh <controller-gen arguments...>
# controller-tools v0.23 is built against k8s.io/* v0.37, the API version the operator uses; lib.sh's older default
# does not apply here unless CONTROLLER_TOOLS_VERSION is set in the environment.
: "${CONTROLLER_TOOLS_VERSION:=v0.23.0}"
source "$(dirname "$0")/lib.sh"
require_go

bin=$TOOLS_BIN/controller-gen-$CONTROLLER_TOOLS_VERSION
if [ ! -x "$bin" ]; then
  log "installing controller-gen $CONTROLLER_TOOLS_VERSION into $TOOLS_BIN"
  mkdir -p "$TOOLS_BIN"
  tmp=$(mktemp -d "$TOOLS_BIN/.controller-gen.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  GOBIN=$tmp GOFLAGS=-mod=mod timeout 600 go install "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_TOOLS_VERSION" \
    || die "go install controller-gen $CONTROLLER_TOOLS_VERSION failed (is the Go module proxy reachable?)"
  mv "$tmp/controller-gen" "$bin"   # same filesystem: atomic, and a concurrent install replaces it with the same binary
fi
exec "$bin" "$@"
