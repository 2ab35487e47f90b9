#!/usr/bin/env bash
# hack/softroce/k8s-share.sh SHARE ENGINE_RELEASE_DIR: fills SHARE/k8s with what the guest's k8s stage needs to run
# the offline single-node cluster inside the VM, which has neither Go nor a package mirror:
#   bin/      the six Kubernetes binaries, CoreDNS and helm (built and cached on the host by hack/cluster.sh prepare)
#   images/   docker-archives of the pause, CoreDNS, engine and operator images (hack/images.sh)
#   repo/     hack/ and charts/ of this checkout (hack/cluster.sh runs in the guest from here)
#   env       image references and tool versions
# Archives and binaries are hard-linked from the cache when it shares a filesystem with SHARE, copied otherwise.
source "$(dirname "$0")/lib.sh"
source "$RDX_ROOT/hack/cluster/common.sh"
source "$RDX_ROOT/hack/cluster/tools.sh"
source "$RDX_ROOT/hack/cluster/oci.sh"

share=${1:?usage: k8s-share.sh SHARE ENGINE_RELEASE_DIR}
engine_dir=${2:?usage: k8s-share.sh SHARE ENGINE_RELEASE_DIR}
out=$share/k8s

log "softroce k8s: preparing the cluster artifacts and images for the VM"
bash "$RDX_ROOT/hack/cluster.sh" prepare || die "softroce k8s: hack/cluster.sh prepare failed (Kubernetes binaries, CoreDNS, helm)"
for what in engine operator; do
  RDX_ENGINE_RELEASE_DIR=$engine_dir bash "$RDX_ROOT/hack/images.sh" "$what" ||
    die "softroce k8s: hack/images.sh $what failed"
done

link_or_copy() { ln -f "$1" "$2" 2>/dev/null || cp "$1" "$2"; }

rm -rf "$out"
mkdir -p "$out/bin" "$out/images" "$out/repo"
for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do
  link_or_copy "$K8S_BIN/$c" "$out/bin/$c"
done
link_or_copy "$COREDNS_BIN" "$out/bin/coredns"
link_or_copy "$HELM_BIN" "$out/bin/helm"
for ref in "$PAUSE_IMAGE" "$COREDNS_IMAGE" "$ENGINE_IMAGE" "$OPERATOR_IMAGE"; do
  tar=$(image_archive "$ref")
  [ -f "$tar" ] || die "softroce k8s: image archive $tar of $ref is missing (hack/images.sh skipped it?)"
  link_or_copy "$tar" "$out/images/$(basename "$tar")"
  cp "$tar.ref" "$out/images/$(basename "$tar").ref"
done
cp -r "$RDX_ROOT/hack" "$RDX_ROOT/charts" "$out/repo/"
{
  printf 'ENGINE_IMAGE=%q\nOPERATOR_IMAGE=%q\n' "$ENGINE_IMAGE" "$OPERATOR_IMAGE"
  printf 'K8S_VERSION=%q\nCOREDNS_VERSION=%q\nHELM_VERSION=%q\n' "$K8S_VERSION" "$COREDNS_VERSION" "$HELM_VERSION"
} >"$out/env"
log "softroce k8s: share ready ($(du -sh "$out" | cut -f1) in $out)"
