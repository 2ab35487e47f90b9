"""Every replication and transaction protocol's own messages (and the transaction family's shared ones), malformed, from a peer that says it is a member of the shard: each
message type of the protocol's range (rdxd --list --json) gets truncated, garbage and out-of-range payloads at both
workers of a node. The node must stay up and in service and change nothing: every key reads back as written, through
every node, and writes still apply. Most payloads are refused (kInvalidArgument) or dropped; a few happen to be
well-formed requests that only read (an empty status request, a forwarded read of a key), and those are answered.
No payload is a well-formed write: keys come with no tag or an impossible one (0, or above every version)."""
import random
import struct
import time

import pytest
import redis

from conftest import registered_entries, wait_until
from wire import send_requests

PROTOCOLS = {e["name"]: e for e in registered_entries("replication")}
TXN = {e["name"]: e for e in registered_entries("txn")}
TXN_FAMILY = (48, 63)  # cluster::msgs::kTxnFamily: the reads every transaction protocol shares
NODES = ["n0", "n1", "n2"]
INVALID_ARGUMENT = 1
BAD_TAGS = (0, 0xFFFFFFFFFFFFFFFF)  # no protocol's tag or version: 0 is "never written", the other out of range
# Payloads no message of any protocol decodes (3 bytes; a key followed by 3 stray bytes): a request gets no kOk.
NEVER_OK = (b"\xff" * 3, struct.pack("<I", 3) + b"m:1\x01\x02\x03")


def key_bytes(key):
    return struct.pack("<I", len(key)) + key


def malformed_payloads(rng):
    """Truncated, garbage and out-of-range payloads (see the module docstring)."""
    k = key_bytes(b"m:1")
    out = [*NEVER_OK, b"", b"\x00", struct.pack("<I", 0xFFFFFFFF), k, rng.randbytes(16), rng.randbytes(300)]
    for tag in BAD_TAGS:
        t = struct.pack("<Q", tag)
        out += [k + t, k + t + key_bytes(b"x"), k + t + b"\x00" + key_bytes(b"x"), k + t + b"\x07" + key_bytes(b"x")]
    return out


def up(cluster, protocol):
    txn = [] if PROTOCOLS[protocol]["carries_transactions"] else ["--txn-protocol", "none"]
    return cluster.up(nodes=3, extra=["--replication", protocol, *txn])


def client(cluster, node):
    return redis.Redis(port=cluster.node(node)["redis_port"], socket_timeout=5, decode_responses=True)


def send_malformed(cluster, label, first, last):
    """Every malformed payload as every type in [first, last], to both workers of n0, from member n1."""
    payloads = malformed_payloads(random.Random(7))
    messages = [(t, p) for t in range(first, last + 1) for p in payloads]
    target = cluster.node("n0")
    member = next(i for i, n in enumerate(cluster.topology["nodes"]) if n["name"] == "n1")
    answers = {}
    for worker in (0, 1):
        statuses = send_requests(target["port"], messages, src_node=member, dst_worker=worker)
        for i, s in statuses.items():
            answers[s] = answers.get(s, 0) + 1
            assert not (s == 0 and messages[i][1] in NEVER_OK), f"{label}: type {messages[i][0]} took {messages[i][1]}"
    print(f"{label}: {2 * len(messages)} malformed messages (types {first}..{last}); answers by status code: "
          f"{dict(sorted(answers.items()))}, the rest dropped")
    assert answers.get(INVALID_ARGUMENT, 0) > 0


def expect_unchanged(cluster, label, keys, writer):
    """Up, in service, nothing changed, through every node; writes still apply."""
    for n in NODES:
        wait_until(lambda n=n: cluster.ready(n), timeout=20, what=f"{n} ready again")
    for n in NODES:
        c = client(cluster, n)
        deadline = time.time() + 20
        while True:
            try:
                got = [c.get(k) for k in keys]
                break
            except redis.RedisError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        assert got == list(keys.values()), f"{label}: {n} reads {got}"
    assert writer.set("m:after", "ok") and client(cluster, "n2").get("m:after") == "ok"


def write_keys(cluster):
    keys = {f"m:{i}": f"v-{i}" for i in range(40)}
    writer = client(cluster, "n0")
    for k, v in keys.items():
        assert writer.set(k, v)
    return keys, writer


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_malformed_protocol_messages_are_refused_and_change_nothing(cluster, protocol):
    up(cluster, protocol)
    keys, writer = write_keys(cluster)
    send_malformed(cluster, protocol, *PROTOCOLS[protocol]["messages"])
    expect_unchanged(cluster, protocol, keys, writer)


@pytest.mark.parametrize("protocol", [*TXN, "family"])
def test_malformed_transaction_messages_are_refused_and_change_nothing(cluster, protocol):
    """A transaction protocol's messages (locks, validations, applies, unlocks, recovery queries, 2PL's lock-reads),
    or the family's (reads at the primary, OCC's one-sided locate), malformed: nothing locked for good, nothing
    applied. Afterwards transactions still commit at every node, which a lock left behind would stop."""
    name = "occ" if protocol == "family" else protocol
    prims = "onesided" if "onesided" in TXN[name]["primitives"] else "rpc"
    cluster.up(nodes=3, extra=["--txn-protocol", name, "--primitives", prims])
    keys, writer = write_keys(cluster)
    first, last = TXN_FAMILY if protocol == "family" else TXN[protocol]["messages"]
    send_malformed(cluster, protocol, first, last)
    expect_unchanged(cluster, protocol, keys, writer)
    for n in NODES:
        p = client(cluster, n).pipeline(transaction=True)
        p.get("m:1").set("m:1", f"after-{n}").get("m:2")
        assert p.execute() == ["v-1" if n == "n0" else f"after-{NODES[NODES.index(n) - 1]}", True, "v-2"], n


@pytest.mark.parametrize("protocol", ["dnl4", "nowait"])
def test_lock_requests_for_another_shards_keys_are_refused(cluster, protocol):
    """Well-formed lock and validation batches (and 2PL's lock-reads) naming keys of another shard, sent to a primary:
    refused (kInvalidArgument) and nothing locked, since the node does not own those records. Afterwards
    transactions on every key still commit, which a lock left behind would stop."""
    cluster.up(nodes=2, shards=2, extra=["--txn-protocol", protocol])
    keys, _ = write_keys(cluster)
    first, _ = TXN[protocol]["messages"]
    member = next(i for i, n in enumerate(cluster.topology["nodes"]) if n["name"] == "n1")
    port = cluster.node("n0")["port"]

    def batch(txid, names):  # txid, watermark, ts 0, participants [n0], items (key, flags 0: a read lock / an abort)
        items = b"".join(key_bytes(k.encode()) + struct.pack("<BQ", 0, 0) + key_bytes(b"") for k in names)
        return struct.pack("<QQqHHI", txid, 0, 0, 1, 0, len(names)) + items

    # 40 keys over 2 shards: some are n1's, and a batch naming any of them is refused whole.
    statuses = send_requests(port, [(first + 0, batch(77, keys)), (first + 1, batch(77, keys))], src_node=member)
    assert statuses == {0: INVALID_ARGUMENT, 1: INVALID_ARGUMENT}, statuses
    if protocol == "nowait":
        # 2PL's lock-read of each key (txid, priority, key): n1's keys are refused, n0's own are locked and read.
        names = list(keys)
        statuses = send_requests(port, [(first + 5, struct.pack("<QQ", 78, 1) + key_bytes(k.encode())) for k in names],
                                 src_node=member)
        taken = [names[i] for i, st in statuses.items() if st == 0]
        assert len(taken) + sum(1 for st in statuses.values() if st == INVALID_ARGUMENT) == len(names), statuses
        assert 0 < len(taken) < len(names), statuses
        send_requests(port, [(first + 3, batch(78, taken))], src_node=member)  # kUnlock (abort) releases them
    for k in keys:
        p = client(cluster, "n0").pipeline(transaction=True)
        p.get(k).set(k, "after")
        assert p.execute() == [keys[k], True], k
