#!/bin/bash
# Odyssey's Table 3 over verbs (a benchmark, not a test: make bench-replication-softroce runs it alone). For every
# replication protocol rdxd registers, a 3-node cluster of it (lib/cluster.sh, no transaction protocol), loaded with
# TABLE3_KEYS keys of 32-byte values, then rdx-bench kv for TABLE3_DURATION seconds at each write ratio with reads and
# writes spread over every member, and write-only runs paced to 25/50/75 % of the 100 %-writes throughput. Each run's
# rdx-bench JSON goes to results/table3/<protocol>-w<write %>.json and <protocol>-l<load %>.json, the layout
# engine/tools/replication_table.py --from reads (it prints the table on the host, beside the tcp one).
set -uo pipefail
source "$(dirname "$0")/../lib/cluster.sh"
duration=${TABLE3_DURATION:-3}
keys=${TABLE3_KEYS:-10000}
out=$RESULTS/table3
rm -rf "$out" && mkdir -p "$out"
protocols=$("$RDX_BIN/rdxd" --list | awk '/^replication:/ {f = 1; next} /^[^ ]/ {f = 0} f {print $1}')
[ -n "$protocols" ] || { echo "rdxd --list names no replication protocol"; exit 1; }
bench() {  # json, extra args...
  local json=$1
  shift
  "$RDX_BIN/rdx-bench" --config "$dir/topology.json" --keys "$keys" --value-size 32 --threads 1 --outstanding 16 \
    --read-from any --write-to any --duration "$duration" --json "$json" --connect-timeout 120 "$@"
}
rc=0
for p in $protocols; do
  echo "--- $p ---"
  topology "$p" none
  start "-table3-$p"
  wait_ready || { rc=1; cleanup; continue; }
  bench "$out/$p-load.json" --load --no-run || { echo "$p: load failed"; rc=1; cleanup; continue; }
  for w in 0 1 5 20 50 75 100; do
    read_ratio=$(awk -v w="$w" 'BEGIN {printf "%.2f", 1 - w / 100}')
    bench "$out/$p-w$w.json" --read-ratio "$read_ratio" || { echo "$p: $w % writes failed"; rc=1; }
  done
  peak=$(sed -n 's/.*"throughput_ops_s": *\([0-9.eE+-]*\).*/\1/p' "$out/$p-w100.json" 2>/dev/null | head -n1)
  if [ -z "$peak" ]; then
    echo "$p: no peak write throughput in $out/$p-w100.json"
    rc=1
  else
    for load in 25 50 75; do
      rate=$(awk -v p="$peak" -v l="$load" 'BEGIN {printf "%.0f", p * l / 100}')
      bench "$out/$p-l$load.json" --read-ratio 0 --rate "$rate" || { echo "$p: $load % load failed"; rc=1; }
    done
  fi
  cleanup
done
ls "$out"
exit $rc
