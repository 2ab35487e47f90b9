#!/bin/sh
# PID 1 of the soft-RoCE VM (baked into the image as /root/init.sh). Mounts the host share, runs the test driver that
# the host put there, writes the driver's exit code to results/verdict, and powers off. Kept minimal: everything that
# changes often lives in the share (guest/driver.sh), not in the image.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
# No init system in the image: power off through sysrq (qemu exits); reboot if that fails (-no-reboot exits too).
power_off() {
  sync
  echo o >/proc/sysrq-trigger
  sleep 5
  echo b >/proc/sysrq-trigger
}
mount -t proc proc /proc 2>/dev/null
mount -t sysfs sys /sys 2>/dev/null
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm /dev/hugepages
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t hugetlbfs hugetlbfs /dev/hugepages 2>/dev/null
ip link set lo up
hostname softroce
modprobe -a 9pnet_virtio 9p
mkdir -p /mnt/host
if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=none host0 /mnt/host; then
  echo "softroce-init: cannot mount the 9p share" >/dev/console
  power_off
fi
mkdir -p /mnt/host/results
if [ -f /mnt/host/guest/driver.sh ]; then
  bash /mnt/host/guest/driver.sh
  rc=$?
else
  echo "softroce-init: /mnt/host/guest/driver.sh missing" >/dev/console
  rc=97
fi
echo "$rc" >/mnt/host/results/verdict.tmp && mv /mnt/host/results/verdict.tmp /mnt/host/results/verdict
power_off
