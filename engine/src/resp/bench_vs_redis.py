#!/usr/bin/env python3
"""rdxd's Redis endpoint against redis-server on this machine, same redis-benchmark flags, rounds interleaved.

  bench_vs_redis.py [--bin DIR] [--rounds 5] [--requests 500000] [--nodes 1] [--workers 2] [-- extra benchmark args]

Starts a one-node rdx cluster (rdx-local; one shard, no replication) and a redis-server (no persistence), then runs
`redis-benchmark -t set,get -P 16 -c 50` against each in turn, `--rounds` times, so background load hits both alike.
Prints every round, the median requests/s per command and server, the rdx/Redis ratio, and each server's CPU time
per request (user+system of the server process over its runs), which is less sensitive to a busy machine.
"""
import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINE = os.path.abspath(os.path.join(HERE, "..", ".."))
RDX_LOCAL = os.path.join(ENGINE, "tools", "rdx-local")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def benchmark(port, args):
    out = subprocess.run(["redis-benchmark", "-p", str(port), "--csv", *args], capture_output=True, text=True,
                         timeout=600, check=True).stdout
    return {m.group(1): float(m.group(2)) for m in re.finditer(r'^"(\w+)","([\d.]+)"', out, re.M)}


def wait_for_redis(port, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if subprocess.run(["redis-cli", "-p", str(port), "PING"], capture_output=True, text=True).stdout.strip() == "PONG":
            return
        time.sleep(0.1)
    sys.exit(f"redis-server on {port} did not start")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ENGINE, "build", "release", "bin"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=500000)
    ap.add_argument("--nodes", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("extra", nargs="*", help="more redis-benchmark arguments (after --)")
    a = ap.parse_args()
    for tool in ("redis-server", "redis-benchmark", "redis-cli"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found (apt-get install redis-server redis-tools)")
    flags = ["-t", "set,get", "-n", str(a.requests), "-P", "16", "-c", "50", *a.extra]

    work = tempfile.mkdtemp(prefix="rdx-vs-redis-")
    redis_port = free_port()
    redis_proc = None
    try:
        subprocess.run([sys.executable, RDX_LOCAL, "up", "--dir", work, "--nodes", str(a.nodes), "--shards", "1",
                        "--workers", str(a.workers), "--memory-mb", "1024", "--bin", a.bin], check=True,
                       capture_output=True, timeout=120)
        topo = json.load(open(os.path.join(work, "topology.json")))
        rdx_port = topo["nodes"][0]["redis_port"]
        rdx_pid = json.load(open(os.path.join(work, "pids.json")))["n0"]
        redis_proc = subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
                                       "--appendonly", "no", "--daemonize", "no", "--logfile", ""],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_redis(redis_port)
        servers = {"rdx": (rdx_port, rdx_pid), "redis": (redis_port, redis_proc.pid)}
        rps = {s: {"SET": [], "GET": []} for s in servers}
        cpu = {s: 0.0 for s in servers}
        print(f"redis-benchmark {' '.join(flags)}; rdx: {a.nodes} node(s), {a.workers} workers; "
              f"redis-server {redis_port}", flush=True)
        for rnd in range(a.rounds):
            for name, (port, pid) in servers.items():
                c0 = cpu_seconds(pid)
                res = benchmark(port, flags)
                cpu[name] += cpu_seconds(pid) - c0
                for cmd in ("SET", "GET"):
                    rps[name][cmd].append(res[cmd])
                print(f"round {rnd + 1} {name:5s} SET {res['SET']:>10.0f}  GET {res['GET']:>10.0f}  "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)
        total = 2 * a.requests * a.rounds
        summary = {}
        for cmd in ("SET", "GET"):
            r, d = statistics.median(rps["rdx"][cmd]), statistics.median(rps["redis"][cmd])
            summary[cmd] = {"rdx": r, "redis": d, "ratio": r / d}
            print(f"{cmd}: rdx {r:.0f} req/s, redis {d:.0f} req/s (medians of {a.rounds}); rdx/redis = {r / d:.2f}")
        for name in servers:
            summary[f"cpu_us_per_request_{name}"] = 1e6 * cpu[name] / total
            print(f"{name}: {1e6 * cpu[name] / total:.2f} us of server CPU per request")
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"flags": flags, "rounds": rps, "summary": summary}, f, indent=2)
    finally:
        if redis_proc:
            redis_proc.terminate()
            redis_proc.wait(timeout=10)
        subprocess.run([sys.executable, RDX_LOCAL, "down", "--dir", work], capture_output=True, timeout=60)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
