#!/usr/bin/env python3
"""Odyssey's Table 3 on this machine: throughput of every registered replication protocol while the
write ratio varies (0, 1, 5, 20, 50, 75, 100 %), printed beside the paper's numbers for the same protocol.

Each protocol runs on its own 3-node cluster of one shard (engine/tools/rdx-local, tcp on loopback, txn.protocol
none so every protocol runs the same single-key path), loaded with --keys uniform keys of 32-byte values (the paper's
value size), then rdx-bench kv for --duration seconds per write ratio, GETs and PUTs spread over every
member (--read-from any --write-to any: in the paper every machine serves clients; a member that does not order a
write itself forwards it). Throughput counts completed operations; the p99 and mean latency of the same run are printed
too. Absolute numbers on a shared 2-core machine mean little (the paper: 7 x 56-core machines, 100 Gb/s RDMA):
compare protocols with each other, as ratios, within one run.

Under each row, per operation, over the whole run, warm-up included (operations: throughput x (warm-up + duration)):
the RPC messages and the packets (one send each) the three nodes sent, answers to the client included: the protocol's
work, which no other load on the machine changes; and the CPU time (microseconds, user + system) of the nodes and of
the client (rdx-bench). On a machine whose cores are all busy, CPU per operation is mostly the inverse of the
throughput (idle workers poll); its split between nodes and client is what it tells.

The right-hand side: write-only latency (p99 / mean, microseconds) at 25, 50 and 75 % of the protocol's peak write
throughput (the 100 % write column, measured just before), with rdx-bench --rate pacing the same sessions, and at
100 % (that closed-loop run itself).
Usage: tools/replication_table.py [--duration 3] [--keys 10000] [--threads 2] [--outstanding 16] [--json out.json]
                                  [--protocols abd,craq]
       tools/replication_table.py --from DIR --where WHAT   (a run made elsewhere: make bench-replication-softroce)
"""
import argparse
import json
import os
import resource
import sys
import tempfile
import urllib.request

from tablelib import only, sh

HERE = os.path.dirname(os.path.abspath(__file__))
WRITE_RATIOS = [0, 1, 5, 20, 50, 75, 100]
# Odyssey, Table 3 (M requests/s, 7 machines, 100 Gb/s RDMA, multi-threaded), by protocol name as rdx registers it.
PAPER = {
    "abd": [125, 118, 102, 84, 71, 64, 61],
    "zab": [967, 276, 102, 47, 23.5, 16.5, 14],
    "paxos": [125, 115, 90, 65, 44, 35, 27],
    "craq": [967, 739, 476, 246, 123, 87, 67],
    "hermes": [967, 735, 515, 275, 150, 107, 89],
}
LOADS = [25, 50, 75, 100]
W, L = 12, 30  # column widths: values, row labels


def p99_mean(r):
    return f"{r['p99_us']:.0f}/{r['mean_us']:.0f}"
# Its latency at 25/50/75/100 % of peak load, write-only (p99, mean in us).
PAPER_LATENCY = {
    "abd": [(28, 26), (34, 33), (52, 47), (138, 163)],
    "zab": [(22, 16), (30, 23), (40, 32), (110, 95)],
    "paxos": [(38, 26), (40, 33), (56, 47), (216, 163)],
    "craq": [(34, 22), (48, 30), (58, 37), (242, 138)],
    "hermes": [(18, 13), (24, 15), (36, 22), (110, 78)],
}


def protocols(bin_dir):
    out = sh([os.path.join(bin_dir, "rdxd"), "--list", "--json"])
    return [e["name"] for e in json.loads(out)["replication"]]


WARMUP_S = 1  # rdx-bench's default --warmup


def result_of(path):
    with open(path) as f:
        r = json.load(f)
    out = {"ops_s": r["throughput_ops_s"], "p99_us": r["latency"]["p99_us"], "mean_us": r["latency"]["mean_us"],
           "errors": r["errors"]["total"]}
    cpu = path[:-len(".json")] + ".cpu.json"  # (runs measured here; a run made elsewhere has none)
    if os.path.exists(cpu):
        with open(cpu) as f:
            out.update(json.load(f))
    return out


def cpu_seconds(pids):
    """User + system CPU seconds the processes used so far (/proc/<pid>/stat fields 14 and 15)."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def node_counters(topology):
    """(RPC messages, packets) the nodes sent so far, from their /metrics."""
    with open(topology) as f:
        nodes = json.load(f)["nodes"]
    msgs = packets = 0.0
    for n in nodes:
        with urllib.request.urlopen(f"http://127.0.0.1:{n['http_port']}/metrics", timeout=5) as r:
            for line in r.read().decode().splitlines():
                if line.startswith("rdx_rpc_messages_sent_total{"):
                    msgs += float(line.rsplit(" ", 1)[1])
                elif line.startswith("rdx_transport_packets_sent_total{"):
                    packets += float(line.rsplit(" ", 1)[1])
    return msgs, packets


def children_cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def collect(results_dir, protocol):
    """One protocol's table from its rdx-bench JSONs: <protocol>-w<write %>.json, <protocol>-l<load %>.json."""
    rows = [{"write_pct": w, **result_of(os.path.join(results_dir, f"{protocol}-w{w}.json"))} for w in WRITE_RATIOS]
    peak = rows[-1]["ops_s"]
    latency = [{"load_pct": load, "target_ops_s": peak * load / 100,
                **result_of(os.path.join(results_dir, f"{protocol}-l{load}.json"))} for load in LOADS[:-1]]
    latency.append({"load_pct": 100, "target_ops_s": peak, **rows[-1]})
    return {"throughput": rows, "latency": latency}


def measure(args, protocol):
    d = tempfile.mkdtemp(prefix=f"rdx-repl-{protocol}-")
    local = [sys.executable, os.path.join(HERE, "rdx-local")]
    sh(local + ["up", "--dir", d, "--nodes", "3", "--bin", args.bin, "--replication", protocol,
                "--txn-protocol", "none"])
    topo = os.path.join(d, "topology.json")
    bench = [os.path.join(args.bin, "rdx-bench"), "--config", topo, "--keys", str(args.keys), "--value-size", "32",
             "--threads", str(args.threads), "--outstanding", str(args.outstanding)]

    with open(os.path.join(d, "pids.json")) as f:
        nodes = list(json.load(f).values())

    def run(name, read_ratio, extra=()):
        out = os.path.join(d, f"{protocol}-{name}.json")
        node_cpu, client_cpu, sent = cpu_seconds(nodes), children_cpu_seconds(), node_counters(topo)
        sh(bench + ["--json", out, "--read-ratio", str(read_ratio), "--duration", str(args.duration), "--read-from",
                    "any", "--write-to", "any", "--warmup", str(WARMUP_S), *extra], timeout=args.duration * 10 + 120)
        node_cpu, client_cpu = cpu_seconds(nodes) - node_cpu, children_cpu_seconds() - client_cpu
        msgs, packets = (b - a for a, b in zip(sent, node_counters(topo)))
        ops = result_of(out)["ops_s"] * (WARMUP_S + args.duration)
        if ops:
            with open(out[:-len(".json")] + ".cpu.json", "w") as f:
                json.dump({"node_cpu_us": node_cpu / ops * 1e6, "client_cpu_us": client_cpu / ops * 1e6,
                           "msgs_per_op": msgs / ops, "packets_per_op": packets / ops}, f)
        return result_of(out)

    try:
        sh(bench + ["--load", "--no-run"], timeout=600)
        for w in WRITE_RATIOS:
            run(f"w{w}", 1 - w / 100)
        peak = result_of(os.path.join(d, f"{protocol}-w100.json"))["ops_s"]
        for load in LOADS[:-1]:
            run(f"l{load}", 0, ["--rate", str(peak * load / 100)])
        return collect(d, protocol)
    finally:
        sh(local + ["down", "--dir", d])


def protocols_in(results_dir):
    names = {f[:-len("-w0.json")] for f in os.listdir(results_dir) if f.endswith("-w0.json")}
    if not names:
        sys.exit(f"{results_dir}: no <protocol>-w0.json (rdx-bench results of a Table 3 run) in it")
    return sorted(names)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=3)
    ap.add_argument("--keys", type=int, default=10000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--outstanding", type=int, default=16)
    ap.add_argument("--bin", default=os.path.join(HERE, "..", "build", "release", "bin"))
    ap.add_argument("--protocols", help="comma-separated: measure only these (default: every registered one)")
    ap.add_argument("--json")
    ap.add_argument("--from", dest="results_dir",
                    help="print the table of a run made elsewhere (the soft-RoCE VM's table3 stage) from its "
                         "rdx-bench JSONs instead of measuring")
    ap.add_argument("--where", default="3 nodes, tcp on loopback", help="what the header says the run was on")
    args = ap.parse_args()
    if args.results_dir:
        results = {p: collect(args.results_dir, p) for p in protocols_in(args.results_dir)}
    else:
        results = {p: measure(args, p) for p in only(protocols(args.bin), args.protocols)}
    head = "".join(f"{w:>{W - 1}}%" for w in WRITE_RATIOS)
    print(f"throughput in k ops/s by write ratio (this machine: {args.where}; paper: M ops/s){'':4}")
    print(f"{'protocol':<{L}}{head}")
    for p, res in results.items():
        rows = res["throughput"]
        print(f"{p:<{L}}" + "".join(f"{r['ops_s'] / 1e3:>{W}.1f}" for r in rows))
        if p in PAPER:
            print(f"{'  paper':<{L}}" + "".join(f"{v:>{W}}" for v in PAPER[p]))
        print(f"{'  p99/mean us':<{L}}" + "".join(f"{p99_mean(r):>{W}}" for r in rows))
        if all("msgs_per_op" in r for r in rows):
            print(f"{'  node msgs/packets per op':<{L}}"
                  + "".join(f"{r['msgs_per_op']:>{W - 5}.1f}/{r['packets_per_op']:<4.1f}" for r in rows))
        if all("node_cpu_us" in r for r in rows):
            print(f"{'  cpu us/op nodes/client':<{L}}"
                  + "".join(f"{r['node_cpu_us']:>{W - 5}.0f}/{r['client_cpu_us']:<4.0f}" for r in rows))
        if any(r["errors"] for r in rows):
            print(f"{'  errors':<{L}}" + "".join(f"{r['errors']:>{W}}" for r in rows))
    names = list(results)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            ratios = "".join(f"{ra['ops_s'] / rb['ops_s']:>{W}.2f}" if rb["ops_s"] else f"{'-':>{W}}"
                             for ra, rb in zip(results[a]["throughput"], results[b]["throughput"]))
            print(f"{a + '/' + b:<{L}}{ratios}")
    print()
    print("write-only latency p99/mean us at a share of the peak write throughput (achieved k ops/s in brackets)")
    print(f"{'protocol':<{L}}" + "".join(f"{f'{load}%':>{W + 6}}" for load in LOADS))
    for p, res in results.items():
        lat = res["latency"]
        cells = [f"{r['p99_us']:.0f}/{r['mean_us']:.0f} ({r['ops_s'] / 1e3:.1f})" for r in lat]
        print(f"{p:<{L}}" + "".join(f"{c:>{W + 6}}" for c in cells))
        if p in PAPER_LATENCY:
            print(f"{'  paper':<{L}}" + "".join(f"{f'{p99}/{mean}':>{W + 6}}" for p99, mean in PAPER_LATENCY[p]))
        if any(r["errors"] for r in lat):
            print(f"{'  errors':<{L}}" + "".join(f"{r['errors']:>{W + 6}}" for r in lat))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
