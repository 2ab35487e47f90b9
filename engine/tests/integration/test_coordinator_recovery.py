"""Coordinator recovery (engine/src/txn/dandelion/recovery.cc) with real redis-py clients, for every transaction
protocol.

Four nodes in two shards: n0 (primary) and n1 of shard 0, n2 (primary) and n3 of shard 1. Clients on every node do
MULTI/EXEC transfers between accounts of both shards; n3, a backup, coordinates many of them and is killed in the
middle of one again and again (rdxd --test-crash: a SIGKILL at a chosen point of its N-th commit that locks at both
primaries), and started again each time:
  after-lock       every lock taken, nothing decided (dnl1 reports a commit at that point)
  after-replicate  decided, the writes at the backups, no participant released
  mid-unlock       one participant committed and released, the other still holds its locks
The primaries still holding the dead coordinator's locks must decide its transactions alike (the crashed one with
the outcome its protocol implies), apply the decision and free the locks within a bound; money is conserved; every
node holds the same balances; and a history of GET, INCR and MULTI/EXEC INCR on counters through every node (n3's
clients included) passes rdx-check (strict serializability) and Porcupine (per-key linearizability).
"""
import datetime
import re
import statistics
import time

import pytest
import redis

from conftest import registered, wait_until
from kvhistory import KvRecorder
from test_failure_detection import check_both
from test_restart_under_load import ACCOUNTS, INITIAL, Transfers, balances

NODES = ("n0", "n1", "n2", "n3")
COUNTERS = [f"ctr:{i}" for i in range(8)]
POINTS = ("after-lock", "after-replicate", "mid-unlock")
KILLS_PER_POINT = 2
CRASH_AFTER = 40  # the coordinator's N-th two-shard commit after each start
# The stated bound: the crashed transaction is decided everywhere within it of the kill. A participant whose backup
# the dead coordinator was must exclude it first: one failure timeout (500 ms) when the coordinator was serving, up to
# the 2 s connect grace when it died again while rejoining (the survivors had not reconnected to it yet).
BOUND_S = 2.5

# What recovery decides for the crashed transaction: commit when a participant committed it, or when the protocol
# may have reported a commit by then (dnl2: applied at the primaries; dnl1: every lock taken), else abort.
EXPECTED = {
    "dnl4": {"after-lock": "aborted", "after-replicate": "aborted", "mid-unlock": "committed"},
    "dnl2": {"after-lock": "aborted", "after-replicate": "committed", "mid-unlock": "committed"},
    "dnl1": {"after-lock": "committed", "after-replicate": "committed", "mid-unlock": "committed"},
    # 2PL commits as dnl2 does once its execution reads hold their locks.
    "nowait": {"after-lock": "aborted", "after-replicate": "committed", "mid-unlock": "committed"},
    "waitdie": {"after-lock": "aborted", "after-replicate": "committed", "mid-unlock": "committed"},
    # OCC's commit is dnl4's.
    "occ": {"after-lock": "aborted", "after-replicate": "aborted", "mid-unlock": "committed"},
    # MVCC's commit is occ's (the timestamps only decide whether a lock is admitted).
    "mvcc": {"after-lock": "aborted", "after-replicate": "aborted", "mid-unlock": "committed"},
    # SUNDIAL's too (the commit timestamp only decides admissions and lease renewals).
    "sundial": {"after-lock": "aborted", "after-replicate": "aborted", "mid-unlock": "committed"},
}

STAMP = r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})"  # rdx-local's log lines: <time> <level> <message>


def stamp(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f").timestamp()


def crashes(log):
    """(time, txid) of each test crash in a node's log."""
    pat = STAMP + r" warning dandelion: test crash of the coordinator of transaction (0x[0-9a-f]+)"
    return [(stamp(m.group(1)), m.group(2)) for m in re.finditer(pat, log)]


def recoveries(cluster, txid, coordinator="n3", participants=("n0", "n2")):
    """(time, node, outcome) of each participant that recovered transaction `txid`."""
    out = []
    pat = (STAMP + r" warning dandelion: transaction " + txid + r" of lost coordinator " + coordinator +
           r" (committed|aborted) here")
    for n in participants:
        out += [(stamp(m.group(1)), n, m.group(2)) for m in re.finditer(pat, cluster.log(n))]
    return out


def all_accounts_writable(cluster, node="n0"):
    """A MULTI/EXEC that writes every account commits (no lock of a dead coordinator is left), retried on conflicts
    with the live load."""
    r = redis.Redis(port=cluster.node(node)["redis_port"], socket_timeout=10)
    p = r.pipeline(transaction=True)
    for a in ACCOUNTS:
        p.incrby(a, 0)
    try:
        p.execute()
        return True
    except redis.RedisError:
        return False


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("protocol", registered("txn"))
def test_dead_coordinators_transactions_are_decided_alike_and_their_locks_freed(cluster, protocol, point):
    if protocol not in EXPECTED:
        pytest.fail(f"{protocol}: add what its recovery decides at each crash point to EXPECTED")
    cluster.up(nodes=4, shards=2, extra=["--txn-protocol", protocol,
                                         f"--rdxd-arg=--test-crash=n3:{point}:{CRASH_AFTER}"])
    r = redis.Redis(port=cluster.node("n0")["redis_port"], socket_timeout=10)
    r.mset({a: INITIAL for a in ACCOUNTS})
    # mid-unlock: the first participant released as the coordinator told it; only the other one recovers.
    participants = 1 if point == "mid-unlock" else 2
    delays, outcomes = [], []
    rec = KvRecorder(cluster, list(NODES), COUNTERS, ops=("get", "incr", "multi-incr"), per_node=1)
    with Transfers(cluster, ["n3"], per_node=4) as coordinated, Transfers(cluster, ["n0", "n2"], per_node=1), rec:
        for kill in range(KILLS_PER_POINT):
            wait_until(lambda: len(crashes(cluster.log("n3"))) > kill, timeout=60,
                       what=f"n3's crash #{kill + 1} at {point}")
            t_crash, txid = crashes(cluster.log("n3"))[kill]
            wait_until(lambda: len(recoveries(cluster, txid)) >= participants, timeout=10,
                       what=f"{participants} recoveries of {txid}")
            found = recoveries(cluster, txid)
            delays.append(max(t for t, _, _ in found) - t_crash)
            outcomes.append(sorted(o for _, _, o in found))
            if kill + 1 < KILLS_PER_POINT:
                cluster.start("n3", wait=False)  # (it may reach its next crash before it would be seen ready)
        rec.finish()
        committed = coordinated.committed
    cluster.start("n3")  # no transfers through it now: it stays up
    print(f"{protocol} {point}: {len(delays)} crashes of the coordinator; the crashed transaction was "
          f"{outcomes} at the participants that held its locks, decided {', '.join(f'{d * 1000:.0f}' for d in delays)} ms after "
          f"the kill (p50 {statistics.median(delays) * 1000:.0f} ms, max {max(delays) * 1000:.0f} ms); "
          f"{committed} transfers through n3 acknowledged")
    assert all(o == [EXPECTED[protocol][point]] * participants for o in outcomes), outcomes
    assert max(delays) < BOUND_S, delays
    wait_until(lambda: all(cluster.ready(n) for n in NODES), timeout=30, what="every node ready")
    wait_until(lambda: all_accounts_writable(cluster), timeout=10, what="every account writable (locks freed)")
    per_node = {n: balances(cluster, n) for n in NODES}
    assert sum(per_node["n0"]) == INITIAL * len(ACCOUNTS), per_node["n0"]
    assert all(b == per_node["n0"] for b in per_node.values()), per_node
    (code, report), (lin, lin_report), html = check_both(cluster, rec, f"coordinator-{protocol}-{point}")
    assert code == 0, report
    assert lin == 0, f"{lin_report} (see {html})"


@pytest.mark.parametrize("protocol,point", [("dnl4", "after-replicate"), ("dnl2", "after-replicate"),
                                            ("dnl2", "after-lock")])
def test_a_coordinator_that_dies_with_its_shards_primary_is_decided_by_the_successor(cluster, protocol, point):
    """n0, shard 0's primary, coordinates transfers and is killed in the middle of one; shard 0 elects n1.
    after-replicate: its own half stays hidden at n1 (and at n3), the other half locked at n2; n1 inherits the hidden
    write locked for the transaction (it used to show it, while n2 kept asking the dead n0 with its locks held); n1
    and n2 decide it alike, committed (the coordinator had decided commit and nobody released).
    after-lock: nothing of it was replicated; n1, which hears every write of its shard, answers so for n0 (its
    "unknown" used to count as no answer: n2 kept the locks and asked forever), and n2 aborts it.
    Either way every transaction n0 left is decided, its locks freed, and money is conserved."""
    cluster.up(nodes=4, shards=2, extra=["--txn-protocol", protocol,
                                         f"--rdxd-arg=--test-crash=n0:{point}:{CRASH_AFTER}"])
    redis.Redis(port=cluster.node("n2")["redis_port"], socket_timeout=10).mset({a: INITIAL for a in ACCOUNTS})
    deciders = ("n1", "n2") if point == "after-replicate" else ("n2",)
    with Transfers(cluster, ["n0"], per_node=4), Transfers(cluster, ["n2"], per_node=1):
        wait_until(lambda: crashes(cluster.log("n0")), timeout=60, what="n0's crash")
        txid = crashes(cluster.log("n0"))[0][1]
        wait_until(lambda: len(recoveries(cluster, txid, "n0", deciders)) >= len(deciders), timeout=15,
                   what=f"the recoveries of {txid} at {deciders}")
    expected = "committed" if point == "after-replicate" else "aborted"
    assert sorted(o for _, _, o in recoveries(cluster, txid, "n0", deciders)) == [expected] * len(deciders)
    survivors = ("n1", "n2", "n3")
    wait_until(lambda: all(cluster.ready(n) for n in survivors), timeout=30, what="n1, n2 and n3 ready")
    wait_until(lambda: all_accounts_writable(cluster, "n2"), timeout=10, what="every account writable (locks freed)")
    per_node = {n: balances(cluster, n) for n in survivors}
    assert sum(per_node["n2"]) == INITIAL * len(ACCOUNTS), per_node["n2"]
    assert all(b == per_node["n2"] for b in per_node.values()), per_node


def test_a_recovery_that_aborts_what_a_participant_committed_is_caught(cluster):
    """The planted bug (rdxd --test-fault recovery-always-aborts): the participant that recovers a transaction its
    peer committed (mid-unlock) aborts it, so one half of a transfer is lost, and the checks above see it."""
    cluster.up(nodes=4, shards=2, extra=["--txn-protocol", "dnl4", "--rdxd-arg=--test-fault=recovery-always-aborts",
                                         f"--rdxd-arg=--test-crash=n3:mid-unlock:{CRASH_AFTER}"])
    redis.Redis(port=cluster.node("n0")["redis_port"], socket_timeout=10).mset({a: INITIAL for a in ACCOUNTS})
    with Transfers(cluster, ["n3"], per_node=4), Transfers(cluster, ["n0", "n2"], per_node=1):
        wait_until(lambda: crashes(cluster.log("n3")), timeout=60, what="n3's crash")
        txid = crashes(cluster.log("n3"))[0][1]
        wait_until(lambda: recoveries(cluster, txid), timeout=10, what=f"the recovery of {txid}")
    assert [o for _, _, o in recoveries(cluster, txid)] == ["aborted"]
    total = sum(balances(cluster, "n0"))
    print(f"planted recovery-always-aborts: money after the crash {total}, {INITIAL * len(ACCOUNTS)} before")
    assert total != INITIAL * len(ACCOUNTS), "the lost half of the crashed transfer went unnoticed"
