#!/usr/bin/env bash
# make test-softroce: the engine on real verbs, on soft-RoCE (rxe) inside a qemu VM (this host's kernel has no RDMA).
#   1. installs qemu/debootstrap, builds the engine's verbs binaries (release) on the host;
#   2. builds or reuses the cached VM image (rootfs.sh, $RDX_CACHE/softroce/<key>);
#   3. boots the VM with the binaries and guest/ scripts on a 9p share; the guest driver sets up rxe and runs the
#      stages below, writing logs and a verdict into the share (_out/softroce/share/results);
#   4. the verdict becomes this script's exit code; prints test counts and perftest vs rdx latency.
# Stage k8s (part 2) runs the offline single-node Kubernetes cluster inside the VM with a verbs TxCluster in
# hostDevice mode; k8s-share.sh puts its binaries and images into the share first.
# Settings: RDX_SOFTROCE_STAGES (space-separated "name[:seconds]"), RDX_SOFTROCE_TIMEOUT (whole VM, seconds),
#           RDX_SOFTROCE_BIN_DIR (use binaries from this build dir instead of building engine/build/release),
#           PERFTEST_ITERS / PERFTEST_RUNS (latency stage), RDX_SOFTROCE_MAX_RATIO (fail if an op's ratios
#           rdx/perftest of the medians and of each side's fastest run both exceed it; default 2.0, empty: off),
#           RDX_TABLE3_DURATION / RDX_TABLE3_KEYS (stage table3, make bench-replication-softroce),
#           RDX_SOFTROCE_SKIP_RXE=1 (boot without the rxe device: checks the missing-device failure path),
#           RDX_SOFTROCE_VERBS_TEST_ARGS (extra gtest flags for the verbs tests), RDX_SOFTROCE_QEMU (qemu binary), RDX_SOFTROCE_ACCEL=tcg|kvm (default tcg: KVM hangs the guest kernel on
#           PVM hosts like this one), RDX_DEBIAN_MIRROR (for the image build).
source "$(dirname "$0")/lib.sh"

STAGES=${RDX_SOFTROCE_STAGES:-"devinfo:60 verbs-tests:1500 latency:900 cluster:900 k8s:2400"}
VM_TIMEOUT=${RDX_SOFTROCE_TIMEOUT:-4200}
MAX_RATIO=${RDX_SOFTROCE_MAX_RATIO-2.0}  # unset: 2.0; set but empty: no limit
[[ -z "$MAX_RATIO" || "$MAX_RATIO" =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
  die "softroce: RDX_SOFTROCE_MAX_RATIO must be a number like 1.5 or empty, not '$MAX_RATIO'"
BINARIES=(transport_verbs_test verbs_lat rdxd rdx-bench)
OUT=$RDX_ROOT/_out/softroce
SHARE=$OUT/share
t_start=$(date +%s)

# --- host prerequisites -----------------------------------------------------------------------------------------
if ! command -v "$QEMU" >/dev/null; then
  apt_install qemu-system-x86 || die "softroce: no qemu ($QEMU) and apt-get could not install qemu-system-x86"
fi
command -v "$QEMU" >/dev/null || die "softroce: no qemu: $QEMU not found even after installing qemu-system-x86"
if [ "${RDX_SOFTROCE_ACCEL:-tcg}" = kvm ] && [ ! -w /dev/kvm ]; then
  die "softroce: RDX_SOFTROCE_ACCEL=kvm but /dev/kvm is not usable"
fi

# --- engine binaries --------------------------------------------------------------------------------------------
if [ -n "${RDX_SOFTROCE_BIN_DIR:-}" ]; then
  bin_dir=$RDX_SOFTROCE_BIN_DIR
  [ -f "$bin_dir/build.ninja" ] || die "softroce: RDX_SOFTROCE_BIN_DIR=$bin_dir is not a configured build dir"
  ninja -C "$bin_dir" -j "${RDX_JOBS:-2}" "${BINARIES[@]}" >/dev/null || die "softroce: building ${BINARIES[*]} in $bin_dir failed"
else
  bash "$RDX_ROOT/engine/tools/install-deps.sh"
  log "softroce: building ${BINARIES[*]} (engine release build)"
  bash "$RDX_ROOT/engine/tools/build.sh" release "${BINARIES[@]}" >/dev/null ||
    die "softroce: the engine release build of ${BINARIES[*]} failed (run: bash engine/tools/build.sh release ${BINARIES[*]})"
  bin_dir=$RDX_ROOT/engine/build/release
fi

# --- VM image (cached) ------------------------------------------------------------------------------------------
image_dir=$(bash "$SOFTROCE_DIR/rootfs.sh") || exit 1
t_image=$(date +%s)

# --- share ------------------------------------------------------------------------------------------------------
rm -rf "$SHARE"
mkdir -p "$SHARE/bin" "$SHARE/results"
for b in "${BINARIES[@]}"; do
  f=$(find "$bin_dir" -type f -name "$b" -perm -u+x | head -n1)
  [ -n "$f" ] || die "softroce: built binary $b not found under $bin_dir"
  cp "$f" "$SHARE/bin/"
done
# rdx-lincheck (Go, engine/tools/lincheck): the cluster stage checks kv histories with it.
require_go
(cd "$RDX_ROOT/engine/tools/lincheck" && go build -o "$SHARE/bin/rdx-lincheck" .) ||
  die "softroce: building rdx-lincheck failed (cd engine/tools/lincheck && go build .)"
cp -r "$SOFTROCE_DIR/guest" "$SHARE/guest"
case " $STAGES " in
  *" k8s "*|*" k8s:"*) bash "$SOFTROCE_DIR/k8s-share.sh" "$SHARE" "$bin_dir" || exit 1 ;;
esac
for s in $STAGES; do echo "${s%%:*} $( [ "${s#*:}" != "$s" ] && echo "${s#*:}")"; done >"$SHARE/stages"
{
  echo "PERFTEST_ITERS=${PERFTEST_ITERS:-1000}"
  echo "PERFTEST_RUNS=${PERFTEST_RUNS:-7}"
  echo "RDX_SOFTROCE_SKIP_RXE=${RDX_SOFTROCE_SKIP_RXE:-0}"  # test hook: boot without the rxe device
  printf 'VERBS_TEST_ARGS=%q\n' "${RDX_SOFTROCE_VERBS_TEST_ARGS:-}"  # e.g. --gtest_repeat=5 or a --gtest_filter
  echo "TABLE3_DURATION=${RDX_TABLE3_DURATION:-3}"  # stage table3: seconds per run
  echo "TABLE3_KEYS=${RDX_TABLE3_KEYS:-10000}"
} >"$SHARE/env"

# --- boot -------------------------------------------------------------------------------------------------------
log "softroce: booting the VM (TCG, limit ${VM_TIMEOUT}s); stages: $STAGES"
touch "$SHARE/results/guest.log"
tail -n +1 -F "$SHARE/results/guest.log" 2>/dev/null &
tail_pid=$!
trap 'kill $tail_pid 2>/dev/null || true' EXIT
qemu_rc=0
softroce_boot "$image_dir" "$SHARE" "$VM_TIMEOUT" "$OUT/console.log" || qemu_rc=$?
sleep 0.5
kill $tail_pid 2>/dev/null || true
t_vm=$(date +%s)

verdict_file=$SHARE/results/verdict
if [ ! -f "$verdict_file" ]; then
  echo "--- last lines of the VM console ($OUT/console.log) ---" >&2
  tail -n 40 "$OUT/console.log" >&2 || true
  [ "$qemu_rc" -eq 124 ] && die "softroce: guest timeout: the VM did not finish within ${VM_TIMEOUT}s (RDX_SOFTROCE_TIMEOUT)"
  die "softroce: the VM exited (qemu status $qemu_rc) without writing a verdict: it crashed or did not boot (console above)"
fi
verdict=$(cat "$verdict_file")

# --- report -----------------------------------------------------------------------------------------------------
echo
echo "=== soft-RoCE results ($SHARE/results) ==="
sed 's/^/  stage /' "$SHARE/results/summary"
[ -f "$SHARE/results/verbs-tests.counts" ] && echo "  verbs tests on rxe: $(cat "$SHARE/results/verbs-tests.counts")"
ratio_fail=0
lat=$SHARE/results/latency.txt
runs_of() {  # tool op -> that line's per-run medians, ascending
  awk -v t="$1" -v op="$2" '$1 == t && $2 == op {for (i = 3; i <= NF; i++) print $i}' "$lat" | sort -g
}
median_of() { runs_of "$@" | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}'; }
best_of() { runs_of "$@" | head -n 1; }  # the run the emulator's slow mode did not hit
ratio() { awk -v r="$1" -v p="$2" 'BEGIN {printf "%.2f", r / p}'; }
if [ -f "$lat" ]; then
  echo "  one-sided latency, 8 bytes, median of $(awk '$1 == "rdx" {print NF - 2; exit}' "$lat") alternating runs (us):"
  echo "  (both measured warm; per-run medians can still be bimodal under emulation; 'best' compares each side's fastest run;"
  echo "   an op fails the gate when both its ratios are above ${MAX_RATIO:-no limit})"
  printf '    %-6s %10s %10s %8s   %10s %10s %8s\n' op perftest rdx rdx/perf best-perf best-rdx ratio
  for op in read write cas; do
    p=$(median_of perftest "$op")
    r=$(median_of rdx "$op")
    [ -n "$p" ] && [ -n "$r" ] || continue
    median_ratio=$(ratio "$r" "$p")
    bp=$(best_of perftest "$op")
    br=$(best_of rdx "$op")
    best_ratio=$(ratio "$br" "$bp")
    printf '    %-6s %10s %10s %7sx   %10s %10s %7sx\n' "$op" "$p" "$r" "$median_ratio" "$bp" "$br" "$best_ratio"
    # The gate fails when both the medians and the fastest runs are over the limit. A slower data path (an extra
    # round trip, a copy) slows every run, so both ratios rise. Emulation noise moves only one of the two:
    #  - each tool's per-run medians fall into a fast and a slow mode, and a median of 7 runs lands in either
    #    (CI: rdx CAS 4 slow runs of 7, perftest 2 -> median ratio 2.71x, best 1.25x);
    #  - one lucky run moves a fastest run (CI: perftest write 12.81 us against its other six at 18-27 us, rdx's
    #    seven at 26-30 -> best ratio 2.06x, median 1.30x).
    if [ -n "$MAX_RATIO" ] && awk -v b="$best_ratio" -v md="$median_ratio" -v m="$MAX_RATIO" \
      'BEGIN {exit !(b > m && md > m)}'; then
      ratio_fail=1
    fi
  done
  sed 's/^/    runs: /' "$lat"
fi
echo "  time: build+image $((t_image - t_start))s, VM $((t_vm - t_image))s, total $((t_vm - t_start))s"

[ "$verdict" = 0 ] || die "softroce: guest stages failed (verdict $verdict); logs in $SHARE/results"
[ "$ratio_fail" = 0 ] || die "softroce: rdx/perftest latency ratio above RDX_SOFTROCE_MAX_RATIO=$MAX_RATIO (a regression of the verbs data path, or a very noisy host: see the runs above)"
log "softroce: all stages passed"
