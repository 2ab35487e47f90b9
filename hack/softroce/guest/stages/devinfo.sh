#!/bin/bash
# The rxe device as verbs and rdma_cm see it (for the record; fails if the port is not active).
set -euo pipefail
rdma link show
ibv_devices
ibv_devinfo -v -d "$RDMA_DEV" | tee /tmp/devinfo
grep -q 'state:.*PORT_ACTIVE' /tmp/devinfo
port=/sys/class/infiniband/$RDMA_DEV/ports/1
# Builtins only: rxe has hundreds of GID slots and a fork per slot is slow under emulation.
for f in "$port"/gids/*; do
  i=${f##*/}
  read -r g <"$f"
  [ "$g" = 0000:0000:0000:0000:0000:0000:0000:0000 ] && continue
  t=
  read -r t <"$port/gid_attrs/types/$i" 2>/dev/null || true
  echo "gid[$i] $g $t"
done
echo "selected GID index: $GID_INDEX"
# The clock every timestamp reads (perftest uses the TSC directly; clock_gettime is slow on a non-TSC clocksource).
echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" \
  "(available: $(cat /sys/devices/system/clocksource/clocksource0/available_clocksource))"
