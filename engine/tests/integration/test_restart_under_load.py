"""A member killed with kill -9 under a load of MULTI/EXEC transfers (real redis-py clients on every node) and started
again: no acknowledged transfer is lost, money is conserved, every node serves the same data afterwards, and the
restarted node serves within 10 s of its start. The primary variant kills whichever node is the primary at the time
(a backup is elected each time: test_primary_failover.py measures how fast). Every node coordinates transfers, the
victim included: a killed backup's transactions are decided by the primary that holds their locks (coordinator
recovery, test_coordinator_recovery.py); a killed primary takes its own coordinators' locks with it."""
import random
import time

import pytest
import redis

from conftest import PinnedClients, wait_until

ACCOUNTS = [f"acct:{i}" for i in range(20)]
INITIAL = 1000


class Transfers(PinnedClients):
    """Clients pinned to nodes doing MULTI/EXEC transfers; an EXEC that returned is acknowledged."""

    def __init__(self, cluster, nodes, per_node=2):
        super().__init__(cluster, nodes, per_node)
        self.committed, self.failed = 0, 0
        self.commit_times = []  # when each acknowledged transfer returned (the longest gap: how long writes stopped)

    def client(self, node, seed):
        rng = random.Random(hash((node, seed)))
        r = None
        while not self.stop.is_set():
            try:
                if r is None:
                    r = redis.Redis(port=self.cluster.node(node)["redis_port"], socket_timeout=10)
                a, b = rng.sample(ACCOUNTS, 2)
                amount = rng.randint(1, 20)
                p = r.pipeline(transaction=True)
                p.decrby(a, amount)
                p.incrby(b, amount)
                p.execute()
                with self.lock:
                    self.committed += 1
                    self.commit_times.append(time.time())
            except (redis.ConnectionError, redis.TimeoutError):
                r = None  # the node went away: reconnect
                with self.lock:
                    self.failed += 1
                time.sleep(0.05)
            except redis.RedisError:
                with self.lock:
                    self.failed += 1
                time.sleep(0.01)


    def longest_pause(self, since, until):
        """The longest time in [since, until] in which no transfer was acknowledged (s), and when it began."""
        with self.lock:
            times = [since] + [t for t in self.commit_times if since <= t <= until] + [until]
        return max((b - a, a) for a, b in zip(times, times[1:]))


def first_transfer_after(cluster, nodes, since, timeout=30):
    """Seconds from `since` until a MULTI/EXEC transfer through one of `nodes` is acknowledged (e.g. a restarted
    node serves, or the survivors of a primary's death take writes again)."""
    deadline, last = time.time() + timeout, None
    while time.time() < deadline:
        for n in nodes:
            try:
                p = redis.Redis(port=cluster.node(n)["redis_port"], socket_timeout=5).pipeline(transaction=True)
                p.incrby("probe:a", 1)
                p.decrby("probe:b", 1)
                p.execute()
                return time.time() - since
            except redis.RedisError as e:
                last = f"{n}: {e}"
        time.sleep(0.01)
    raise AssertionError(f"no transfer through {nodes} was acknowledged within {timeout} s (last error: {last})")


def balances(cluster, node):
    r = redis.Redis(port=cluster.node(node)["redis_port"], socket_timeout=10)
    return [int(v) for v in r.mget(ACCOUNTS)]


@pytest.mark.parametrize("victim", ["primary", "n2"], ids=["primary", "backup"])
def test_kill_and_restart_under_transfers_loses_nothing(cluster, victim):
    cluster.up(nodes=3)
    r = redis.Redis(port=cluster.node("n0")["redis_port"], socket_timeout=10)
    r.mset({a: INITIAL for a in ACCOUNTS})
    serve_after_start = []
    with Transfers(cluster, ["n0", "n1", "n2"]) as load:
        for kill in range(3):
            time.sleep(1.5)
            node = cluster.primary() if victim == "primary" else victim
            cluster.kill(node)
            time.sleep(3)
            before = load.committed
            started = time.time()
            cluster.start(node, wait=False)
            serve_after_start.append(first_transfer_after(cluster, [node], started))
            wait_until(lambda: load.committed > before, timeout=10, what="the load's transfers to go on")
        time.sleep(1)
    print(f"{victim}: {load.committed} transfers acknowledged, {load.failed} refused or failed; restarted node "
          f"served after {', '.join(f'{s:.2f}' for s in serve_after_start)} s")
    assert max(serve_after_start) < 10
    wait_until(lambda: all(cluster.ready(n) for n in ("n0", "n1", "n2")), timeout=30, what="every node ready")
    views = {n: balances(cluster, n) for n in ("n0", "n1", "n2")}
    assert sum(views["n0"]) == INITIAL * len(ACCOUNTS), f"money not conserved: {views['n0']}"
    assert views["n0"] == views["n1"] == views["n2"], views
