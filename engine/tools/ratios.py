#!/usr/bin/env python3
"""Ratios of issue 3, measured in one run on this machine (absolute numbers on a shared 2-core box mean little):

  (a) Dandelion's locality switches on SmallBank and TATP, 3 nodes, dnl4, added one by one as in the paper:
      no-opts -> +nw-batch -> +ht-batch -> +local-reads
  (b) dnl4 vs dnl2 vs dnl1 on O(4,2)

Each configuration runs --duration seconds; clusters are started with engine/tools/rdx-local (tcp transport).
Hashtable batching hides memory latency, so it only pays when the tables are much larger than the last-level cache:
--smallbank-accounts / --tatp-subscribers size them (SmallBank: 2 keys per account, TATP: about 10 per subscriber) and
--memory-mb gives every node the arena to hold them. Each line also prints the average hashtable batch (reads per
batch) and the share of reads served locally, the counters that explain the ratios.
Usage: tools/ratios.py [--duration 5] [--bin build/release/bin] [--json out.json] [--only locality|protocols]
                       [--smallbank-accounts 100000] [--tatp-subscribers 20000] [--memory-mb 256]
"""
import argparse
import json
import os
import sys
import tempfile

from tablelib import sh

HERE = os.path.dirname(os.path.abspath(__file__))


class Cluster:
    def __init__(self, args, *extra):
        self.dir = tempfile.mkdtemp(prefix="rdx-ratios-")
        self.args = args
        sh([sys.executable, os.path.join(HERE, "rdx-local"), "up", "--dir", self.dir, "--nodes", "3",
            "--bin", args.bin, "--memory-mb", str(args.memory_mb), *extra])
        self.topology = os.path.join(self.dir, "topology.json")

    def bench(self, workload, *extra, load=False, duration=None):
        out = os.path.join(self.dir, "r.json")
        sh([os.path.join(self.args.bin, "rdx-bench"), "--config", self.topology, "--workload", workload,
            "--duration", str(duration or self.args.duration), "--coroutines", str(self.args.coroutines), "--json", out,
            *(["--load"] if load else []), *extra], timeout=self.args.duration * 10 + 300)
        with open(out) as f:
            return json.load(f)

    def down(self):
        sh([sys.executable, os.path.join(HERE, "rdx-local"), "down", "--dir", self.dir])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--coroutines", type=int, default=8)
    ap.add_argument("--bin", default=os.path.join(HERE, "..", "build", "release", "bin"))
    ap.add_argument("--json")
    ap.add_argument("--only", choices=["locality", "protocols"])
    ap.add_argument("--smallbank-accounts", type=int, default=100000)
    ap.add_argument("--tatp-subscribers", type=int, default=20000)
    ap.add_argument("--memory-mb", type=int, default=256)
    args = ap.parse_args()
    workloads = {"smallbank": f"smallbank:accounts={args.smallbank_accounts}",
                 "tatp": f"tatp:subscribers={args.tatp_subscribers}"}
    results = {"locality": {}, "protocols": {}}
    if args.only != "protocols":
        locality(args, workloads, results)
    if args.only != "locality":
        protocols(args, results)
    report(args, results)


def counters(r):
    """Average reads per hashtable batch, the share of table reads that went through a batch (a node also batches
    the reads it serves for other coordinators), and the share of reads served on the coordinator's node."""
    reads = r["reads"]
    batch = reads["ht_batched_reads"] / reads["ht_batches"] if reads["ht_batches"] else 0
    total = reads["local"] + reads["remote"]
    batched = reads["ht_batched_reads"] / total if total else 0
    return batch, batched, (reads["local"] / total if total else 0)


def locality(args, workloads, results):
    """(a) network batching needs its own cluster (it is a topology setting); the other two switch per run."""
    tput = {w: {} for w in workloads}
    for nw in (False, True):
        c = Cluster(args, *([] if nw else ["--no-batching"]))
        try:
            for w, spec in workloads.items():
                c.bench(spec, load=True, duration=1)  # load once per cluster, then warm up
                configs = [("off", "off")] if not nw else [("off", "off"), ("on", "off"), ("on", "on")]
                for ht, lr in configs:
                    r = c.bench(spec, "--ht-batching", ht, "--local-backup-reads", lr)
                    name = ("nw" if nw else "none") + ("+ht" if ht == "on" else "") + ("+lr" if lr == "on" else "")
                    tput[w][name] = r["committed_tx_s"]
                    batch, batched, local = counters(r)
                    results["locality"].setdefault(w, {}).setdefault("counters", {})[name] = {
                        "ht_batch_avg": batch, "ht_batched_share": batched, "local_read_share": local}
                    print(f"{w:9} {name:10} {r['committed_tx_s']:9.0f} tx/s  abort {100 * r['abort_rate']:4.1f}%  "
                          f"p50 {r['latency']['p50_us']:7.1f} us  local reads {100 * local:5.1f}%, batched "
                          f"{100 * batched:5.1f}% (avg {batch:4.1f} per batch)", flush=True)
        finally:
            c.down()
    for w, t in tput.items():
        results["locality"][w].update({
            "tx_s": t,
            "nw_batch": t["nw"] / t["none"],
            "ht_batch": t["nw+ht"] / t["nw"],
            "local_reads": t["nw+ht+lr"] / t["nw+ht"],
            "all_vs_none": t["nw+ht+lr"] / t["none"],
        })


def protocols(args, results):
    """(b) the three commit protocols on O(4,2)"""
    for proto in ("dnl4", "dnl2", "dnl1"):
        c = Cluster(args, "--txn-protocol", proto)
        try:
            r = c.bench("ogp:g=4,p=2,keys=100000", load=True)
            results["protocols"][proto] = {"tx_s": r["committed_tx_s"], "abort_rate": r["abort_rate"],
                                           "p50_us": r["latency"]["p50_us"], "p99_us": r["latency"]["p99_us"]}
            print(f"O(4,2) {proto}: {r['committed_tx_s']:.0f} tx/s, p50 {r['latency']['p50_us']:.1f} us, "
                  f"p99 {r['latency']['p99_us']:.1f} us, abort {100 * r['abort_rate']:.1f}%", flush=True)
        finally:
            c.down()
    base = results["protocols"]["dnl4"]["tx_s"]
    for proto, r in results["protocols"].items():
        r["vs_dnl4"] = r["tx_s"] / base


def report(args, results):
    print("\n(a) locality switches, throughput ratios (Dandelion: nw-batch 3-4x, ht-batch +20-25%, local reads +7%)")
    for w, r in results["locality"].items():
        print(f"  {w:9} ({workloads_of(args)[w]}) nw-batch {r['nw_batch']:.2f}x  ht-batch {r['ht_batch']:.2f}x  "
              f"local-reads {r['local_reads']:.2f}x  (all vs none {r['all_vs_none']:.2f}x)")
    if results["protocols"]:
        print("(b) O(4,2): " + ", ".join(f"{p} {r['vs_dnl4']:.2f}x" for p, r in results["protocols"].items())
              + " (relative to dnl4)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


def workloads_of(args):
    return {"smallbank": f"{args.smallbank_accounts} accounts", "tatp": f"{args.tatp_subscribers} subscribers"}


if __name__ == "__main__":
    main()
