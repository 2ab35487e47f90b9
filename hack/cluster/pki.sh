# shellcheck shell=bash
# Certificates (openssl, ECDSA P-256) and kubeconfigs for the offline cluster. Regenerated only when missing,
# close to expiry, or when the node's name or IP changed (the apiserver and kubelet serving certs name them).

# sign_cert <name> <common name> <organization or ""> <client|server|both> [subjectAltName list]
sign_cert() {
  local name=$1 cn=$2 org=$3 usage=$4 sans=${5:-} subject ext
  subject="/CN=$cn"; [ -n "$org" ] && subject="/O=$org$subject"
  case $usage in
    client) ext="extendedKeyUsage=clientAuth" ;;
    server) ext="extendedKeyUsage=serverAuth" ;;
    both) ext="extendedKeyUsage=serverAuth,clientAuth" ;;
    *) die "sign_cert: bad usage $usage" ;;
  esac
  ext+=$'\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment'
  [ -n "$sans" ] && ext+=$'\n'"subjectAltName=$sans"
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -subj "$subject" \
    -keyout "$CLUSTER_PKI/$name.key" -out "$CLUSTER_PKI/$name.csr" 2>/dev/null
  openssl x509 -req -in "$CLUSTER_PKI/$name.csr" -CA "$CLUSTER_PKI/ca.crt" -CAkey "$CLUSTER_PKI/ca.key" \
    -CAcreateserial -days 365 -sha256 -extfile <(printf '%s\n' "$ext") -out "$CLUSTER_PKI/$name.crt" 2>/dev/null
  rm -f "$CLUSTER_PKI/$name.csr"
}

# write_kubeconfig <file> <user> <client cert name>: a kubeconfig with everything embedded, so it can be copied.
write_kubeconfig() {
  local file=$1 user=$2 cert=$3
  cat >"$file.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: rdx-local
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 <"$CLUSTER_PKI/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 <"$CLUSTER_PKI/$cert.crt")
    client-key-data: $(base64 -w0 <"$CLUSTER_PKI/$cert.key")
contexts:
- name: rdx-local
  context: {cluster: rdx-local, user: $user}
current-context: rdx-local
EOF
  chmod 600 "$file.tmp"
  mv "$file.tmp" "$file"
}

ensure_pki() {
  local node ip identity
  node=$(node_name); ip=$(node_ip)
  identity="node=$node ip=$ip apiserver-port=$APISERVER_PORT"
  mkdir -p "$CLUSTER_PKI" "$CLUSTER_CONF"
  chmod 700 "$CLUSTER_PKI"
  if [ -f "$CLUSTER_PKI/identity" ] && [ "$(cat "$CLUSTER_PKI/identity")" = "$identity" ] \
    && openssl x509 -checkend 86400 -noout -in "$CLUSTER_PKI/ca.crt" >/dev/null 2>&1 \
    && openssl x509 -checkend 86400 -noout -in "$CLUSTER_PKI/apiserver.crt" >/dev/null 2>&1; then
    # down removes the admin kubeconfig so nothing points at a stopped cluster; the certificates stay cached.
    [ -f "$CLUSTER_KUBECONFIG" ] || write_kubeconfig "$CLUSTER_KUBECONFIG" rdx-admin admin
    return 0
  fi
  log "generating certificates and kubeconfigs ($identity)"
  rm -f "$CLUSTER_PKI"/*
  openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -days 3650 -sha256 \
    -subj "/CN=rdx-local-ca" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
    -keyout "$CLUSTER_PKI/ca.key" -out "$CLUSTER_PKI/ca.crt" 2>/dev/null
  local svc_names="DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.$CLUSTER_DOMAIN"
  sign_cert apiserver kube-apiserver "" server \
    "$svc_names,DNS:localhost,DNS:$node,IP:127.0.0.1,IP:$KUBERNETES_SERVICE_IP,IP:$ip"
  sign_cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters client
  sign_cert admin rdx-admin system:masters client
  sign_cert controller-manager system:kube-controller-manager "" client
  sign_cert scheduler system:kube-scheduler "" client
  sign_cert kubelet "system:node:$node" system:nodes client
  sign_cert kubelet-serving "$node" "" server "DNS:$node,DNS:localhost,IP:$ip,IP:127.0.0.1"
  sign_cert kube-proxy system:kube-proxy "" client
  openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$CLUSTER_PKI/sa.key"
  openssl ec -in "$CLUSTER_PKI/sa.key" -pubout -out "$CLUSTER_PKI/sa.pub" 2>/dev/null
  chmod 600 "$CLUSTER_PKI"/*.key

  write_kubeconfig "$CLUSTER_CONF/controller-manager.kubeconfig" system:kube-controller-manager controller-manager
  write_kubeconfig "$CLUSTER_CONF/scheduler.kubeconfig" system:kube-scheduler scheduler
  write_kubeconfig "$CLUSTER_CONF/kubelet.kubeconfig" "system:node:$node" kubelet
  write_kubeconfig "$CLUSTER_CONF/kube-proxy.kubeconfig" system:kube-proxy kube-proxy
  write_kubeconfig "$CLUSTER_KUBECONFIG" rdx-admin admin
  printf '%s' "$identity" >"$CLUSTER_PKI/identity"
}
