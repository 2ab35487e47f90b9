"""Data nodes relay the addresses they learned (server/address_relay.h): two nodes that cannot resolve each other's
name (as two pods restarted within one DNS TTL, whose names still answer their old IPs) reach each other through a
third that both reached."""
import json

from conftest import wait_until


def test_nodes_that_cannot_resolve_each_other_connect_through_a_third(cluster):
    cluster.up(nodes=3)
    cluster.down()
    marks = cluster.log_marks("n0", "n1", "n2")
    topo = cluster.topology
    for n in topo["nodes"]:
        if n["name"] != "n0":  # n0 resolves; n1 and n2 are names nobody can resolve
            n["host"] = f"{n['name']}.stale-name.invalid"
    with open(cluster.topology_path, "w") as f:
        json.dump(topo, f)
    for name in ("n0", "n1", "n2"):
        cluster.start(name, wait=False)
    # n1 and n2 only know where the other is from n0's address book. (Readiness alone would not tell: a node that
    # excluded an unreachable member is ready without it.)
    wait_until(lambda: all(f"worker {w}: connected to n2" in cluster.logs_since(marks, "n1") and
                           f"worker {w}: connected to n1" in cluster.logs_since(marks, "n2") for w in (0, 1)),
               timeout=20, what="n1 and n2 connected to each other (every worker)")
    wait_until(lambda: all(cluster.ready(n) for n in ("n0", "n1", "n2")), timeout=20, what="every node ready")
