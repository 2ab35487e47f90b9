#!/usr/bin/env bash
# make test (what CI runs): every tier in dependency order: engine, operator, soft-RoCE, e2e, and soft-RoCE on kind
# (run where Docker and rdma_rxe exist; elsewhere only its fail-fast is checked, in a second).
#
# The engine-independent preparation of the later tiers (Kubernetes binaries, CoreDNS, helm, the base and e2e-client
# images, the soft-RoCE VM image) starts at once in the background at the lowest CPU priority: much of it waits on
# the network (apt, Go modules, debootstrap) and the engine's integration tests leave cores idle, so on a 2-core
# machine it overlaps instead of adding up. Every step it runs is cached and locked, so a tier that needs a result
# still being prepared waits for it, and one whose preparation failed builds it itself (and fails with its error).
#
# Settings: RDX_TEST_TIERS   tiers to run (default "engine operator softroce e2e kind")
#           RDX_NO_PREPARE=1 do not prepare in the background
source "$(dirname "$0")/lib.sh"

tiers=${RDX_TEST_TIERS:-engine operator softroce e2e kind}
logs=$RDX_ROOT/_out/prepare
mkdir -p "$logs"
T0=$SECONDS
bg_pids=()
summary=()

stop_background() {
  local p
  for p in "${bg_pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop_background EXIT
trap 'exit 130' INT TERM

# background NAME CMD...: runs CMD niced in its own process group, output to _out/prepare/NAME.log.
background() {
  local name=$1; shift
  setsid nice -n 19 bash -c '"$@"; echo "exit $?" >>"'"$logs/$name.rc"'"' _ "$@" >"$logs/$name.log" 2>&1 &
  bg_pids+=($!)
  log "preparing $name in the background (log: _out/prepare/$name.log)"
}

# report_background NAME: after the tier that needed it, say how the preparation went (it is advisory).
report_background() {
  local rc_file=$logs/$1.rc
  if [ -f "$rc_file" ] && ! grep -qx "exit 0" "$rc_file"; then
    log "background preparation of $1 failed ($(cat "$rc_file")); the tier rebuilt what it needed. Last lines:"
    tail -n 15 "$logs/$1.log" >&2
  fi
}

tier() {
  local name=$1 t=$SECONDS rc=0; shift
  log "=== tier $name: $* ==="
  "$@" || rc=$?
  summary+=("$(printf '%-13s %4d s  %s' "$name" $((SECONDS - t)) "$([ $rc -eq 0 ] && echo pass || echo "FAIL ($rc)")")")
  if [ $rc -ne 0 ]; then
    print_summary
    die "tier $name failed (exit $rc)"
  fi
}

print_summary() {
  log "=== summary (total $((SECONDS - T0)) s) ==="
  printf '  %s\n' "${summary[@]}" >&2
}

rm -f "$logs"/*.rc
if [ -z "${RDX_NO_PREPARE:-}" ]; then
  case " $tiers " in *" softroce "*) background softroce-image bash "$RDX_ROOT/hack/softroce/rootfs.sh" ;; esac
  case " $tiers " in *" e2e "*|*" operator "*) background e2e bash "$RDX_ROOT/hack/e2e.sh" prepare ;; esac
fi

for t in $tiers; do
  case $t in
    engine)   tier engine make -C "$RDX_ROOT" test-engine ;;
    operator) tier operator make -C "$RDX_ROOT" test-operator ;;
    softroce) tier softroce make -C "$RDX_ROOT" test-softroce; report_background softroce-image ;;
    e2e)      tier e2e make -C "$RDX_ROOT" test-e2e; report_background e2e ;;
    kind)  # without Docker or rdma_rxe only the fail-fast is checked, and the summary names it so
      if bash "$RDX_ROOT/hack/softroce/kind.sh" check >/dev/null 2>&1; then name=kind; else name=kind-failfast; fi
      tier "$name" make -C "$RDX_ROOT" test-kind-softroce ;;
    *) die "unknown tier $t (engine operator softroce e2e kind)" ;;
  esac
done
print_summary
