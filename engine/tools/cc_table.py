#!/usr/bin/env python3
"""RCC's comparison on this machine: every registered transaction protocol, with every primitive it honours, on RCC's
YCSB (10 operations, 10 % read-modify-write, 5 us of computation per transaction: workload ycsb-rcc) and SmallBank,
at 1 and 8 coroutines per worker: committed transactions/s, abort rate, p50/p99 latency, measured in one run,
printed beside the RCC seed's YCSB numbers (EDR, 4 nodes, M txn/s) for the same protocol and primitive.

Each protocol runs on its own 3-node, 3-replica cluster of one shard (engine/tools/rdx-local, tcp on loopback, one
worker per node unless --workers), loaded once per workload. As in RCC, every read goes to the key's primary
(--local-backup-reads off; RCC's protocols read at primaries): the coordinators of the two backups read over the
network, with the primitive under test, so two reads in three are remote. On tcp a one-sided operation is executed by the target's
CPU (emulated); the table prints how many each run needed. Absolute numbers on a shared 2-core machine mean little
(RCC: a cluster of many-core machines with 100 Gb/s RDMA): compare protocols with each other, within one run.
Usage: tools/cc_table.py [--duration 3] [--records 10000] [--accounts 10000] [--json out.json] [--protocols a,b]
"""
import argparse
import json
import os

from ratios import Cluster
from tablelib import only, sh

HERE = os.path.dirname(os.path.abspath(__file__))
COROUTINES = [1, 8]
# The RCC seed (its response to reviewers): YCSB throughput on EDR at 4 nodes, M txn/s, by (protocol, primitives).
SEED = {
    ("occ", "onesided"): 0.387, ("nowait", "onesided"): 0.346, ("waitdie", "onesided"): 0.358,
    ("mvcc", "onesided"): 0.418, ("sundial", "onesided"): 0.384,
    ("occ", "rpc"): 0.285, ("nowait", "rpc"): 0.27, ("waitdie", "rpc"): 0.289, ("mvcc", "rpc"): 0.38,
    ("sundial", "rpc"): 0.34,
}
W, L = 11, 22  # column widths: values, row labels


def registered(bin_dir):
    out = sh([os.path.join(bin_dir, "rdxd"), "--list", "--json"])
    return [(e["name"], e["primitives"]) for e in json.loads(out)["txn"]]


def row_of(r):
    lat = r["latency"]
    return {"tx_s": r["committed_tx_s"], "abort_rate": r["abort_rate"], "p50_us": lat["p50_us"],
            "p99_us": lat["p99_us"], "emulated": r.get("onesided_emulated", 0), "onesided_reads": r["reads"]["onesided"],
            "remote_reads": r["reads"]["remote"],
            "checker_ok": r.get("checker", {}).get("ok")}


def measure(args, protocol, primitives):
    workloads = {"ycsb-rcc": f"ycsb-rcc:records={args.records}", "smallbank": f"smallbank:accounts={args.accounts}"}
    c = Cluster(args, "--txn-protocol", protocol, "--workers", str(args.workers), "--primitives", primitives)
    try:
        out = {}
        for name, spec in workloads.items():
            for i, n in enumerate(COROUTINES):
                args.coroutines = n
                out[f"{name}/{n}"] = row_of(c.bench(spec, "--local-backup-reads", "off", load=i == 0))
        return out
    finally:
        c.down()


def report(args, results):
    cols = [f"{w}/{n}" for w in ("ycsb-rcc", "smallbank") for n in COROUTINES]
    print(f"k committed tx/s, abort %, p50/p99 us, by workload/coroutines per worker (this machine: 3 nodes, tcp "
          f"on loopback, {args.workers} worker(s) each; seed: RCC's YCSB on EDR at 4 nodes, M txn/s)")
    print(f"{'protocol/primitives':<{L}}" + "".join(f"{c:>{2 * W}}" for c in cols) + f"{'seed YCSB':>{W}}")
    for (protocol, prim), rows in results.items():
        seed = SEED.get((protocol, prim))
        cells = "".join(f"{rows[c]['tx_s'] / 1e3:>{W}.1f}{rows[c]['abort_rate'] * 100:>{W - 1}.1f}%" for c in cols)
        print(f"{protocol + '/' + prim:<{L}}{cells}{seed if seed else '-':>{W}}")
        lat = "".join(f"{rows[c]['p50_us']:>{W}.0f}{rows[c]['p99_us']:>{W}.0f}" for c in cols)
        print(f"{'  p50/p99 us':<{L}}{lat}")
        print(f"{'  remote/one-sided rd':<{L}}" + "".join(
            f"{rows[c]['remote_reads']:>{W}}{rows[c]['onesided_reads']:>{W}}" for c in cols))
        emulated = sum(rows[c]["emulated"] for c in cols)
        print(f"{'  one-sided (emulated)':<{L}}{emulated:>{W}}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=3)
    ap.add_argument("--records", type=int, default=100000)
    ap.add_argument("--accounts", type=int, default=10000)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--memory-mb", type=int, default=256)
    ap.add_argument("--bin", default=os.path.join(HERE, "..", "build", "release", "bin"))
    ap.add_argument("--protocols", help="comma-separated: measure only these (default: every registered one)")
    ap.add_argument("--json")
    args = ap.parse_args()
    entries = dict(registered(args.bin))
    results = {(p, prim): measure(args, p, prim) for p in only(list(entries), args.protocols) for prim in entries[p]}
    report(args, results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{p}/{prim}": rows for (p, prim), rows in results.items()}, f, indent=1)


if __name__ == "__main__":
    main()
