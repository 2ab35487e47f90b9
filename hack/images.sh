#!/usr/bin/env bash
# Offline image builds: no registry is reachable, so the base image is made with debootstrap (Debian bookworm,
# minbase) and `podman import`, and images/*/Containerfile are built on it with Debian's podman (their RUN steps
# reach only Debian's package archive). The results are saved as docker-archives under $RDX_CACHE/images and
# imported into the local cluster's containerd when it runs (hack/cluster.sh up imports them otherwise).
#
#   hack/images.sh [base|engine|operator|all]      (default: all)
#   hack/images.sh engine-rollout                   the engine image under a second tag ($ENGINE_IMAGE-rollout), for
#                                                   e2e's rolling image update
#   hack/images.sh e2e-client                       the e2e suite's Redis client (e2e/cmd/rdx-e2e-client) in a
#                                                   scratch image; prints its reference on stdout
#
# Engine image: needs <release build>/bin/{rdxd,rdx-bench} (`make engine`; the build directory is
# $RDX_ENGINE_RELEASE_DIR, default engine/build/release); skipped with a message if absent.
# Operator image: built from operator/cmd/manager with `go build`; skipped with a message if that does not exist.
source "$(dirname "$0")/lib.sh"
source "$RDX_ROOT/hack/cluster/common.sh"
source "$RDX_ROOT/hack/cluster/oci.sh"

BASE_SUITE=bookworm
BASE_REVISION=1                                         # bump to rebuild the base (e.g. new package set)
BASE_IMAGE=localhost/rdx/debian-base:$BASE_SUITE-$BASE_REVISION
BASE_ROOTFS_TAR=$RDX_CACHE/base/debian-$BASE_SUITE-minbase-$BASE_REVISION.tar
DEBIAN_MIRROR=${RDX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
ENGINE_RELEASE_DIR=${RDX_ENGINE_RELEASE_DIR:-$RDX_ROOT/engine/build/release}
ENGINE_BIN_DIR=$ENGINE_RELEASE_DIR/bin

image_exists() { podman_local image exists "$1"; }

# unmount_under <dir>: debootstrap mounts /proc and /sys inside the target; a failed run can leave them.
unmount_under() {
  local m
  awk -v p="$1/" 'index($5, p) == 1 { print length($5), $5 }' /proc/self/mountinfo | sort -rn | cut -d' ' -f2- |
    while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
}

# build_base holds a lock: hack/e2e.sh prepare may build the base in the background while another build waits.
build_base() {
  mkdir -p "$(dirname "$BASE_ROOTFS_TAR")"
  exec 5>"$(dirname "$BASE_ROOTFS_TAR")/.lock"
  flock 5
  build_base_locked
  exec 5>&-
}

build_base_locked() {
  if [ ! -f "$BASE_ROOTFS_TAR" ]; then
    apt_install debootstrap
    local work t=$SECONDS
    mkdir -p "$(dirname "$BASE_ROOTFS_TAR")"
    work=$(mktemp -d "$(dirname "$BASE_ROOTFS_TAR")/debootstrap.XXXXXX")
    # shellcheck disable=SC2064  # the path is fixed now
    trap "unmount_under '$work'; rm -rf --one-file-system '$work'" EXIT
    log "debootstrap $BASE_SUITE (minbase) from $DEBIAN_MIRROR (cold: a few minutes)"
    timeout 1200 debootstrap --variant=minbase "$BASE_SUITE" "$work/rootfs" "$DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 \
      || { tail -n 30 "$work/debootstrap.log" >&2; die "debootstrap failed (log above)"; }
    # Images install their packages with apt at build time: give them the updates and security suites too.
    cat >"$work/rootfs/etc/apt/sources.list" <<EOF
deb $DEBIAN_MIRROR $BASE_SUITE main
deb $DEBIAN_MIRROR $BASE_SUITE-updates main
deb ${DEBIAN_MIRROR%/debian}/debian-security $BASE_SUITE-security main
EOF
    rm -rf "$work/rootfs/var/lib/apt/lists/"* "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/log/"*
    unmount_under "$work"
    tar -C "$work/rootfs" --numeric-owner -cf "$BASE_ROOTFS_TAR.tmp" .
    mv "$BASE_ROOTFS_TAR.tmp" "$BASE_ROOTFS_TAR"
    rm -rf --one-file-system "$work"
    trap - EXIT
    log "base rootfs cached in $BASE_ROOTFS_TAR ($(du -h "$BASE_ROOTFS_TAR" | cut -f1), $((SECONDS - t)) s)"
  fi
  if ! image_exists "$BASE_IMAGE"; then
    podman_local import -q --change 'CMD ["/bin/bash"]' "$BASE_ROOTFS_TAR" "$BASE_IMAGE" >/dev/null \
      || die "podman import of $BASE_ROOTFS_TAR failed"
    log "imported base image $BASE_IMAGE"
  fi
}

# build_image <ref> <Containerfile> <context dir>: podman build on the offline base. Host networking lets RUN
# steps reach Debian's archive without creating a podman network (no iptables rules, no CNI state).
build_image() {
  local ref=$1 containerfile=$2 context=$3 t=$SECONDS
  log "building $ref"
  timeout 1800 podman "${PODMAN_GLOBAL[@]}" build --pull=never --network host --layers \
    --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
    --build-arg "BASE_IMAGE=$BASE_IMAGE" -f "$containerfile" -t "$ref" "$context" >&2 \
    || die "podman build of $ref failed"
  save_image_archive "$ref"
  log "built $ref in $((SECONDS - t)) s ($(du -h "$(image_archive "$ref")" | cut -f1) archive)"
}

# check_image_runs <ref> <entrypoint> <command>: runs a command in the image (no network) and fails on error,
# e.g. shared libraries the Containerfile forgot.
check_image_runs() {
  local ref=$1 entrypoint=$2 command=$3 out
  if ! out=$(timeout 120 podman "${PODMAN_GLOBAL[@]}" run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
      --entrypoint "$entrypoint" "$ref" -c "$command" 2>&1); then
    printf '%s\n' "$out" >&2
    die "image check failed for $ref: $command"
  fi
}

deliver() {
  local ref=$1
  if import_into_cluster "$ref"; then return 0; fi
  log "local cluster not running: $ref is cached in $(image_archive "$ref") and imported at the next hack/cluster.sh up"
}

build_engine() {
  local missing=() b
  for b in rdxd rdx-bench; do [ -x "$ENGINE_BIN_DIR/$b" ] || missing+=("$b"); done
  if [ ${#missing[@]} -gt 0 ]; then
    log "SKIPPING the engine image: ${missing[*]} not built in $ENGINE_BIN_DIR (run 'make engine' first)"
    return 0
  fi
  # rdx-lincheck (Go): rdx-bench runs it next to itself for kv histories (Benchmark kv.check linearizability).
  log "go build engine/tools/lincheck"
  (cd "$RDX_ROOT/engine/tools/lincheck" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$ENGINE_BIN_DIR/rdx-lincheck" .) \
    || die "go build engine/tools/lincheck failed"
  build_base
  build_image "$ENGINE_IMAGE" "$RDX_ROOT/images/engine/Containerfile" "$ENGINE_RELEASE_DIR"
  check_image_runs "$ENGINE_IMAGE" /bin/sh \
    '! ldd /usr/local/bin/rdxd /usr/local/bin/rdx-bench | grep "not found" && test -e /usr/lib/x86_64-linux-gnu/libibverbs.so.1 && /usr/local/bin/rdx-lincheck --help 2>&1 | grep -q history'
  deliver "$ENGINE_IMAGE"
}

# tag_engine_rollout: the engine image just built, under a second tag, so e2e can roll TxCluster pods to another
# image reference (no second build: the layers are shared).
tag_engine_rollout() {
  image_exists "$ENGINE_IMAGE" || die "no engine image $ENGINE_IMAGE to tag (hack/images.sh engine first)"
  buildah_local tag "$ENGINE_IMAGE" "$ENGINE_ROLLOUT_IMAGE" || die "tagging $ENGINE_IMAGE as $ENGINE_ROLLOUT_IMAGE failed"
  save_image_archive "$ENGINE_ROLLOUT_IMAGE"
  deliver "$ENGINE_ROLLOUT_IMAGE"
}

build_operator() {
  if [ ! -d "$RDX_ROOT/operator/cmd/manager" ]; then
    log "SKIPPING the operator image: $RDX_ROOT/operator/cmd/manager does not exist yet"
    return 0
  fi
  require_go
  local context
  context=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$context'" EXIT
  log "go build operator/cmd/manager"
  (cd "$RDX_ROOT/operator" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$context/manager" ./cmd/manager) \
    || die "building the operator manager failed"
  build_base
  build_image "$OPERATOR_IMAGE" "$RDX_ROOT/images/operator/Containerfile" "$context"
  rm -rf "$context"; trap - EXIT
  check_image_runs "$OPERATOR_IMAGE" /bin/sh '/manager -h >/dev/null 2>&1'
  deliver "$OPERATOR_IMAGE"
}

# build_e2e_client: a static rdx-e2e-client in a scratch image tagged by the hash of its module's sources, so
# an unchanged client is neither rebuilt nor re-imported. Prints the image reference on stdout.
build_e2e_client() {
  require_go
  local hash ref bin
  hash=$(cd "$RDX_ROOT/e2e" && cat go.mod go.sum $(find cmd/rdx-e2e-client -name '*.go' | sort) | sha256sum | cut -c1-12)
  ref=localhost/rdx/e2e-client:$hash
  mkdir -p "$IMAGE_CACHE"
  exec 5>"$IMAGE_CACHE/.e2e-client.lock"
  flock 5   # a background `hack/e2e.sh prepare` may be building it
  if [ ! -f "$(image_archive "$ref")" ]; then
    bin=$RDX_CACHE/e2e-client/$hash/rdx-e2e-client
    mkdir -p "$(dirname "$bin")"
    log "go build e2e/cmd/rdx-e2e-client"
    (cd "$RDX_ROOT/e2e" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$bin" ./cmd/rdx-e2e-client) \
      || die "building rdx-e2e-client failed"
    log "building image $ref"
    build_scratch_image "$ref" "$bin" /rdx-e2e-client 65532:65532
  fi
  exec 5>&-
  deliver "$ref"
  echo "$ref"
}

[ "$(id -u)" = 0 ] || die "hack/images.sh needs root (debootstrap, podman storage)"
apt_install podman buildah runc containerd
t0=$SECONDS
case "${1:-all}" in
  base) build_base ;;
  engine) build_engine ;;
  engine-rollout) tag_engine_rollout ;;
  operator) build_operator ;;
  all) build_engine; build_operator ;;
  e2e-client) build_e2e_client ;;
  *) sed -n '2,15s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
log "images done in $((SECONDS - t0)) s (cache: $IMAGE_CACHE)"
