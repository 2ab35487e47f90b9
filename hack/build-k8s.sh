#!/usr/bin/env bash
# Builds Kubernetes binaries from Go modules into $RDX_CACHE/k8s/<version>/bin (no release download is possible here).
# Usage: hack/build-k8s.sh [component ...]   (default: all six; envtest needs only kube-apiserver and kubectl)
# k8s.io/kubernetes replaces its staging modules with local paths, so `go install` cannot build it; a wrapper module
# that requires it and pins every staging module to its published version can.
source "$(dirname "$0")/lib.sh"
require_go

all=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
want=("$@"); [ ${#want[@]} -eq 0 ] && want=("${all[@]}")
todo=()
for c in "${want[@]}"; do
  case " ${all[*]} " in *" $c "*) ;; *) die "unknown component $c (one of: ${all[*]})";; esac
  [ -x "$K8S_BIN/$c" ] || todo+=("$c")
done
[ ${#todo[@]} -eq 0 ] && { log "kubernetes $K8S_VERSION binaries cached in $K8S_BIN"; exit 0; }

work=$RDX_CACHE/k8s/$K8S_VERSION/src
mkdir -p "$work" "$K8S_BIN"
cd "$work"
exec 9>"$work/.lock"; flock 9   # two scripts building at once would race on the same outputs
todo2=(); for c in "${todo[@]}"; do [ -x "$K8S_BIN/$c" ] || todo2+=("$c"); done
[ ${#todo2[@]} -eq 0 ] && exit 0

if [ ! -f go.mod ]; then
  log "preparing wrapper module for k8s.io/kubernetes $K8S_VERSION"
  GOFLAGS=-mod=mod go mod download -x "k8s.io/kubernetes@$K8S_VERSION" 2>/dev/null || true
  kmod=$(go env GOMODCACHE)/k8s.io/kubernetes@$K8S_VERSION/go.mod
  [ -f "$kmod" ] || die "k8s.io/kubernetes@$K8S_VERSION not in module cache (is the Go module proxy reachable?)"
  {
    echo "module rdx.dev/k8sbuild"
    echo "go 1.26"
    echo "require k8s.io/kubernetes $K8S_VERSION"
    sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#replace \1 => \1 '"$K8S_STAGING_VERSION"'#p' "$kmod"
  } > go.mod.tmp
  mv go.mod.tmp go.mod
  printf 'package main\nimport _ "k8s.io/kubernetes/cmd/kube-apiserver/app"\nfunc main() {}\n' > tools.go
  GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 || GOFLAGS=-mod=mod go mod download
fi

major=${K8S_VERSION#v}; major=${major%%.*}
minor=${K8S_VERSION#v*.}; minor=${minor%%.*}
ldflags="-s -w"
for p in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  ldflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done
pkgs=()
for c in "${todo2[@]}"; do
  case $c in kubectl) pkgs+=(k8s.io/kubernetes/cmd/kubectl);; *) pkgs+=("k8s.io/kubernetes/cmd/$c");; esac
done
log "building ${todo2[*]} (cold: ~12 min for all six on 2 cores)"
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -tags=selinux,notest,grpcnotrace -ldflags "$ldflags" -o "$K8S_BIN/" "${pkgs[@]}"
for c in "${todo2[@]}"; do [ -x "$K8S_BIN/$c" ] || die "build produced no $c"; done
"$K8S_BIN/${todo2[0]}" --version 2>/dev/null | head -1 >&2 || true
log "done: $K8S_BIN"
