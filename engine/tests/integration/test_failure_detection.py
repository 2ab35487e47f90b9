"""Failure detection and leases (engine/src/cluster/failure_detector.h, leases.h) with real redis-py clients.

A backup paused (SIGSTOP) past the failure timeout is suspected and excluded by the others, who keep committing
writes without it; when it resumes it must serve no read from its copy until it is back in sync. Clients bound to
every node do GET and INCR on a few hot keys; the history goes through the project's checker (a counter's value is
its version, so every operation is a one-key transaction with exact versions: linearizability per key) and through
Porcupine (rdx-lincheck, values per key). The same run with the lease check planted away (rdxd --test-fault
reads-without-lease) must be caught by both.
"""
import json
import os
import random
import subprocess
import time

from conftest import BIN, wait_until
from kvhistory import KvRecorder, lincheck, write_versions_history

KEYS = [f"ctr:{i}" for i in range(6)]
TIMEOUT_MS = 300  # failure timeout of these clusters: a pause of 1 s outlasts suspicion plus the lease wait


def check(path):
    p = subprocess.run([os.path.join(BIN, "rdx-check"), path, "--json"], capture_output=True, text=True, timeout=120)
    return p.returncode, json.loads(p.stdout)


def check_both(cluster, rec, name):
    """The history through both checkers: rdx-check (versions) and rdx-lincheck (Porcupine, values per key; a
    failure's visualization goes to <name>.html next to the cluster's logs). Returns ((code, report), (code,
    report), html path)."""
    versions, kv = os.path.join(cluster.dir, f"{name}.history"), os.path.join(cluster.dir, f"{name}.kv.jsonl")
    html = os.path.join(cluster.dir, f"{name}.html")
    write_versions_history(rec, versions)
    rec.write(kv)
    return check(versions), lincheck(kv, html), html


def pause_repeatedly(cluster, pauses, paused="n2", gap_s=0.5, timeouts=(0.7, 3.5), keys=KEYS):
    """Pauses `paused` ("primary": whichever node is the primary at the time) `pauses` times while clients on every
    node run; returns (recorder, INCRs the other nodes completed during pauses). Pauses last `timeouts` failure
    timeouts, spread evenly over the range (one in each of `pauses` equal slices, in a shuffled order): by default
    some end before the node is suspected, some while the others wait for its leases to end, most after it was
    excluded (a primary: deposed, and a backup elected). (Evenly, not drawn at random: 10 pauses cover each of those
    cases every run; 20 random ones from the fixed seed had a single pause, 0.99 timeouts, below the timeout.)"""
    windows, others = [], 0
    rng = random.Random(pauses)
    lo, hi = timeouts
    lengths = [lo + (i + 0.5) * (hi - lo) / pauses for i in range(pauses)]
    rng.shuffle(lengths)
    with KvRecorder(cluster, ["n0", "n1", "n2"], keys, ops=("get", "incr")) as rec:
        time.sleep(0.5)
        for length in lengths:
            node = cluster.primary() if paused == "primary" else paused
            cluster.kill(node, signal="STOP")
            t0 = time.time_ns()
            time.sleep(length * TIMEOUT_MS / 1000)
            windows.append((t0, time.time_ns()))
            cluster.kill(node, signal="CONT")
            others += rec.completed({"incr"}, during=windows[-1:], nodes={"n0", "n1", "n2"} - {node})
            time.sleep(gap_s)
    return rec, others


def test_paused_backup_serves_no_stale_read_and_writes_go_on(cluster):
    cluster.up(nodes=3, extra=["--failure-timeout-ms", str(TIMEOUT_MS)])
    rec, incrs_while_paused = pause_repeatedly(cluster, pauses=10)
    assert not rec.errors, rec.errors[:5]
    (code, report), (lcode, lreport), html = check_both(cluster, rec, "pause")
    suspicions = cluster.metric("n0", "rdx_failure_suspicions_total", peer="n2")
    print(f"{len(rec.records)} operations, {incrs_while_paused} INCRs completed by n0/n1 while n2 was paused; "
          f"n2 suspected {suspicions} times; checker: {json.dumps(report)[:1500]}; lincheck: {json.dumps(lreport)}")
    assert code == 0 and report["ok"], f"rdx-check: {json.dumps(report)[:3000]}"
    assert lcode == 0 and lreport["ok"], f"rdx-lincheck: {lreport} (see {html})"
    # The faults really happened: n2 was suspected and excluded each time, and writes did not wait for it.
    assert suspicions >= 8  # of the 9 pauses longer than the timeout
    assert "excluded until it rejoins" in cluster.log("n0")
    assert incrs_while_paused > 100, "writes must go on while a backup is paused"
    reads_at_n2 = rec.completed({"get"}, nodes={"n2"})
    assert reads_at_n2 > 100
    # n2 reads its own copy again once it is back (a lease check that always failed would pass the rest).
    wait_until(lambda: cluster.metric("n2", "rdx_read_lease_held") == 1, timeout=10, what="n2 holding its leases")


def test_paused_primary_is_deposed_and_nothing_reads_stale(cluster):
    """The primary paused past its lease, again and again: the others elect a backup and go on; the paused one,
    when it resumes, commits nothing on its own (it lost the leases a primary needs) and serves nothing stale (it
    learns the new view and copies the shard). Writes that were in flight at a pause may fail with an outcome the
    client cannot know; the checkers account for that."""
    cluster.up(nodes=3, extra=["--failure-timeout-ms", str(TIMEOUT_MS)])
    # More keys than the other runs: the INCRs a paused primary held end with unknown outcomes, and Porcupine's
    # search grows fast with the unknown outcomes pending on one key.
    rec, incrs_while_paused = pause_repeatedly(cluster, pauses=10, paused="primary",
                                               keys=[f"ctr:{i}" for i in range(24)])
    (code, report), (lcode, lreport), html = check_both(cluster, rec, "pause-primary")
    views = [cluster.metric(n, "rdx_shard_view") for n in ("n0", "n1", "n2")]
    print(f"{len(rec.records)} operations, {len(rec.errors)} failed, {incrs_while_paused} INCRs completed by the "
          f"others while the primary was paused; views {views}; checker: {json.dumps(report)[:800]}; "
          f"lincheck: {json.dumps(lreport)}")
    assert code == 0 and report["ok"], f"rdx-check: {json.dumps(report)[:3000]}"
    assert lcode == 0 and lreport["ok"], f"rdx-lincheck: {lreport} (see {html})"
    assert min(views) >= 5, "most pauses outlast the lease: a backup must have been elected after most of them"
    assert incrs_while_paused > 100, "writes must go on while the primary is paused"
    assert len(rec.records) > 5000


def test_readyz_and_metrics_say_when_a_shard_has_no_primary(cluster):
    """The primary and a backup paused: the remaining backup is no majority, so it elects nobody (its pre-votes find
    no one) and says why it has no primary; when they resume, the primary is still the primary."""
    cluster.up(nodes=3, extra=["--failure-timeout-ms", str(TIMEOUT_MS)])
    cluster.kill("n0", signal="STOP")
    cluster.kill("n2", signal="STOP")
    try:
        wait_until(lambda: "shard 0 has no primary: n0 does not answer heartbeats" in cluster.readyz("n1")[1],
                   timeout=10, what="n1's /readyz to name the silent primary")
        wait_until(lambda: cluster.metric("n1", "rdx_peer_suspected", peer="n0") == 1
                   and cluster.metric("n1", "rdx_read_lease_held") == 0, timeout=10, what="n1 to suspect n0")
        # (its pre-vote asks n2 too, which answers only when the call times out)
        wait_until(lambda: "would replace n0" in cluster.log("n1"), timeout=15, what="n1's pre-vote to find no majority")
        assert cluster.metric("n1", "rdx_primary") == 0 and cluster.metric("n1", "rdx_shard_view") == 0
    finally:
        cluster.kill("n0", signal="CONT")
        cluster.kill("n2", signal="CONT")
    wait_until(lambda: cluster.metric("n1", "rdx_peer_suspected", peer="n0") == 0
               and cluster.metric("n1", "rdx_read_lease_held") == 1, timeout=10, what="n0 answering again")
    wait_until(lambda: "suspected" not in cluster.readyz("n1")[1], timeout=10, what="n1's /readyz to clear")
    assert cluster.metric("n0", "rdx_primary") == 1 and cluster.metric("n0", "rdx_shard_view") == 0


def test_the_check_catches_reads_without_leases(cluster):
    """The planted bug: backups read their copy without holding leases (what main did before leases existed)."""
    cluster.up(nodes=3, extra=["--failure-timeout-ms", str(TIMEOUT_MS),
                               "--rdxd-arg=--test-fault=reads-without-lease"])
    rec, _ = pause_repeatedly(cluster, pauses=6, timeouts=(3.3, 3.4))
    (code, report), (lcode, lreport), html = check_both(cluster, rec, "planted")
    print(f"planted: {len(rec.records)} operations; checker exit {code}: {json.dumps(report)[:1500]}; "
          f"lincheck exit {lcode}: {json.dumps(lreport)}")
    assert code != 0 and not report["ok"] and report["total"] > 0, "stale reads at the resumed backup must be caught"
    assert lcode == 1 and lreport["illegal"], "Porcupine must find the stale reads too"
    with open(html, errors="replace") as f:
        page = f.read()
    shown = lreport["visualization"]
    assert shown["path"] == html and shown["key"] in page and shown["operations"] > 0, (
        "the visualization of the failure must be written")
    print(f"visualization of the failure: {html} ({len(page)} bytes, {shown['operations']} operations on "
          f"{shown['key']}: the shortest failing prefix)")


def transfers_while_pausing(cluster, pauses, paused="n2"):
    """SmallBank (transfers, payments, balances: what MULTI/EXEC runs) coordinated on every node, the history through
    the strict-serializability checker, while `paused` is paused and resumed."""
    out = os.path.join(cluster.dir, f"txn-{time.time_ns()}.json")
    hist = os.path.join(cluster.dir, f"txn-{time.time_ns()}.history")
    duration = 1 + pauses * 1.6
    proc = subprocess.Popen([os.path.join(BIN, "rdx-bench"), "--config", cluster.topology_path,
                             "--workload", "smallbank:accounts=300,hot_percent=10", "--load", "--duration",
                             str(duration), "--coroutines", "4", "--history", hist, "--json", out],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(2)  # the load, then the run's start
    for _ in range(pauses):
        cluster.kill(paused, signal="STOP")
        time.sleep(1.0)
        cluster.kill(paused, signal="CONT")
        time.sleep(0.6)
    stdout, _ = proc.communicate(timeout=300)
    print(stdout[-3000:])
    return proc.returncode, (json.load(open(out)) if os.path.exists(out) else None), stdout


def test_transactions_stay_strictly_serializable_while_a_backup_is_paused(cluster):
    cluster.up(nodes=3, extra=["--failure-timeout-ms", str(TIMEOUT_MS)])
    code, r, stdout = transfers_while_pausing(cluster, pauses=6)
    assert code == 0, stdout[-3000:]
    assert r["checker"]["ok"] and r["checker"]["violations"] == 0, r["checker"]
    assert r["invariant"]["ok"], r["invariant"]
    assert r["data_errors"] == 0
    assert r["checker"]["committed"] > 2000
    assert cluster.metric("n0", "rdx_failure_suspicions_total", peer="n2") >= 4
