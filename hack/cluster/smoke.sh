# shellcheck shell=bash
# `hack/cluster.sh smoke`: proves the local cluster does what rdx needs: a Pod, a 2-replica Deployment behind a
# ClusterIP Service (both replicas answer), the `kubernetes` Service reaching the apiserver from a pod, and a
# StatefulSet whose pods resolve each other's names through a headless Service. Polls with deadlines.

ensure_busybox_image() {
  apt_install busybox-static
  local version
  version=$(dpkg-query -W -f '${Version}' busybox-static)
  BUSYBOX_IMAGE=localhost/rdx/busybox:$(printf '%s' "${version#*:}" | tr -c 'a-zA-Z0-9.-' '_')
  if [ ! -f "$(image_archive "$BUSYBOX_IMAGE")" ]; then
    local rootfs applet
    rootfs=$(mktemp -d)
    mkdir -p "$rootfs/bin" "$rootfs/tmp"
    chmod 1777 "$rootfs/tmp"
    cp /bin/busybox "$rootfs/bin/busybox"
    for applet in sh sleep hostname mkdir cat tail seq printf httpd nc nslookup; do ln -s busybox "$rootfs/bin/$applet"; done
    build_scratch_image "$BUSYBOX_IMAGE" "$rootfs" /bin/sh
    rm -rf "$rootfs"
  fi
  import_into_cluster "$BUSYBOX_IMAGE" || die "the local cluster is not running (hack/cluster.sh up)"
}

# http_get <host> <port>: a shell command printing the body's last line (Debian's static busybox wget crashes,
# so plain HTTP/1.0 over nc).
http_get() { echo "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 2 $1 $2 | tail -n 1"; }

in_pod() { local pod=$1; shift; kubectl_local -n rdx-smoke exec "$pod" -- "$@"; }
pod_ip() { kubectl_local -n rdx-smoke get pod "$1" -o jsonpath='{.status.podIP}'; }

# resolves_to <from pod> <name> <ip>: the name resolves to exactly that IP inside the pod.
resolves_to() { grep -qx "$3" <<<"$(in_pod "$1" nslookup "$2" 2>/dev/null | awk '/^Address/ && !/#53/ { print $NF }')"; }

# apiserver_answers_pod: plain HTTP to the TLS port gets Go's "HTTP request to an HTTPS server" answer, which
# proves the connection reached kube-apiserver itself (busybox has no TLS client).
apiserver_answers_pod() {
  grep -q 'HTTP request to an HTTPS server' <<<"$(in_pod client sh -c "$(http_get kubernetes.default.svc.cluster.local 443 | sed 's/tail -n 1/cat/')")"
}

# both_web_replicas_answer: 40 requests through the Service must reach both replicas.
both_web_replicas_answer() {
  local seen
  seen=$(in_pod client sh -c "for i in \$(seq 40); do $(http_get web.rdx-smoke.svc.cluster.local 80); done" 2>/dev/null | sort -u)
  [ "$(printf '%s\n' "$seen" | grep -c '^web-')" -eq 2 ]
}

smoke_failure_dump() {
  local rc=$?
  [ $rc -eq 0 ] && return 0
  kubectl_local -n rdx-smoke get all,endpointslices -o wide >&2 || true
  kubectl_local -n rdx-smoke get events --sort-by=.lastTimestamp >&2 || true
  exit $rc
}

cluster_smoke() {
  local t=$SECONDS a b
  ensure_busybox_image
  kubectl_local delete namespace rdx-smoke --ignore-not-found --wait=true --timeout=60s >/dev/null
  sed "s|@BUSYBOX_IMAGE@|$BUSYBOX_IMAGE|g" "$RDX_ROOT/hack/cluster/smoke.yaml" | kubectl_local apply -f - >/dev/null
  trap smoke_failure_dump EXIT
  kubectl_local -n rdx-smoke wait pod/client --for=condition=Ready --timeout=90s >/dev/null
  log "smoke: pod Running and Ready"
  kubectl_local -n rdx-smoke rollout status deployment/web --timeout=90s >/dev/null
  kubectl_local -n rdx-smoke rollout status statefulset/peer --timeout=90s >/dev/null
  log "smoke: Deployment web (2 replicas) and StatefulSet peer (3 replicas) ready"
  wait_until 60 "both web replicas to answer through the ClusterIP Service" both_web_replicas_answer \
    || die "smoke: the web Service did not reach both replicas"
  log "smoke: ClusterIP Service web load-balances across both replicas"
  wait_until 30 "the kubernetes Service to reach the apiserver from a pod" apiserver_answers_pod \
    || die "smoke: pod cannot reach the apiserver through the kubernetes Service"
  log "smoke: pod reaches the apiserver through the kubernetes Service"
  for a in peer-0 peer-1 peer-2; do
    for b in peer-0 peer-1 peer-2; do
      [ "$a" = "$b" ] && continue
      wait_until 60 "$a to resolve $b.peer" resolves_to "$a" "$b.peer.rdx-smoke.svc.cluster.local" "$(pod_ip "$b")" \
        || die "smoke: $a cannot resolve $b.peer.rdx-smoke.svc.cluster.local to $(pod_ip "$b")"
      # The short name goes through libc's resolver (search path, ndots), as rdxd's lookups do.
      [ "$(in_pod "$a" sh -c "$(http_get "$b.peer" 7000)")" = "$b" ] || die "smoke: $a cannot reach $b.peer:7000"
    done
  done
  log "smoke: StatefulSet pods resolve each other (<pod>.peer and FQDN) through the headless Service and connect"
  kubectl_local delete namespace rdx-smoke --wait=true --timeout=90s >/dev/null
  trap - EXIT
  log "smoke: PASSED in $((SECONDS - t)) s"
}
