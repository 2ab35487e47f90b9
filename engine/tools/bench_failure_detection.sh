#!/usr/bin/env bash
# The steady-state cost of failure detection (heartbeats, and the lease check of every read a backup serves from its
# own copy): a 3-node loopback cluster with it on, then off, alternating for ROUNDS rounds; redis-benchmark GETs
# (pipelined) at a backup. Prints each round and the ratio of the means (goal: within 5%).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$here/build/release/bin
rounds=${ROUNDS:-6}
requests=${REQUESTS:-1500000}
work=$(mktemp -d)
trap 'for m in on off; do python3 "$here/tools/rdx-local" down --dir "$work/$m" >/dev/null 2>&1 || true; done; rm -rf "$work"' EXIT
command -v redis-benchmark >/dev/null || { echo "redis-benchmark not found (engine/tools/install-deps.sh installs it)" >&2; exit 1; }
for round in $(seq "$rounds"); do
  for mode in on off; do
    d=$work/$mode
    rm -rf "$d"
    python3 "$here/tools/rdx-local" up --dir "$d" --nodes 3 --workers 2 --bin "$bin" --memory-mb 256 \
      --failure-detection "$mode" >/dev/null
    port=$(python3 -c "import json,sys; print(next(n['redis_port'] for n in json.load(open(sys.argv[1]))['nodes'] if n['name'] == 'n1'))" "$d/topology.json")
    redis-benchmark -p "$port" -t set -n 20000 -r 10000 -q >/dev/null
    rps=$(redis-benchmark -p "$port" -t get -n "$requests" -r 10000 -c 50 -P 16 -q | tr '\r' '\n' | grep GET | tail -1 |
          sed -E 's/GET: ([0-9.]+) requests per second.*/\1/')
    echo "$mode $round $rps" | tee -a "$work/results"
    python3 "$here/tools/rdx-local" down --dir "$d" >/dev/null
  done
done
python3 - "$work/results" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
mean = {m: sum(float(r[2]) for r in rows if r[0] == m) / sum(1 for r in rows if r[0] == m) for m in ("on", "off")}
print(f"failure detection on: {mean['on']/1e3:.1f}k GET/s, off: {mean['off']/1e3:.1f}k GET/s "
      f"(mean of {len(rows)//2} rounds each) = {mean['on']/mean['off']:.3f}x (goal >= 0.95x)")
PY
