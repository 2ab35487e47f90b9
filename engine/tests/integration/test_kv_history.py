"""rdx-bench --workload kv --history: the load and the run recorded in rdx-lincheck's format and checked per key
for linearizability (Porcupine), with GETs and PUTs spread over every replica (--read-from any: backups answer from
their copy; --write-to any: backups forward to the primary). A planted early acknowledgement must be caught, with the
visualization written next to the history. With --write-mix set,incr,cas every registered replication protocol that
offers read-modify-writes runs FAA and compare-and-set through the native client API as well, checked the same way;
one that does not refuses them and they change nothing. A protocol whose reads are sequentially consistent per session
(zab: a node's own copy) reads at the key's leader here, as an rdx-bench session spreads its reads over every
replica; rdx-bench checks its reads with rdx-lincheck --reads sequential by default (what the registry line promises:
the summary's model says sequential-reads), and test_linearizability.py its local reads through
Redis clients pinned to one node each."""
import json
import os
import re
import time

import pytest

from conftest import registered_entries
from kvhistory import lincheck_binary
from test_bench_summary import bench

ARGS = ["--load", "--keys", "8", "--threads", "2", "--outstanding", "4", "--duration", "3", "--warmup", "0",
        "--read-from", "any", "--write-to", "any"]


def test_kv_history_is_linearizable_with_reads_at_every_replica(cluster):
    cluster.up(nodes=3)
    hist = os.path.join(cluster.dir, "kv.jsonl")
    p, s = bench(cluster, *ARGS, "--history", hist, "--lincheck", lincheck_binary())
    assert "linearizability:" in p.stdout and "linearizable" in p.stdout
    c = s["checker"]
    assert c["model"] == "linearizability" and c["ok"] and c["violations"] == 0, c
    assert c["checked"] > 2000, "the history holds the load and every completed operation of the run"
    with open(hist) as f:
        lines = f.read().splitlines()
    assert lines[0] == '{"rdx_kv_history":1}' and len(lines) - 1 == c["checked"]
    assert any('"op":"get"' in ln for ln in lines) and any('"op":"set"' in ln for ln in lines)


REPLICATION = {e["name"]: e for e in registered_entries("replication")}


def up_with(cluster, protocol, extra=()):
    """A 3-node cluster of replication `protocol`, and rdx-bench's arguments for its history: ARGS, with reads at the
    key's leader checked per session where its reads are sequentially consistent (see above)."""
    txn = [] if REPLICATION[protocol]["carries_transactions"] else ["--txn-protocol", "none"]
    cluster.up(nodes=3, extra=["--replication", protocol, *txn, *extra])
    if REPLICATION[protocol]["reads"] != "sequential":
        return list(ARGS)
    at = ARGS.index("--read-from")
    return [*ARGS[:at + 1], "primary", *ARGS[at + 2:]]  # (rdx-bench checks them as the registry line says)


def model_of(protocol):
    return "sequential-reads" if REPLICATION[protocol]["reads"] == "sequential" else "linearizability"


def test_reads_are_checked_as_the_protocol_promises_unless_told_otherwise(cluster):
    """zab's registry line says its reads are sequential: rdx-bench checks them so by default, refuses reads spread
    over every node (sequential consistency is per session, and each node lags on its own), and --reads linearizable
    overrides the default."""
    sequential = [p for p in REPLICATION if REPLICATION[p]["reads"] == "sequential"]
    assert sequential == ["zab"], sequential
    args = up_with(cluster, "zab")
    hist = os.path.join(cluster.dir, "reads.jsonl")
    p, s = bench(cluster, *ARGS, "--history", hist, "--lincheck", lincheck_binary(), check=False)
    assert p.returncode == 2 and "--read-from primary, not any" in s["error"], s
    assert not os.path.exists(hist), "nothing ran"
    for reads, model in ((None, "sequential-reads"), ("linearizable", "linearizability")):
        extra = ["--reads", reads] if reads else []
        p, s = bench(cluster, *args, "--history", hist, "--lincheck", lincheck_binary(), *extra, check=False)
        assert s["checker"]["model"] == model and s["checker"]["checked"] > 1000, (reads, s)


@pytest.mark.parametrize("protocol", REPLICATION)
def test_read_modify_writes_through_the_client_api_are_linearizable(cluster, protocol):
    args = up_with(cluster, protocol)
    hist = os.path.join(cluster.dir, "rmw.jsonl")
    rmw = REPLICATION[protocol]["ops"] == "read-modify-write"
    p, s = bench(cluster, *args, "--write-mix", "set,incr,cas", "--history", hist, "--lincheck", lincheck_binary(),
                 check=False)
    c = s["checker"]
    assert c["model"] == model_of(protocol), c
    assert c["ok"] and c["violations"] == 0, c
    with open(hist) as f:
        ops = [json.loads(line) for line in f.read().splitlines()[1:]]
    kinds = {k: sum(1 for o in ops if o["op"] == k) for k in ("get", "set", "incr", "cas")}
    print(protocol, kinds, "cas swapped:", sum(1 for o in ops if o["op"] == "cas" and o.get("out") is True))
    if rmw:
        # Every operation kind is taken. A starved machine may make a primary lose its leases for a moment, and then
        # it refuses (UNAVAILABLE) rather than risk a stale answer: such refusals are allowed, when rare; any other
        # error is not.
        codes = dict(re.findall(r"^  error (\w+): (\d+)$", p.stdout, re.M))
        assert p.returncode == 0 or (set(codes) <= {"UNAVAILABLE", "TIMEOUT"} and
                                     sum(map(int, codes.values())) * 100 < len(ops)), p.stdout[-2000:]
        assert kinds["incr"] > 100 and kinds["cas"] > 100, kinds
        assert any(o["op"] == "cas" and o.get("out") is True for o in ops), "some CAS expected the current value"
        assert any(o["op"] == "cas" and o.get("out") is False for o in ops), "and some did not"
    else:
        # Refused by the protocol: errors, exit 1, and none of them in the history (they changed nothing).
        out = p.stdout + p.stderr
        assert p.returncode == 1 and "first UNSUPPORTED error" in out, out[-2000:]
        assert kinds["incr"] == 0 and kinds["cas"] == 0 and kinds["get"] > 100, kinds


@pytest.mark.parametrize("protocol", [p for p in REPLICATION if REPLICATION[p]["survives"] == "minority"])
def test_kv_history_through_a_leader_kill_is_checked(cluster, protocol):
    """n0 (the primary or leader of view 0 where the protocol has one) killed (-9) under the load and restarted: the
    history is checked, with the writes in flight at the kill of unknown outcome; the only errors are refusals while
    the shard has no leader and those unknown outcomes; and the load goes on. A session backs off per kind of
    operation: reads that the members still serve locally once made a session retry its failing writes at full
    speed, and the history held over a thousand writes of unknown outcome, which the checker could not search."""
    args = up_with(cluster, protocol, extra=["--failure-timeout-ms", "300"])
    # 4 sessions over 20 keys, 8 s: the writes of unknown outcome stay a few per key, which the checker searches in
    # seconds (each may take effect anywhere after it began, so their number per key is what its search pays for).
    for flag, value in (("--threads", "1"), ("--keys", "20"), ("--duration", "8")):
        args[args.index(flag) + 1] = value
    hist, summary = os.path.join(cluster.dir, "killed.jsonl"), os.path.join(cluster.dir, "killed-summary.json")
    mix = "set,incr,cas" if REPLICATION[protocol]["ops"] == "read-modify-write" else "set"
    proc, out = cluster.bench_async(*args, "--write-mix", mix, "--history", hist, "--lincheck", lincheck_binary(),
                                    "--summary", summary)
    try:
        time.sleep(2.5)
        killed_at = time.time_ns()
        cluster.kill("n0")
        time.sleep(2)
        cluster.start("n0")
        restarted_at = time.time_ns()
        stdout, _ = proc.communicate(timeout=240)
    finally:
        proc.kill()
    with open(out) as f:
        s = json.load(f)
    with open(summary) as f:
        c = json.load(f)["checker"]
    with open(hist) as f:
        ops = [json.loads(line) for line in f.read().splitlines()[1:]]
    unknown = sum(1 for o in ops if "end" not in o)
    before = sum(1 for o in ops if o.get("end", killed_at) < killed_at)
    after = sum(1 for o in ops if o["start"] > restarted_at and "end" in o)
    print(f"{protocol}: {len(ops)} operations ({before} completed before the kill, {after} begun and completed after "
          f"the restart), {unknown} of unknown outcome; errors {s['errors']}; per second {s['ops_per_second']}; "
          f"checker {c}")
    # The kill hit the run, not its connection or its load: operations completed before it and after the restart.
    assert before > 1000 and after > 1000, (before, after)
    assert c["model"] == model_of(protocol) and c["ok"] and c["violations"] == 0, (c, stdout[-2000:])
    assert set(s["errors"]) <= {"UNAVAILABLE", "TIMEOUT", "total"}, s["errors"]
    assert all(x > 0 for x in s["ops_per_second"][-3:]), f"the load must go on: {s['ops_per_second']}"


def test_a_planted_early_acknowledgement_is_caught(cluster):
    cluster.up(nodes=3, extra=["--rdxd-arg=--test-fault=ack-before-replication"])
    hist = os.path.join(cluster.dir, "planted.jsonl")
    p, s = bench(cluster, *ARGS, "--history", hist, "--lincheck", lincheck_binary(), check=False)
    assert p.returncode == 3, p.returncode
    c = s["checker"]
    assert c["model"] == "linearizability" and not c["ok"] and c["violations"] > 0, c
    assert "not linearizable" in c["anomaly"] and os.path.getsize(hist + ".html") > 1000


def test_kv_history_refusals(cluster):
    cluster.up(nodes=1)
    hist = os.path.join(cluster.dir, "refused.jsonl")
    for args, why in [(["--history", hist], "needs --load"),
                      (["--load", "--history", hist, "--verify-acked"], "leave out --verify-acked"),
                      (["--workload", "smallbank", "--read-from", "any"], "apply to --workload kv"),
                      (["--workload", "smallbank", "--write-to", "any"], "apply to --workload kv"),
                      (["--workload", "smallbank", "--rate", "1000"], "apply to --workload kv"),
                      (["--workload", "smallbank", "--write-mix", "incr"], "apply to --workload kv")]:
        p, s = bench(cluster, *args, check=False)
        assert p.returncode == 2 and why in p.stdout + p.stderr, (args, p.stderr)
        assert not os.path.exists(hist), "a refused command line writes no history"
        assert s["committed"] == 0, "and runs nothing"
