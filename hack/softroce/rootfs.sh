#!/usr/bin/env bash
# hack/softroce/rootfs.sh: builds (once) and caches the soft-RoCE VM image outside the repo:
#   $RDX_CACHE/softroce/<key>/{rootfs.img,vmlinuz,initrd.img,complete}
# The key hashes the package list, the PID-1 script and this recipe (lib.sh: softroce_image_key). A warm cache makes
# this a no-op; concurrent callers serialize on a lock. Prints the image directory on stdout.
source "$(dirname "$0")/lib.sh"

image_dir=$SOFTROCE_IMAGE_DIR
if [ -f "$image_dir/complete" ]; then
  echo "$image_dir"
  exit 0
fi

apt_install debootstrap e2fsprogs
mkdir -p "$RDX_CACHE/softroce"
exec 9>"$RDX_CACHE/softroce/.build.lock"
flock -w 1800 9 || die "softroce: timed out waiting for another rootfs build (lock $RDX_CACHE/softroce/.build.lock)"
if [ -f "$image_dir/complete" ]; then  # built by the holder of the lock while we waited
  echo "$image_dir"
  exit 0
fi

work=$(mktemp -d "$RDX_CACHE/softroce/build.XXXXXX")
cleanup() {
  # debootstrap leaves proc/sys mounted in the chroot when it fails half-way.
  for m in proc sys dev/pts dev; do umount -l "$work/rootfs/$m" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap "exit 130" INT TERM
rootfs=$work/rootfs

log "softroce: building the VM rootfs ($DEBIAN_SUITE from $DEBIAN_MIRROR; about 3 min, cached in $image_dir)"
include=$(IFS=,; echo "${GUEST_PACKAGES[*]}")
if ! timeout 1500 debootstrap --variant=minbase --include="$include" "$DEBIAN_SUITE" "$rootfs" "$DEBIAN_MIRROR" \
    >"$work/debootstrap.log" 2>&1; then
  tail -n 20 "$work/debootstrap.log" >&2
  die "softroce: no cached VM image ($image_dir) and debootstrap from $DEBIAN_MIRROR failed (no network/apt mirror? set RDX_DEBIAN_MIRROR); full log above"
fi
chroot "$rootfs" apt-get clean
rm -rf "$rootfs"/var/lib/apt/lists/*
install -m 0755 "$SOFTROCE_DIR/init.sh" "$rootfs/root/init.sh"
echo softroce >"$rootfs/etc/hostname"

kernel=$(ls "$rootfs"/boot/vmlinuz-* 2>/dev/null | sort -V | tail -n1)
initrd=$(ls "$rootfs"/boot/initrd.img-* 2>/dev/null | sort -V | tail -n1)
[ -n "$kernel" ] && [ -n "$initrd" ] || die "softroce: the rootfs has no kernel/initrd under /boot (linux-image-amd64 failed to install?)"
ls "$rootfs"/lib/modules/*/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko* >/dev/null 2>&1 ||
  die "softroce: the guest kernel has no rdma_rxe module"

mkdir -p "$work/out"
cp "$kernel" "$work/out/vmlinuz"
cp "$initrd" "$work/out/initrd.img"
truncate -s 8G "$work/out/rootfs.img"  # sparse; the k8s stage unpacks images into it
mkfs.ext4 -q -F -L rdxroot -d "$rootfs" "$work/out/rootfs.img"
basename "$kernel" >"$work/out/kernel-version"
date -u +%FT%TZ >"$work/out/complete"

rm -rf "$image_dir"
mv "$work/out" "$image_dir"
# Images of other keys (older package lists/recipes) are dead weight (~700 MB each).
for old in "$RDX_CACHE"/softroce/*/complete; do
  [ -f "$old" ] && [ "$(dirname "$old")" != "$image_dir" ] && rm -rf "$(dirname "$old")"
done
log "softroce: VM image ready in $image_dir ($(du -sh --apparent-size "$image_dir/rootfs.img" | cut -f1) sparse, $(du -sh "$image_dir/rootfs.img" | cut -f1) used)"
echo "$image_dir"
