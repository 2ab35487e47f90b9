#!/usr/bin/env bash
# make bench-engine: the Google Benchmark microbenchmarks, each reported as a ratio measured in one run.
#   hashtable: batched (prefetching) GET vs one-at-a-time GET, 8 B keys, table > 10x L3   (goal >= 1.5x)
#   rpc:       16 B request/response messages over tcp, opportunistic batching vs disabled (goal >= 3x)
#   failure detection: GETs at a backup, failure detection (heartbeats, leases) on vs off (goal >= 0.95x)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${RDX_BENCH_OUT:-$here/build/bench-results}
mkdir -p "$out"
bash "$here/tools/build.sh" release rdx_bench_hashtable rdx_bench_rpc
bin=$here/build/release/bench

echo "=== hashtable: batched vs one-at-a-time (table > 10x L3) ==="
"$bin/rdx_bench_hashtable" --benchmark_out="$out/hashtable.json" --benchmark_out_format=json | tee "$out/hashtable.txt"

echo "=== rpc: 16-byte messages, batching on vs off ==="
"$bin/rdx_bench_rpc" --benchmark_out="$out/rpc.json" --benchmark_out_format=json
python3 - "$out/rpc.json" <<'PY'
import json, sys
runs = {b["name"]: b for b in json.load(open(sys.argv[1]))["benchmarks"] if b.get("run_type") == "iteration"}
on = next(v for k, v in runs.items() if "batching:1" in k)
off = next(v for k, v in runs.items() if "batching:0" in k)
ratio = on["items_per_second"] / off["items_per_second"]
print(f"rpc 16 B request/response: batched {on['items_per_second']/1e3:.1f}k/s "
      f"({on['msgs_per_packet']:.1f} msgs/packet) vs unbatched {off['items_per_second']/1e3:.1f}k/s "
      f"= {ratio:.2f}x (goal >= 3x)")
PY
echo "=== failure detection: on vs off (GETs served by a backup) ==="
bash "$here/tools/build.sh" release rdxd
bash "$here/tools/bench_failure_detection.sh" | tee "$out/failure_detection.txt"
echo "results in $out"
