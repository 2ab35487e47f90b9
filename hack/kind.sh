#!/usr/bin/env bash
# The kind path, for hosts with a Docker engine and registry access (GitHub runners, laptops). On hosts without
# them (like the offline build machines) it fails within seconds with the reason; use hack/cluster.sh there.
#
#   hack/kind.sh up          create the kind cluster (if missing) and load the cached rdx images; prints the kubeconfig path
#   hack/kind.sh load        load the rdx images (docker-archives from hack/images.sh) into the kind cluster
#   hack/kind.sh down        delete the kind cluster
#   hack/kind.sh kubeconfig  print the kubeconfig path
#
# Settings: KIND_CLUSTER_NAME (rdx), KIND_NODE_IMAGE (kindest/node:$K8S_VERSION), KIND_VERSION (v0.33.0),
#           KIND_CONFIG (a kind Cluster config file: nodes, mounts; hack/softroce/kind.sh writes one).
# Sourced (hack/softroce/kind.sh), it only defines the functions.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KIND_VERSION=${KIND_VERSION:-v0.33.0}
KIND_CLUSTER_NAME=${KIND_CLUSTER_NAME:-rdx}
KIND_NODE_IMAGE=${KIND_NODE_IMAGE:-kindest/node:$K8S_VERSION}
KIND_BIN=$RDX_CACHE/tools/kind/$KIND_VERSION/kind
KIND_KUBECONFIG=$RDX_CACHE/kind/$KIND_CLUSTER_NAME.kubeconfig
IMAGE_CACHE=$RDX_CACHE/images

usage() { sed -n '2,13s/^# \{0,1\}//p' "$0" >&2; exit 2; }

# docker_probe sets DOCKER_PROBLEM to why no Docker engine can be used (empty when one answers, its version then in
# DOCKER_VERSION). Bounded by a short timeout: nothing waits on a missing daemon.
docker_probe() {
  local rc=0
  DOCKER_PROBLEM= DOCKER_VERSION=
  if ! command -v docker >/dev/null; then
    DOCKER_PROBLEM="the docker CLI is not installed"
    return 0
  fi
  DOCKER_VERSION=$(timeout 10 docker version --format '{{.Server.Version}}' 2>&1) || rc=$?
  if [ $rc -ne 0 ]; then
    [ $rc -ne 124 ] || DOCKER_VERSION="no answer within 10 s"
    DOCKER_PROBLEM="no Docker engine answers ($(printf '%s' "$DOCKER_VERSION" | tail -n 1))"
  fi
}

require_docker() {
  docker_probe
  [ -z "$DOCKER_PROBLEM" ] || die "kind needs a running Docker engine: $DOCKER_PROBLEM; on hosts without Docker use the offline cluster: hack/cluster.sh up"
  log "Docker engine $DOCKER_VERSION"
}

# require_node_image: kind cannot create a node without its image; pulling it needs registry access.
require_node_image() {
  timeout 10 docker image inspect "$KIND_NODE_IMAGE" >/dev/null 2>&1 && return 0
  log "pulling $KIND_NODE_IMAGE (at most 5 minutes)"
  timeout 300 docker pull -q "$KIND_NODE_IMAGE" >/dev/null \
    || die "cannot pull the kind node image $KIND_NODE_IMAGE (no registry access?); set KIND_NODE_IMAGE to an available one, or use hack/cluster.sh up"
}

ensure_kind() {
  [ -x "$KIND_BIN" ] && return 0
  require_go
  mkdir -p "$(dirname "$KIND_BIN")"
  log "go install sigs.k8s.io/kind@$KIND_VERSION"
  CGO_ENABLED=0 GOBIN=$(dirname "$KIND_BIN") timeout 900 go install "sigs.k8s.io/kind@$KIND_VERSION" \
    || die "go install sigs.k8s.io/kind@$KIND_VERSION failed"
}

cluster_exists() { grep -qx "$KIND_CLUSTER_NAME" <<<"$("$KIND_BIN" get clusters 2>/dev/null)"; }

load_images() {
  local tar loaded=0
  for tar in "$IMAGE_CACHE"/*.tar; do
    [ -f "$tar" ] || continue
    case "$(cat "$tar.ref" 2>/dev/null)" in
      localhost/rdx/e2e-client:*) ;;        # the e2e suite's client, which kind needs too
      localhost/rdx/*) continue ;;          # the offline cluster's own (pause, CoreDNS, base): kind brings its own
    esac
    log "kind load image-archive $tar"
    timeout 600 "$KIND_BIN" load image-archive "$tar" --name "$KIND_CLUSTER_NAME" || die "kind load of $tar failed"
    loaded=$((loaded + 1))
  done
  [ $loaded -gt 0 ] || log "no rdx image archives in $IMAGE_CACHE yet (run hack/images.sh)"
}

kind_up() {
  require_docker
  require_node_image
  ensure_kind
  mkdir -p "$(dirname "$KIND_KUBECONFIG")"
  if cluster_exists; then
    log "kind cluster $KIND_CLUSTER_NAME exists"
    "$KIND_BIN" get kubeconfig --name "$KIND_CLUSTER_NAME" >"$KIND_KUBECONFIG"
  else
    timeout 600 "$KIND_BIN" create cluster --name "$KIND_CLUSTER_NAME" --image "$KIND_NODE_IMAGE" \
      ${KIND_CONFIG:+--config "$KIND_CONFIG"} --kubeconfig "$KIND_KUBECONFIG" --wait 180s || die "kind create cluster failed"
  fi
  load_images
  echo "$KIND_KUBECONFIG"
}

[[ "${BASH_SOURCE[0]}" == "$0" ]] || return 0
case "${1:-}" in
  up) kind_up ;;
  load) require_docker; ensure_kind; cluster_exists || die "no kind cluster $KIND_CLUSTER_NAME (hack/kind.sh up)"; load_images ;;
  down)
    require_docker
    ensure_kind
    if cluster_exists; then timeout 300 "$KIND_BIN" delete cluster --name "$KIND_CLUSTER_NAME"; fi
    rm -f "$KIND_KUBECONFIG" ;;
  kubeconfig) [ -f "$KIND_KUBECONFIG" ] || die "no kind kubeconfig (hack/kind.sh up)"; echo "$KIND_KUBECONFIG" ;;
  *) usage ;;
esac
