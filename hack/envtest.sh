#!/usr/bin/env bash
# Assembles the directory envtest needs (KUBEBUILDER_ASSETS: kube-apiserver, kubectl, etcd) from locally built
# Kubernetes binaries and Debian's etcd, and prints its path. Nothing is downloaded from a release site.
# Usage: KUBEBUILDER_ASSETS="$(hack/envtest.sh)" go test ./...
source "$(dirname "$0")/lib.sh"

bash "$RDX_ROOT/hack/build-k8s.sh" kube-apiserver kubectl >&2
apt_install etcd-server   # RUNLEVEL=1 inside apt_install: the package must not start an etcd service
[ -x /usr/bin/etcd ] || die "etcd-server is installed but /usr/bin/etcd is missing"

assets=$RDX_CACHE/envtest/$K8S_VERSION
mkdir -p "$assets"
for b in kube-apiserver kubectl; do
  [ -x "$K8S_BIN/$b" ] || die "$K8S_BIN/$b missing after hack/build-k8s.sh"
  ln -sfn "$K8S_BIN/$b" "$assets/$b"
done
ln -sfn /usr/bin/etcd "$assets/etcd"
"$assets/kube-apiserver" --version >/dev/null 2>&1 || die "$assets/kube-apiserver does not run"
echo "$assets"
