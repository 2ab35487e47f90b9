# Settings and helpers of the soft-RoCE VM harness (sourced by run.sh, rootfs.sh and vm.sh).
# Facts behind the choices (machine line, TSC flags, rxe limits): ../shared/notes/softroce-vm.md.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

SOFTROCE_DIR=$RDX_ROOT/hack/softroce
DEBIAN_SUITE=bookworm
DEBIAN_MIRROR=${RDX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
QEMU=${RDX_SOFTROCE_QEMU:-qemu-system-x86_64}

# Packages of the guest image. The engine binaries are built on the host (Debian bookworm too) and run from the 9p
# share, so the guest needs their shared libraries. Adding a package changes the cache key (a new image is built).
GUEST_PACKAGES=(
  linux-image-amd64 kmod udev iproute2 procps
  rdma-core ibverbs-utils ibverbs-providers perftest libibverbs1 librdmacm1
  libfmt9 libspdlog1.10 libbenchmark1debian
  # The k8s stage: the offline single-node cluster of hack/cluster.sh (its Kubernetes binaries, CoreDNS, helm and
  # images come through the share).
  etcd-server containerd runc containernetworking-plugins iptables conntrack openssl curl
)

# Bump when rootfs.sh changes what it puts into the image.
SOFTROCE_IMAGE_RECIPE=2

# The image is keyed by everything that goes into it: suite, package list, PID-1 script, recipe version.
softroce_image_key() {
  { printf '%s\n' "$DEBIAN_SUITE" "${GUEST_PACKAGES[@]}" "recipe $SOFTROCE_IMAGE_RECIPE"; cat "$SOFTROCE_DIR/init.sh"; } |
    sha256sum | cut -c1-16
}
SOFTROCE_IMAGE_DIR=$RDX_CACHE/softroce/$(softroce_image_key)

# Under TCG the guest's rdtsc returns the host's TSC. Telling the guest kernel the host's TSC rate keeps guest
# microseconds real (perftest and clock_gettime both derive time from it); without tsc_early_khz half the microvm
# boots hang calibrating. Override: RDX_SOFTROCE_TSC_KHZ.
softroce_host_tsc_khz() {
  if [ -n "${RDX_SOFTROCE_TSC_KHZ:-}" ]; then echo "$RDX_SOFTROCE_TSC_KHZ"; return; fi
  local mhz
  mhz=$({ dmesg 2>/dev/null || true; } | grep -oE 'tsc: (Refined TSC clocksource calibration: |Detected )[0-9.]+ MHz' |
    tail -n1 | grep -oE '[0-9.]+ MHz' | cut -d' ' -f1) || true
  [ -n "$mhz" ] || mhz=$(awk -F': ' '/^cpu MHz/ {print $2; exit}' /proc/cpuinfo) || true
  awk -v m="${mhz:-2000}" 'BEGIN {printf "%d\n", m * 1000}'
}

# softroce_boot IMAGE_DIR SHARE TIMEOUT_S CONSOLE_LOG: boots the VM under TCG (KVM hangs a stock kernel on this host,
# see the note; RDX_SOFTROCE_ACCEL=kvm opts in where KVM works) with SHARE as 9p tag host0; the image stays read-only (snapshot=on). Returns qemu's exit code (124 on
# timeout); the verdict is SHARE/results/verdict, never qemu's status.
softroce_boot() {
  local image_dir=$1 share=$2 limit=$3 console=$4
  local tsc_khz accel="-accel tcg,thread=multi"
  tsc_khz=$(softroce_host_tsc_khz)
  [ "${RDX_SOFTROCE_ACCEL:-tcg}" = kvm ] && accel="-accel kvm -cpu host"
  timeout --kill-after=15 "$limit" "$QEMU" \
    -M microvm,rtc=on $accel -m "${RDX_SOFTROCE_MEM:-6144}" -smp 2 -nographic -no-reboot \
    -kernel "$image_dir/vmlinuz" -initrd "$image_dir/initrd.img" \
    -drive id=d0,file="$image_dir/rootfs.img",format=raw,if=none,snapshot=on -device virtio-blk-device,drive=d0 \
    -fsdev local,id=fs0,path="$share",security_model=none -device virtio-9p-device,fsdev=fs0,mount_tag=host0 \
    -netdev user,id=n0 -device virtio-net-device,netdev=n0 -device virtio-rng-device \
    -append "root=/dev/vda rw console=ttyS0 init=/root/init.sh panic=-1 quiet tsc_early_khz=$tsc_khz tsc=reliable clocksource=tsc" \
    </dev/null >"$console" 2>&1
}
