# shellcheck shell=bash
# Image helpers shared by hack/cluster.sh and hack/images.sh: Debian's buildah/podman with a store of our own
# (so other users' podman images and containers are never touched), docker-archive tarballs cached under
# $IMAGE_CACHE with the image reference beside them, and import into the local cluster's containerd.

IMAGE_STORE=$RDX_CACHE/containers
IMAGE_RUNROOT=/run/rdx-containers

BUILDAH_GLOBAL=(--root "$IMAGE_STORE/storage" --runroot "$IMAGE_RUNROOT" --storage-driver overlay)
PODMAN_GLOBAL=("${BUILDAH_GLOBAL[@]}" --runtime runc --cgroup-manager=cgroupfs)
buildah_local() { buildah "${BUILDAH_GLOBAL[@]}" "$@"; }
podman_local() { podman "${PODMAN_GLOBAL[@]}" "$@"; }

image_archive() { printf '%s/%s.tar' "$IMAGE_CACHE" "$(printf '%s' "$1" | tr '/:' '__')"; }

# save_image_archive <ref>: writes the image from our store to its cached docker-archive (atomically).
save_image_archive() {
  local ref=$1 tar
  tar=$(image_archive "$ref")
  mkdir -p "$IMAGE_CACHE"
  rm -f "$tar.tmp"
  buildah_local push -q "$ref" "docker-archive:$tar.tmp:$ref" >/dev/null || die "saving $ref to $tar failed"
  mv "$tar.tmp" "$tar"
  printf '%s' "$ref" >"$tar.ref"
}

# build_scratch_image <ref> <source> <entrypoint> [user]: an image FROM scratch holding <source>: a static
# binary (copied to <entrypoint>) or a prepared root directory (copied to /), e.g. pause, CoreDNS, busybox.
build_scratch_image() {
  local ref=$1 source=$2 entrypoint=$3 user=${4:-} container dest
  [ -e "$source" ] || die "cannot build $ref: $source is missing"
  dest=$entrypoint; [ -d "$source" ] && dest=/
  container=$(buildah_local from scratch) || die "buildah from scratch failed"
  if ! { buildah_local copy "$container" "$source" "$dest" >/dev/null \
      && buildah_local config --entrypoint "[\"$entrypoint\"]" ${user:+--user "$user"} "$container" \
      && buildah_local commit -q --rm "$container" "$ref" >/dev/null; }; then
    buildah_local rm "$container" >/dev/null 2>&1 || true
    die "building image $ref failed"
  fi
  save_image_archive "$ref"
}

# import_into_cluster <ref>: loads the cached archive into the running local cluster's containerd (k8s.io
# namespace, what kubelet sees); returns 1 when the local cluster is not running.
import_into_cluster() {
  local ref=$1 tar
  tar=$(image_archive "$ref")
  [ -S "$CONTAINERD_SOCK" ] && ctr_local version >/dev/null 2>&1 || return 1
  ctr_local -n k8s.io images import "$tar" >/dev/null || die "ctr images import $tar failed"
  log "imported $ref into the local cluster's containerd"
}
