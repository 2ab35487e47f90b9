"""A restarted node copies its shard from a live replica before it serves: nothing acknowledged is lost."""
import os
import time

from conftest import wait_until


def acked_file(cluster, name):
    return os.path.join(cluster.dir, name)


def test_restarted_primary_recovers_its_data_from_a_backup(cluster):
    cluster.up(nodes=3)
    saved = acked_file(cluster, "load.acked")
    p, r = cluster.bench("--load", "--keys", "5000", "--duration", "1", "--warmup", "0", "--read-ratio", "0.5",
                         "--save-acked", saved)
    assert r["load_errors"] == 0 and r["errors"]["total"] == 0
    cluster.kill("n0")
    wait_until(lambda: cluster.http("n1", "/readyz")[0] == 503, what="the shard to become unavailable")
    cluster.start("n0")  # waits for /readyz: in sync again
    assert "copied" in cluster.log("n0") and "copying shard 0 from" in cluster.log("n0")
    assert cluster.metric("n0", "rdx_store_keys") == 5000
    p, r = cluster.bench("--verify-from", saved)
    print(p.stdout)
    assert r["verify"]["lost"] == 0 and r["verify"]["checked"] == r["verify"]["acknowledged_keys"] > 4000


def test_backup_rejoins_under_load_and_then_holds_every_write(cluster):
    cluster.up(nodes=3)
    cluster.kill("n2")
    run_saved = acked_file(cluster, "run.acked")
    proc, out = cluster.bench_async("--keys", "8000", "--duration", "8", "--warmup", "0", "--read-ratio", "0.3",
                                    "--save-acked", run_saved)
    time.sleep(2)
    cluster.start("n2")  # joins while writes keep coming
    stdout, _ = proc.communicate(timeout=120)
    print(stdout)
    assert proc.returncode == 0, stdout
    assert "copied" in cluster.log("n2")
    wait_until(lambda: cluster.metric("n0", "rdx_replica_excluded", replica="n2") == 0, what="n2 included again")
    # Leave n2 as the only copy: the restarted primary must find every acknowledged write there.
    cluster.kill("n0")
    cluster.kill("n1")
    cluster.start("n0")
    assert "from n2" in cluster.log("n0")
    p, r = cluster.bench("--verify-from", run_saved)
    print(p.stdout)
    assert r["verify"]["lost"] == 0 and r["verify"]["corrupt"] == 0
    assert r["verify"]["checked"] == r["verify"]["acknowledged_keys"] > 1000
