"""Agreed exclusion (replication/primary_backup/primary_backup.cc): before a node writes without a backup it
excluded, every other data node excludes it too. Without that, a node that excluded a backup and then restarted
(forgetting it) let the backup read a copy that missed the writes that node coordinated: its restarted self and the
others all granted it leases.

The scenario, with real redis-py clients: MULTI/EXEC INCRs coordinated by n1 (transactions replicate to the
backups directly), GETs at n2 (a backup reading its own copy while it holds its leases) and at n0. n1 and n2 are cut
off from each other (rdxd --test-partition n1,n2, toggled by SIGUSR1): n1 excludes n2 and commits without it. Then n1
is killed (-9), the cut heals, and n1 restarts. The history of every key goes through Porcupine (rdx-lincheck);
with the exclusion kept to n1 (rdxd --test-fault unilateral-exclusion) the stale reads at n2 must be caught."""
import os
import time

from conftest import Cluster, wait_until
from kvhistory import KvRecorder, lincheck

KEYS = [f"acct:{i}" for i in range(4)]
TIMEOUT_MS = 500


def partition_then_restart(cluster, planted):
    extra = ["--failure-timeout-ms", str(TIMEOUT_MS), "--rdxd-arg=--test-partition=n1,n2"]
    if planted:
        extra.append("--rdxd-arg=--test-fault=unilateral-exclusion")
    cluster.up(nodes=3, extra=extra)
    ops = {"n0": ("get",), "n1": ("multi-incr",), "n2": ("get",)}
    with KvRecorder(cluster, ["n0", "n1", "n2"], KEYS, ops=ops, stop_on_error={"n1"}) as rec:
        time.sleep(1)
        cluster.kill("n1", signal="USR1")
        cluster.kill("n2", signal="USR1")
        wait_until(lambda: "excluded" in cluster.log("n1"), timeout=10, what="n1 to exclude n2")
        time.sleep(1)  # n1 commits transactions without n2
        cluster.kill("n1")
        cluster.kill("n2", signal="USR1")  # the cut heals
        cluster.start("n1")  # a fresh process: no memory of the exclusion
        time.sleep(3)  # GETs at n2 (and n0) with no more writes: n2's copy must not be read if it is stale
    hist, html = os.path.join(cluster.dir, "partition.kv.jsonl"), os.path.join(cluster.dir, "partition.html")
    rec.write(hist)
    code, report = lincheck(hist, html)
    incrs = sum(1 for r in rec.records if r["op"] == "incr" and "end" in r)
    gets_n2 = sum(1 for r in rec.records if r["op"] == "get" and r["node"] == "n2" and "end" in r)
    print(f"planted={planted}: {len(rec.records)} operations, {incrs} MULTI/EXEC INCRs at n1, {gets_n2} GETs at n2; "
          f"lincheck: {report}")
    assert incrs > 100 and gets_n2 > 100, (incrs, gets_n2)
    return code, report, html


def test_a_restarted_excluder_cannot_let_a_stale_backup_read(cluster):
    code, report, html = partition_then_restart(cluster, planted=False)
    assert code == 0 and report["ok"], f"{report} (see {html})"
    # n0 took part: it revoked n2 (and excluded it, or n2 rejoined first, having heard "excluded" from n0), so n2
    # recovered instead of reading the copy that missed n1's transactions.
    assert "excluded this node" in cluster.log("n2"), "n2 must have heard that it was excluded"


def test_an_exclusion_kept_to_one_node_is_caught(tmp_path):
    """The stale reads need n2 to read its own copy in the seconds after n1's restart; in about one run in four it
    read through the primary then (it did not hold both leases), and nothing stale was read: up to 3 attempts, each
    on a fresh cluster, must catch it once."""
    reports = []
    for attempt in range(3):
        cluster = Cluster(tmp_path / f"cluster{attempt}")
        try:
            code, report, _ = partition_then_restart(cluster, planted=True)
            assert "excluded this node" not in cluster.log("n2"), "nobody told n2 that it had missed writes"
        finally:
            cluster.down()
        reports.append(report)
        if code == 1 and report["illegal"]:
            return
    raise AssertionError(f"stale reads at n2 after n1's restart were not caught in 3 attempts: {reports}")
