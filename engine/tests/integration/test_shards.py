"""Every replication protocol serves the keys of every shard through every node: a node outside a key's shard sends
the operation to a member of that shard (the protocol's forwarded reads and writes), with real redis-py clients on a
cluster of two shards of two members each."""
import pytest
import redis

from conftest import registered_entries

PROTOCOLS = {e["name"]: e for e in registered_entries("replication")}
NODES = ["n0", "n1", "n2", "n3"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_node_serves_every_shards_keys(cluster, protocol):
    txn = [] if PROTOCOLS[protocol]["carries_transactions"] else ["--txn-protocol", "none"]
    cluster.up(nodes=4, shards=2, workers=1, extra=["--replication", protocol, *txn])
    clients = {n: redis.Redis(port=cluster.node(n)["redis_port"], socket_timeout=10, decode_responses=True)
               for n in NODES}
    keys = [f"s:{i}" for i in range(120)]
    for i, k in enumerate(keys):  # written through every node in turn
        assert clients[NODES[i % 4]].set(k, f"v{i}")
    for n, c in clients.items():
        assert [c.get(k) for k in keys] == [f"v{i}" for i in range(len(keys))], n
    if PROTOCOLS[protocol]["ops"] == "read-modify-write":
        for k in keys[:20]:
            for c in clients.values():
                c.incr(f"{k}:count")
        for c in clients.values():
            assert [c.get(f"{k}:count") for k in keys[:20]] == ["4"] * 20
    for i, k in enumerate(keys[:40]):
        assert clients[NODES[(i + 1) % 4]].delete(k) == 1
    for c in clients.values():
        assert [c.exists(k) for k in keys[:40]] == [0] * 40 and c.get(keys[40]) == "v40"
