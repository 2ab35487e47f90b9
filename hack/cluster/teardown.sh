# shellcheck shell=bash
# Host-state bookkeeping and the full teardown of the offline cluster. `down` must work after any partial or
# failed `up` and after a crash, so it relies on pid files, command lines, cgroups and mount tables, never on
# the cluster being healthy; it ends by verifying that nothing is left and fails loudly if something is.

SYSTEM_NAMESPACES="default kube-system kube-public kube-node-lease"
IPTABLES_TABLES=(filter nat mangle raw)

# save_host_state records the host as it was before the first up. An up that was never torn down already
# saved the true originals, so they are kept.
save_host_state() {
  [ -f "$CLUSTER_HOST_STATE/complete" ] && return 0
  mkdir -p "$CLUSTER_HOST_STATE"
  local key value family path
  : >"$CLUSTER_HOST_STATE/sysctls"
  for key in "${HOST_SYSCTLS[@]}"; do
    value=$(sysctl -n "$key" 2>/dev/null) && printf '%s=%s\n' "$key" "$value" >>"$CLUSTER_HOST_STATE/sysctls"
  done
  : >"$CLUSTER_HOST_STATE/existing-paths"
  for path in "${HOST_FIXED_PATHS[@]}"; do
    [ -e "$path" ] && printf '%s\n' "$path" >>"$CLUSTER_HOST_STATE/existing-paths"
  done
  for family in iptables ip6tables; do iptables_chains "$family" >"$CLUSTER_HOST_STATE/$family-chains"; done
  touch "$CLUSTER_HOST_STATE/complete"
}

# iptables_chains <iptables|ip6tables>: "<table> <chain>" for every chain of the tables we touch.
iptables_chains() {
  local table
  for table in "${IPTABLES_TABLES[@]}"; do
    "$1" -w 5 -t "$table" -S 2>/dev/null | awk -v t="$table" '$1 == "-N" { print t, $2 }'
  done
}

# created_chains <family>: the chains the cluster made: every KUBE-* chain (kube-proxy and kubelet; nothing
# else here makes them) and CNI-* chains that did not exist before up (other users' podman makes CNI-* too).
created_chains() {
  local family=$1 before=$CLUSTER_HOST_STATE/$1-chains
  iptables_chains "$family" | while read -r table chain; do
    case $chain in
      KUBE-*) echo "$table $chain" ;;
      CNI-*) if [ ! -f "$before" ] || ! grep -qx "$table $chain" "$before"; then echo "$table $chain"; fi ;;
    esac
  done
}

# remove_iptables_chains: one iptables-restore --noflush per table: delete rules in kept chains that jump to
# our chains, then flush and delete our chains. Rules of everyone else are untouched.
remove_iptables_chains() {
  local family table script chains
  for family in iptables ip6tables; do
    command -v "$family-restore" >/dev/null || continue
    for table in "${IPTABLES_TABLES[@]}"; do
      chains=$(created_chains "$family" | awk -v t="$table" '$1 == t { print $2 }')
      [ -n "$chains" ] || continue
      script=$("$family" -w 5 -t "$table" -S 2>/dev/null | awk -v list="$chains" '
        BEGIN { n = split(list, c, "\n"); for (i = 1; i <= n; i++) ours[c[i]] = 1 }
        $1 == "-A" && !($2 in ours) {
          for (i = 3; i < NF; i++) if (($i == "-j" || $i == "-g") && ($(i + 1) in ours)) { sub(/^-A /, "-D "); print; break }
        }
        END { for (x in ours) print "-F " x; for (x in ours) print "-X " x }')
      if ! printf '*%s\n%s\nCOMMIT\n' "$table" "$script" | "$family-restore" -w 5 --noflush; then
        log "warning: $family-restore could not remove all chains of table $table"
      fi
    done
  done
}

api_reachable() {
  [ -x "$K8S_BIN/kubectl" ] && [ -f "$CLUSTER_KUBECONFIG" ] && component_pid kube-apiserver >/dev/null \
    && https_ok "https://127.0.0.1:$APISERVER_PORT/readyz" >/dev/null 2>&1
}
no_pods_left() { [ -z "$(kubectl_local get pods -A -o name 2>/dev/null)" ] && kubectl_local get pods -A >/dev/null 2>&1; }

# delete_workloads removes everything through the API while kubelet still runs, so kubelet itself stops the
# containers, unmounts volumes and calls CNI DEL for every pod.
delete_workloads() {
  if ! api_reachable; then log "kube-apiserver not reachable: skipping API cleanup"; return 0; fi
  log "deleting workloads through the API"
  local namespaces
  namespaces=$(kubectl_local get namespaces -o jsonpath='{.items[*].metadata.name}' 2>/dev/null || true)
  for ns in $namespaces; do
    case " $SYSTEM_NAMESPACES " in *" $ns "*) ;; *) kubectl_local delete namespace "$ns" --wait=false >/dev/null 2>&1 || true ;; esac
  done
  kubectl_local delete deployments,statefulsets,daemonsets,replicasets,jobs,cronjobs --all -A --wait=false >/dev/null 2>&1 || true
  kubectl_local delete pods --all -A --grace-period=5 --wait=false >/dev/null 2>&1 || true
  component_pid kubelet >/dev/null || { log "kubelet not running: containers are removed through containerd"; return 0; }
  if ! wait_until 90 "kubelet to stop every pod" no_pods_left; then
    kubectl_local delete pods --all -A --grace-period=0 --force >/dev/null 2>&1 || true
    wait_until 30 "force-deleted pods to go" no_pods_left || log "warning: pods remain: $(kubectl_local get pods -A -o name 2>&1 | tr '\n' ' ')"
  fi
}

# remove_containers deletes whatever kubelet did not (containerd still running).
remove_containers() {
  [ -S "$CONTAINERD_SOCK" ] && component_pid containerd >/dev/null || return 0
  local ns id
  for ns in $(ctr_local namespaces ls -q 2>/dev/null); do
    for id in $(ctr_local -n "$ns" tasks ls -q 2>/dev/null); do
      ctr_local -n "$ns" tasks delete --force "$id" >/dev/null 2>&1 || log "warning: could not delete task $id"
    done
    for id in $(ctr_local -n "$ns" containers ls -q 2>/dev/null); do
      ctr_local -n "$ns" containers delete "$id" >/dev/null 2>&1 || log "warning: could not delete container $id"
    done
  done
}

# our_process_pids: processes that belong to the cluster, found without pid files: anything whose command
# line names the cluster's config, certificates, data or run directory (components, containerd shims; not its
# logs, which people read with tail or less), and anything in kubelet's pod cgroups (containers).
our_process_pids() {
  local proc pid cmdline
  for proc in /proc/[0-9]*; do
    pid=${proc#/proc/}
    if [ "$pid" = $$ ] || [ "$pid" = "$BASHPID" ]; then continue; fi
    cmdline=$(tr '\0' ' ' 2>/dev/null <"$proc/cmdline") || continue
    case $cmdline in *"$CLUSTER_CONF/"* | *"$CLUSTER_PKI/"* | *"$CLUSTER_DATA/"* | *"$CLUSTER_RUN/"*) echo "$pid" ;; esac
  done
  cat /sys/fs/cgroup/*/kubepods/cgroup.procs /sys/fs/cgroup/*/kubepods/*/cgroup.procs \
    /sys/fs/cgroup/*/kubepods/*/*/cgroup.procs /sys/fs/cgroup/*/kubepods/*/*/*/cgroup.procs 2>/dev/null || true
}

kill_leftover_processes() {
  local pids pid
  pids=$(our_process_pids | sort -un)
  [ -n "$pids" ] || return 0
  log "stopping leftover cluster processes: $(printf '%s ' $pids)"
  for pid in $pids; do kill -TERM "$pid" 2>/dev/null || true; done
  wait_until 5 "leftover processes to exit" no_leftover_processes && return 0
  for pid in $(our_process_pids | sort -un); do kill -KILL "$pid" 2>/dev/null || true; done
  wait_until 10 "leftover processes to die" no_leftover_processes || true
}
no_leftover_processes() { [ -z "$(our_process_pids)" ]; }

# we_created <path>: up recorded that the path did not exist before. Without a record, nothing is assumed ours.
we_created() { [ -f "$CLUSTER_HOST_STATE/existing-paths" ] && ! grep -qx "$1" "$CLUSTER_HOST_STATE/existing-paths"; }

# our_mounts: mount points of the cluster, deepest first.
our_mounts() {
  local extra=""
  we_created /run/containerd && extra="/run/containerd"
  awk -v a="/var/lib/kubelet" -v b="$CLUSTER_DIR" -v c="$CLUSTER_RUN" -v d="/run/netns/cni-" -v e="$extra" '
    { m = $5; if (index(m, a) == 1 || index(m, b) == 1 || index(m, c) == 1 || index(m, d) == 1 || (e != "" && index(m, e) == 1)) print length(m), m }' \
    /proc/self/mountinfo | sort -rn | cut -d' ' -f2- | uniq
}

unmount_all() {
  local m
  while read -r m; do
    [ -n "$m" ] || continue
    m=$(printf "%b" "$m")   # mountinfo escapes spaces as \040
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "warning: cannot unmount $m"
  done < <(our_mounts)
  rm -f /run/netns/cni-* 2>/dev/null || true
}

remove_network() {
  local veth
  for veth in $(ip -o link show master "$CNI_BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
    ip link delete "$veth" 2>/dev/null || true
  done
  ip link show "$CNI_BRIDGE" >/dev/null 2>&1 && { ip link delete "$CNI_BRIDGE" || log "warning: cannot delete $CNI_BRIDGE"; }
  return 0
}

restore_sysctls() {
  [ -f "$CLUSTER_HOST_STATE/sysctls" ] || return 0
  local key value
  while IFS='=' read -r key value; do
    [ "$(sysctl -n "$key" 2>/dev/null)" = "$value" ] && continue
    sysctl -q -w "$key=$value" >/dev/null 2>&1 || log "warning: cannot restore $key=$value"
  done <"$CLUSTER_HOST_STATE/sysctls"
}

remove_cgroups() {
  local dir attempt
  for attempt in 1 2 3 4 5; do
    for dir in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
      [ -d "$dir" ] && find "$dir" -depth -type d -exec rmdir {} \; 2>/dev/null
    done
    compgen -G "/sys/fs/cgroup/*/kubepods" >/dev/null || [ -d /sys/fs/cgroup/kubepods ] || return 0
    sleep 1
  done
}

remove_paths() {
  local path
  rm -rf --one-file-system "$CLUSTER_DATA" "$CLUSTER_RUN"
  rm -f "$CLUSTER_KUBECONFIG"
  # kubelet's own directories: no other kubelet runs here, so they are always removed.
  rm -rf --one-file-system /var/lib/kubelet /var/log/pods
  find /var/log/containers -maxdepth 1 -type l -lname '/var/log/pods/*' -delete 2>/dev/null || true
  rm -f /var/lib/cni/results/"$CNI_NETWORK"-* 2>/dev/null || true
  for path in /var/log/containers /var/lib/cni /run/containerd; do
    if [ -e "$path" ] && we_created "$path"; then rm -rf --one-file-system "$path"; fi
  done
  if [ -d /run/netns ] && we_created /run/netns; then rmdir /run/netns 2>/dev/null || true; fi   # ip netns shares it
}

cluster_teardown() {
  log "tearing down the local cluster (component logs stay in $CLUSTER_LOGS)"
  delete_workloads
  stop_components 20 kube-proxy kube-scheduler kube-controller-manager
  stop_component kubelet 30
  remove_containers
  stop_component containerd 30
  stop_component kube-apiserver 30    # before etcd: the apiserver hangs on SIGTERM once etcd is gone
  stop_component etcd 30
  kill_leftover_processes             # shims, containers, components whose pid file was lost
  unmount_all
  remove_network
  remove_iptables_chains
  restore_sysctls
  remove_cgroups
  remove_paths
}

# pod_rdx_pids: rdx processes (rdxd, rdx-bench, the operator's manager, the e2e client) that ran in a pod: in a
# kubepods cgroup or under a root other than the host's. rdxd processes others start on the host (rdx-local,
# tests) are not the cluster's and are not counted.
pod_rdx_pids() {
  local proc comm
  for proc in /proc/[0-9]*; do
    comm=$(cat "$proc/comm" 2>/dev/null) || continue
    case $comm in rdxd | rdx-bench | manager | rdx-e2e-client) ;; *) continue ;; esac
    if grep -q kubepods "$proc/cgroup" 2>/dev/null || [ "$(readlink "$proc/root" 2>/dev/null)" != / ]; then
      printf '%s:%s ' "${proc#/proc/}" "$comm"
    fi
  done
}

# verify_clean prints one line per check and returns non-zero when anything is left behind.
verify_clean() {
  local failed=0 left
  check() {
    local what=$1 leftover=$2
    if [ -z "$leftover" ]; then printf 'check %-44s ok\n' "$what"
    else printf 'check %-44s LEFT: %s\n' "$what" "$(printf '%s ' $leftover)"; failed=1; fi
  }
  left=""; for pid in $(our_process_pids | sort -un); do left+="$pid:$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-80) "; done
  check "no cluster process" "$left"
  check "no rdxd, rdx-bench or operator of a pod" "$(pod_rdx_pids)"
  check "no cluster mount" "$(our_mounts)"
  check "no KUBE-*/new CNI-* iptables chain (v4)" "$(created_chains iptables)"
  check "no KUBE-*/new CNI-* iptables chain (v6)" "$(created_chains ip6tables)"
  check "no $CNI_BRIDGE bridge or veth on it" "$(ip -o link show "$CNI_BRIDGE" 2>/dev/null | cut -d: -f2)"
  check "no kubepods cgroup" "$(ls -d /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods 2>/dev/null)"
  check "no /run/netns/cni-* namespace" "$(compgen -G '/run/netns/cni-*' || true)"
  left=""
  if [ -f "$CLUSTER_HOST_STATE/sysctls" ]; then
    while IFS='=' read -r key value; do
      [ "$(sysctl -n "$key" 2>/dev/null)" = "$value" ] || left+="$key=$(sysctl -n "$key" 2>/dev/null)(was $value) "
    done <"$CLUSTER_HOST_STATE/sysctls"
    check "sysctls restored ($(wc -l <"$CLUSTER_HOST_STATE/sysctls") saved at up)" "$left"
  else
    printf 'check %-44s ok (no up recorded host state)\n' "sysctls restored"
  fi
  left=""
  for path in "$CLUSTER_DATA" "$CLUSTER_RUN" "$CLUSTER_KUBECONFIG" /var/lib/kubelet /var/log/pods /var/log/containers /var/lib/cni /run/containerd /run/netns; do
    [ -e "$path" ] || continue
    case $path in /var/log/containers | /var/lib/cni | /run/containerd | /run/netns) we_created "$path" || continue ;; esac
    left+="$path "
  done
  check "no cluster paths" "$left"
  check "no pod log symlinks" "$(find /var/log/containers -maxdepth 1 -lname '/var/log/pods/*' 2>/dev/null)"
  unset -f check
  return $failed
}
