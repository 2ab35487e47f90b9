"""Multi-process integration: 3 rdxd processes (one shard, 3 replicas) on loopback with rdx-bench."""
import json
import os
import signal
import time

from conftest import wait_until


def test_three_replicas_serve_a_ten_second_load_with_zero_errors(cluster):
    cluster.up(nodes=3)
    p, r = cluster.bench("--duration", "10", "--warmup", "1", "--threads", "2", "--outstanding", "16",
                         "--keys", "20000", "--read-ratio", "0.5", "--load", "--verify-acked")
    print(p.stdout)
    assert r["errors"]["total"] == 0 and r["load_errors"] == 0
    assert r["ops"] > 1000
    assert r["verify"]["lost"] == 0 and r["verify"]["corrupt"] == 0
    assert r["read"]["p99_us"] > 0 and r["write"]["p999_us"] >= r["write"]["p50_us"]
    # Every backup applied the writes: each holds the same number of keys as the primary.
    keys = {n: cluster.metric(n, "rdx_store_keys") for n in ("n0", "n1", "n2")}
    assert keys["n0"] == 20000 and keys["n1"] == keys["n0"] and keys["n2"] == keys["n0"], keys
    # Replication used smart acks: ranges covering many ids each.
    ranges = cluster.metric("n1", "rdx_rpc_ack_ranges_total")
    covered = cluster.metric("n1", "rdx_rpc_acks_covered_total")
    assert ranges > 0 and covered > ranges, (ranges, covered)


def kill_during_load(cluster, node):
    """A 3-node cluster under 10 s of rdx-bench load (2 threads x 16 outstanding, 20% reads, every acknowledged write
    verified at the end); `node` is killed with SIGKILL 4 s in. Returns (exit code, rdx-bench's JSON, its output)."""
    cluster.up(nodes=3)
    proc, out = cluster.bench_async("--duration", "10", "--warmup", "0", "--threads", "2", "--outstanding", "16",
                                    "--keys", "20000", "--read-ratio", "0.2", "--verify-acked")
    time.sleep(4)
    cluster.kill(node, "KILL")
    stdout, _ = proc.communicate(timeout=120)
    print(stdout)
    return proc.returncode, json.load(open(out)), stdout


def test_kill_backup_during_load_loses_no_acknowledged_write(cluster):
    code, r, stdout = kill_during_load(cluster, "n2")  # a backup dies mid-load
    assert code == 0, stdout
    assert r["errors"]["total"] == 0
    per_sec = r["ops_per_second"]
    assert len(per_sec) >= 9 and all(x > 0 for x in per_sec[5:]), f"load must continue after the kill: {per_sec}"
    assert r["verify"]["lost"] == 0 and r["verify"]["checked"] == r["verify"]["acknowledged_keys"] > 1000
    assert cluster.metric("n0", "rdx_replica_excluded", replica="n2") == 1
    assert cluster.metric("n0", "rdx_replica_excluded", replica="n1") == 0
    # The surviving backup still has every key the primary has.
    assert cluster.metric("n1", "rdx_store_keys") == cluster.metric("n0", "rdx_store_keys")


def test_kill_primary_during_load_loses_no_acknowledged_write(cluster):
    """The native client (rdx-bench) through a failover: the primary dies mid-load; the client sends the shard's
    keys to a member it is still connected to (which forwards them to the new primary), and the load goes on."""
    _, r, _ = kill_during_load(cluster, "n0")  # the primary dies mid-load
    per_sec = r["ops_per_second"]
    print(f"ops per second: {per_sec}; errors: {r['errors']}")
    assert len(per_sec) >= 9 and all(x > 0 for x in per_sec[6:]), f"load must go on after the failover: {per_sec}"
    # Operations fail only while the shard has no primary (the client retries at once, so they are many): refused
    # as unavailable, or of unknown outcome (in flight at the kill).
    assert set(r["errors"]) <= {"UNAVAILABLE", "TIMEOUT", "total"}, r["errors"]
    assert r["verify"]["lost"] == 0 and r["verify"]["checked"] == r["verify"]["acknowledged_keys"] > 1000
    assert cluster.metric("n1", "rdx_promotions_total") + cluster.metric("n2", "rdx_promotions_total") == 1


def test_health_metrics_and_clean_sigterm(cluster):
    cluster.up(nodes=3)
    assert cluster.http("n0", "/healthz")[0] == 200
    code, body = cluster.http("n1", "/readyz")
    assert code == 200, body
    _, text = cluster.http("n0", "/metrics")
    for m in ("rdx_ready", "rdx_transport_packets_sent_total", "rdx_rpc_messages_sent_total", "rdx_store_keys",
              "rdx_op_latency_seconds_bucket", "rdx_transport_onesided_emulated_total"):
        assert f"\n{m}" in "\n" + text, m
    pid = cluster.pid("n1")
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split(")")[1].split()[0] == "Z",
               timeout=15, what="rdxd to exit on SIGTERM")
    assert "rdxd: stopped" in cluster.log("n1")
