"""Handover (issue 14, build item 3): a primary asked to stop (SIGTERM, as when Kubernetes deletes or rolls its pod)
has another member of its shard elected before it goes (engine/src/replication/primary_backup/handover.cc). Under
MULTI/EXEC transfers through every node (and a per-key GET/INCR/MULTI-INCR history during the handovers), whichever
node is the primary is stopped with SIGTERM and started again, three times, then the same with SIGKILL: each SIGTERM hands the shard over
(its log says to whom), transfers stop for a shorter time than after a kill -9 (both measured in the same run),
money is conserved, every node holds the same balances afterwards, and both checkers find nothing."""
import statistics
import time

import redis

from conftest import wait_until
from kvhistory import KvRecorder
from test_failure_detection import check_both
from test_restart_under_load import ACCOUNTS, INITIAL, Transfers, balances

NODES = ("n0", "n1", "n2")
KEYS = [f"k{i}" for i in range(6)]
ROUNDS = 3


def stop_primary(cluster, load, signal):
    """Stops whichever node is the primary with `signal` (SIGTERM returns once the process ended: it hands over
    first), waits for transfers to go on without it and starts it again. Returns the node and the longest time after
    the signal in which no transfer was acknowledged."""
    node = cluster.primary()
    others = tuple(n for n in NODES if n != node)
    t0 = time.time()
    cluster.kill(node, signal=signal)
    successor = cluster.primary(others)
    before = load.committed
    wait_until(lambda: load.committed > before + 20, timeout=10, what=f"transfers to go on under {successor}")
    pause, _ = load.longest_pause(t0, time.time())
    cluster.start(node)
    return node, successor, pause


def test_a_stopping_primary_hands_its_shard_over(cluster):
    cluster.up(nodes=3)
    redis.Redis(port=cluster.node("n0")["redis_port"], socket_timeout=10).mset({a: INITIAL for a in ACCOUNTS})
    pauses = {"TERM": [], "KILL": []}
    # The per-key history covers the handovers (Porcupine's search grows with every outcome a stop leaves unknown).
    rec = KvRecorder(cluster, list(NODES), KEYS, ops=("get", "incr", "multi-incr"), per_node=1)
    with Transfers(cluster, list(NODES), per_node=1) as load:
        with rec:
            time.sleep(1)
            for _ in range(ROUNDS):
                marks = cluster.log_marks(*NODES)
                node, successor, pause = stop_primary(cluster, load, "TERM")
                pauses["TERM"].append(pause)
                log = cluster.logs_since(marks, node)
                assert "resigns as the primary" in log and f"handover: {successor} is the primary" in log, log
                time.sleep(1)
        for _ in range(ROUNDS):
            pauses["KILL"].append(stop_primary(cluster, load, "KILL")[2])
            time.sleep(1)
    print(f"transfers stopped after SIGTERM of the primary (handover): {[round(p, 3) for p in pauses['TERM']]} s; "
          f"after SIGKILL (election once its silence is noticed and its leases end): "
          f"{[round(p, 3) for p in pauses['KILL']]} s; {load.committed} transfers acknowledged")
    assert statistics.median(pauses["TERM"]) < statistics.median(pauses["KILL"]), pauses
    wait_until(lambda: all(cluster.ready(n) for n in NODES), timeout=30, what="every node ready")
    views = {n: balances(cluster, n) for n in NODES}
    assert sum(views["n0"]) == INITIAL * len(ACCOUNTS), f"money not conserved: {views['n0']}"
    assert views["n0"] == views["n1"] == views["n2"], views
    (code, report), (lin, lin_report), html = check_both(cluster, rec, "handover")
    assert code == 0, report
    assert lin == 0, f"{lin_report} (see {html})"
