"""Primary failover (engine/src/replication/primary_backup/election.cc) with real redis-py clients on every node.

The primary is killed with kill -9 again and again under MULTI/EXEC transfers: a backup is elected within a few
failure timeouts and the transfers through the survivors resume; the killed node, started again, rejoins as a backup
and serves. Money is conserved, every node holds the same balances afterwards, and a history of GET, INCR and
MULTI/EXEC INCR taken through every node meanwhile passes the strict-serializability checker (rdx-check) and, per key,
Porcupine (rdx-lincheck).
"""
import json
import os
import statistics
import time

import redis

from conftest import wait_until
from kvhistory import KvRecorder, lincheck, write_versions_history
from test_failure_detection import check
from test_restart_under_load import ACCOUNTS, INITIAL, Transfers, balances, first_transfer_after

NODES = ("n0", "n1", "n2")
COUNTERS = [f"ctr:{i}" for i in range(16)]
RECORDED_KILLS = 3  # the counters' history covers the first kills (Porcupine's search grows with unknown outcomes)


def test_killed_primary_is_replaced_and_rejoins_as_a_backup(cluster):
    cluster.up(nodes=3)
    r = redis.Redis(port=cluster.node("n0")["redis_port"], socket_timeout=10)
    r.mset({a: INITIAL for a in ACCOUNTS})
    resume, serve_after_start, primaries = [], [], []
    rec = KvRecorder(cluster, list(NODES), COUNTERS, ops=("get", "incr", "multi-incr"), per_node=1)
    with Transfers(cluster, list(NODES)) as load, rec:
        for kill in range(10):
            if kill == RECORDED_KILLS:
                rec.finish()
            time.sleep(1.0)
            victim = cluster.primary(NODES)
            primaries.append(victim)
            survivors = [n for n in NODES if n != victim]
            cluster.kill(victim)
            killed = time.time()
            resume.append(first_transfer_after(cluster, survivors, killed))
            before = load.committed
            wait_until(lambda: load.committed > before, timeout=10, what="the load's transfers to go on")
            started = time.time()
            cluster.start(victim, wait=False)
            serve_after_start.append(first_transfer_after(cluster, [victim], started))
            wait_until(lambda: all(cluster.ready(n) for n in NODES), timeout=30, what="every node ready")
            # The restarted node is a backup now: the survivors elected one of themselves.
            assert cluster.primary(NODES) in survivors
        time.sleep(1)
    print(f"resume after each kill: {[(v, round(s, 2)) for v, s in zip(primaries, resume)]}")
    resume.sort()
    print(f"{len(resume)} kills of the primary ({' '.join(primaries)}): transfers resumed after p50 "
          f"{statistics.median(resume):.2f} s, max {resume[-1]:.2f} s ({', '.join(f'{s:.2f}' for s in resume)}); "
          f"restarted primaries served after max {max(serve_after_start):.2f} s; {load.committed} transfers "
          f"acknowledged, {load.failed} refused or failed; {len(rec.records)} counter operations")
    assert resume[-1] < 5, resume
    assert max(serve_after_start) < 10, serve_after_start
    assert len(set(primaries)) == 3, f"every node was the primary once: {primaries}"
    views = {n: balances(cluster, n) for n in NODES}
    assert sum(views["n0"]) == INITIAL * len(ACCOUNTS), f"money not conserved: {views['n0']}"
    assert views["n0"] == views["n1"] == views["n2"], views
    versions, kv = os.path.join(cluster.dir, "failover.history"), os.path.join(cluster.dir, "failover.kv.jsonl")
    inferred = write_versions_history(rec, versions)
    rec.write(kv)
    code, report = check(versions)
    print(f"rdx-check: {report['stats']['committed']} transactions ({inferred} INCRs of unknown outcome that took "
          f"effect), ok={report['ok']}")
    assert code == 0 and report["ok"], f"rdx-check: {json.dumps(report)[:3000]}"
    lcode, lreport = lincheck(kv, os.path.join(cluster.dir, "failover.html"))
    assert lcode == 0 and lreport["ok"], f"rdx-lincheck: {lreport}"
    assert cluster.metric(primaries[-1], "rdx_shard_view") >= 10
