"""rdx-bench's interface to orchestrators (the Kubernetes Benchmark controller runs it in Job pods): the --summary
verdict written at exit on success and failure, --progress-interval lines while it works, --no-run (load only) and
--ledger-base (the SmallBank invariant across invocations), in both modes; bad combinations are refused with exit 2.
The formats are in engine/docs/rdx-bench.md."""
import json
import os
import struct
import subprocess
import threading
import time

from conftest import BIN, run
from wire import free_ports, rpc_call

BENCH = os.path.join(BIN, "rdx-bench")
PROGRESS = "rdx-bench progress "
SUMMARY_KEYS = ["rdx_bench_summary", "ok", "exit_code", "mode", "workload", "stage", "duration_s", "throughput",
                "unit", "latency_us", "committed", "aborted", "abort_rate", "errors", "emulated_onesided_ops", "ledger",
                "ledger_unknown"]


def bench(cluster_or_topology, *args, check=True, timeout=60):
    """Runs rdx-bench with --summary; returns (process, summary dict or None)."""
    topo = getattr(cluster_or_topology, "topology_path", cluster_or_topology)
    d = os.path.dirname(topo)
    summary = os.path.join(d, f"summary-{time.time_ns()}.json")
    p = run([BENCH, "--config", topo, "--summary", summary, *args], timeout=timeout, check=check)
    print(p.stdout[-3000:], p.stderr[-2000:])
    s = None
    if os.path.exists(summary):
        text = open(summary).read()
        assert text.endswith("\n") and text.count("\n") == 1, "one line"
        assert len(text.encode()) < 3500, len(text)
        s = json.loads(text)
        for k in SUMMARY_KEYS:
            assert k in s, (k, s)
        assert s["rdx_bench_summary"] == 1
        assert s["ok"] == (s["exit_code"] == 0) == (p.returncode == 0), (s, p.returncode)
        assert s["exit_code"] == p.returncode
        assert ("error" in s) == (not s["ok"]), s
    return p, s


def progress_lines(stdout):
    out = []
    for line in stdout.splitlines():
        assert PROGRESS not in line or line.startswith(PROGRESS), f"a progress line shares its line: {line!r}"
        if line.startswith(PROGRESS):
            out.append(json.loads(line[len(PROGRESS):]))
    for p in out:
        assert list(p) == ["stage", "elapsed_s", "total_s", "ops", "ops_per_s"], p
        assert p["stage"] in ("loading", "running", "checking"), p
    return out


def check_running_progress(lines, total_s):
    running = [p for p in lines if p["stage"] == "running"]
    assert len(running) >= 3, lines
    elapsed = [p["elapsed_s"] for p in running]
    assert elapsed == sorted(elapsed) and len(set(elapsed)) == len(elapsed), elapsed
    assert all(p["total_s"] == total_s for p in running), running
    assert max(p["ops"] for p in running) > 0 and max(p["ops_per_s"] for p in running) > 0, running
    ops = [p["ops"] for p in running]
    assert ops == sorted(ops), ops


def test_kv_summary_progress_and_load_only(cluster):
    cluster.up(nodes=3)
    p, s = bench(cluster, "--load", "--keys", "500", "--duration", "1.2", "--warmup", "0", "--threads", "2",
                 "--verify-acked", "--progress-interval", "0.2")
    assert s["mode"] == "kv" and s["workload"] == "kv" and s["stage"] == "run" and s["unit"] == "ops/s", s
    assert 1.0 <= s["duration_s"] <= 1.5, s
    assert s["throughput"] > 0 and s["committed"] > 0 and s["errors"] == 0, s
    assert s["aborted"] == 0 and s["abort_rate"] == 0 and s["ledger"] == 0, s
    assert s["emulated_onesided_ops"] == 0, "the kv path uses messages only"
    assert 0 < s["latency_us"]["p50"] <= s["latency_us"]["p99"] <= s["latency_us"]["p999"], s
    assert s["load"]["records"] == 500 and s["load"]["seconds"] > 0, s
    assert s["checker"] == {"model": "acknowledged-writes", "ok": True, "checked": 500, "violations": 0,
                            "anomaly": ""}, s
    assert "invariant" not in s
    check_running_progress(progress_lines(p.stdout), 1.2)

    # Load only: stage load, no run, the load read back.
    p, s = bench(cluster, "--load", "--no-run", "--keys", "300", "--verify-acked")
    assert s["ok"] and s["stage"] == "load" and s["duration_s"] == 0 and s["committed"] == 0, s
    assert s["load"]["records"] == 300 and s["checker"]["checked"] == 300 and s["checker"]["ok"], s


def test_txn_load_then_runs_chained_by_ledger_base(cluster):
    cluster.up(nodes=3)
    wl = "smallbank:accounts=200,hot_percent=10"
    # A separate load invocation: the invariant holds on the fresh data.
    p, s = bench(cluster, "--workload", wl, "--load", "--no-run")
    assert s["ok"] and s["mode"] == "txn" and s["stage"] == "load" and s["unit"] == "tx/s", s
    assert s["load"]["records"] == 400 and s["committed"] == 0 and s["duration_s"] == 0 and s["ledger"] == 0, s
    assert s["invariant"]["checked"] and s["invariant"]["ok"], s
    assert "checker" not in s

    hist = os.path.join(cluster.dir, "h1.jsonl")
    p, s1 = bench(cluster, "--workload", wl, "--duration", "1.2", "--coroutines", "4", "--history", hist,
                  "--ledger-base", "0", "--progress-interval", "0.2")
    assert s1["ok"] and s1["stage"] == "run" and "load" not in s1, s1
    assert s1["duration_s"] == 1.2 and s1["committed"] > 0 and s1["throughput"] > 0 and s1["errors"] == 0, s1
    assert s1["aborted"] > 0 and 0 < s1["abort_rate"] < 1, "a hot spot conflicts"
    assert s1["emulated_onesided_ops"] >= 0
    assert s1["ledger_unknown"] == [0, 0], "a healthy cluster learns every outcome"
    assert s1["checker"]["model"] == "strict-serializability" and s1["checker"]["ok"], s1
    assert s1["checker"]["checked"] >= s1["committed"] and s1["checker"]["violations"] == 0, s1
    assert s1["invariant"]["checked"] and s1["invariant"]["ok"], s1
    assert f"committed delta {s1['ledger']} " in s1["invariant"]["summary"], s1
    lines = progress_lines(p.stdout)
    check_running_progress(lines, 1.2)
    assert max(x["ops"] for x in lines if x["stage"] == "running") <= s1["committed"], "live counts stay below the end's"

    # The second run starts where the first left the balances.
    hist = os.path.join(cluster.dir, "h2.jsonl")
    p, s2 = bench(cluster, "--workload", wl, "--duration", "1", "--coroutines", "4", "--history", hist,
                  "--ledger-base", str(s1["ledger"]))
    assert s2["ok"] and s2["checker"]["ok"] and s2["invariant"]["checked"] and s2["invariant"]["ok"], s2
    assert f"committed delta {s1['ledger'] + s2['ledger']} " in s2["invariant"]["summary"], s2

    # Without the base, the check cannot know what earlier runs did; a wrong base is a violation.
    p, s = bench(cluster, "--workload", wl, "--duration", "0.5", "--coroutines", "2")
    assert s["ok"] and not s["invariant"]["checked"] and "not checked" in s["invariant"]["summary"], s
    p, s = bench(cluster, "--workload", wl, "--duration", "0.5", "--coroutines", "2", "--ledger-base", "1",
                 check=False)
    assert p.returncode == 5 and not s["invariant"]["ok"] and s["invariant"]["checked"], s
    assert s["error"].startswith("invariant violated"), s


def test_planted_anomaly_fails_the_summary(cluster):
    cluster.up(nodes=3)
    hist = os.path.join(cluster.dir, "h.jsonl")
    p, s = bench(cluster, "--workload", "smallbank:accounts=100,hot_percent=10", "--load", "--duration", "1.5",
                 "--coroutines", "8", "--history", hist, "--validation-off", check=False)
    assert p.returncode in (4, 5), p.stdout[-2000:]
    assert not s["ok"] and s["exit_code"] == p.returncode, s
    c = s["checker"]
    assert c["model"] == "strict-serializability" and not c["ok"] and c["violations"] > 0, s
    assert c["anomaly"] and len(c["anomaly"]) <= 400, s
    assert s["error"].startswith("checker: the history is not strictly serializable"), s
    assert s["load"]["records"] == 200 and s["stage"] == "run", s


def test_unreachable_cluster_still_writes_a_summary(tmp_path):
    port, http = free_ports(2)
    topo = tmp_path / "topology.json"
    topo.write_text(json.dumps({
        "cluster": "t", "epoch": 1, "transport": {"kind": "tcp"}, "shards": [{"id": 0, "members": ["n0"]}],
        "nodes": [{"name": "n0", "host": "127.0.0.1", "port": port, "http_port": http}]}))
    for mode in (["--workload", "smallbank:accounts=10"], []):
        t0 = time.time()
        p, s = bench(str(topo), *mode, "--duration", "1", "--connect-timeout", "0.5", "--progress-interval", "0.2",
                     check=False)
        assert time.time() - t0 < 10
        assert p.returncode == 1 and not s["ok"] and s["exit_code"] == 1, s
        assert "cannot reach the cluster" in s["error"] and "n0" in s["error"], s
        assert s["mode"] == ("txn" if mode else "kv") and s["stage"] == "run" and s["committed"] == 0, s
    # A topology that cannot be read: exit 2, the reason in the summary.
    p, s = bench(str(tmp_path / "missing.json"), check=False)
    assert p.returncode == 2 and "cannot read topology file" in s["error"], s


def test_kv_run_gives_up_once_no_operation_completes(cluster):
    """A target that goes away mid-run (the Benchmark controller's "lost" case): the run stops --give-up-after seconds
    after the last completed operation, not when --duration ends, and says why."""
    cluster.up(nodes=3)
    killer = threading.Timer(2.0, lambda: [cluster.kill(n) for n in ("n0", "n1", "n2")])
    killer.start()
    t0 = time.time()
    try:
        p, s = bench(cluster, "--load", "--keys", "200", "--duration", "120", "--warmup", "0", "--threads", "1",
                     "--outstanding", "2", "--give-up-after", "2", "--verify-acked", check=False, timeout=60)
    finally:
        killer.join()
    took = time.time() - t0
    assert took < 30, f"ran {took:.1f} s: it should stop about 2 s after the cluster went away"
    assert p.returncode == 1 and not s["ok"], s
    assert "no operation completed for 2 s (--give-up-after)" in s["error"], s
    assert "operations failed" in s["error"], s
    assert s["committed"] > 0 and 1.0 < s["duration_s"] < 30, s
    # Nothing answers, so the acknowledged writes are not read back (key by key, each would time out): no verdict.
    assert "verify: not run: the run gave up" in p.stdout and "checker" not in s, s
    # Each of the 2 sessions backs off (1 ms doubling to 64 ms) while the cluster cannot serve: about 200 failed
    # attempts from the kills to the give-up (measured: 205-225), not one per refusal (without the backoff: 1.1 million).
    assert 0 < s["errors"] < 1000, s


def test_bad_combinations_exit_2_and_run_nothing(tmp_path):
    topo = str(tmp_path / "never-read.json")  # refused before the topology is read
    cases = [
        (["--no-run"], "--no-run loads only: it needs --load"),
        (["--workload", "smallbank", "--no-run"], "--no-run loads only: it needs --load"),
        (["--ledger-base", "5"], "--ledger-base is for transactional workloads"),
        (["--workload", "smallbank", "--load", "--ledger-base", "5"], "with --load the balances start afresh"),
        (["--progress-interval", "0.1"], "--progress-interval must be 0 (off) or 0.2..60 seconds"),
        (["--workload", "smallbank", "--progress-interval", "61"], "--progress-interval must be 0 (off)"),
        (["--progress-interval", "-1"], "--progress-interval must be 0 (off)"),
        (["--workload", "smallbank", "--load", "--no-run", "--history", str(tmp_path / "h")], "--history records a run"),
        (["--reads", "sequential"], "--reads says how --workload kv --history checks its reads: it needs both"),
        (["--workload", "smallbank", "--reads", "sequential", "--history", str(tmp_path / "h")],
         "--reads says how --workload kv --history checks its reads"),
        (["--reads", "linearizable"], "--reads says how --workload kv --history checks its reads: it needs both"),
        (["--load", "--history", str(tmp_path / "h"), "--reads", "sequential", "--read-from", "any"],
         "need the session's reads at one node: --read-from primary, not any"),
    ]
    for args, why in cases:
        out = str(tmp_path / "out.json")
        p, s = bench(topo, "--json", out, *args, check=False)
        assert p.returncode == 2, (args, p.returncode)
        assert why in p.stdout + p.stderr, (args, p.stdout, p.stderr)
        assert not s["ok"] and why in s["error"], (args, s)
        assert not os.path.exists(out), "nothing ran"
    # A command line CLI11 refuses still leaves a summary saying why.
    p, s = bench(topo, "--threads", "0", check=False)
    assert p.returncode != 0 and not s["ok"] and "--threads" in s["error"], s
    p, s = bench(topo, "--reads", "causal", check=False)
    assert p.returncode != 0 and not s["ok"] and "--reads" in s["error"], s


# --- kBenchProgress, spoken by hand: a bad payload is refused, nothing crashes ---------------------------------------

K_BENCH_PROGRESS = 16 + 4  # cluster::msgs::kBench.at(4)


def test_progress_request_is_validated(cluster):
    cluster.up(nodes=1)
    port = cluster.node("n0")["port"]
    for bad in (b"", b"\x01\x02\x03", struct.pack("<QB", 1, 0)):
        status, _ = rpc_call(port, K_BENCH_PROGRESS, bad)
        assert status == 1, (bad, status)  # kInvalidArgument
    status, reply = rpc_call(port, K_BENCH_PROGRESS, struct.pack("<Q", 12345))
    assert status == 0 and struct.unpack("<BQ", reply) == (0, 0), reply  # not a run this worker knows
    # Still serving.
    p, s = bench(cluster, "--workload", "smallbank:accounts=50", "--load", "--duration", "0.5", "--coroutines", "2")
    assert s["ok"] and s["committed"] > 0, s
