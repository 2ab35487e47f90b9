"""rdx-bench --workload kv --history: the load and the run recorded in rdx-lincheck's format and checked per key
for linearizability (Porcupine), with GETs and PUTs spread over every replica (--read-from any: backups answer from
their copy; --write-to any: backups forward to the primary). A planted early acknowledgement must be caught, with the
visualization written next to the history. With --write-mix set,incr,cas every registered replication protocol that
offers read-modify-writes runs FAA and compare-and-set through the native client API as well, checked the same way;
one that does not refuses them and they change nothing. A protocol whose reads are sequentially consistent per session
(zab: a node's own copy) reads at the key's leader here, as an rdx-bench session spreads its reads over every
replica; rdx-lincheck checks its reads with --reads sequential, and test_linearizability.py its local reads through
Redis clients pinned to one node each."""
import json
import os
import re

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


@pytest.mark.parametrize("protocol", REPLICATION)
def test_read_modify_writes_through_the_client_api_are_linearizable(cluster, protocol):
    txn = [] if REPLICATION[protocol]["carries_transactions"] else ["--txn-protocol", "none"]
    cluster.up(nodes=3, extra=["--replication", protocol, *txn])
    hist = os.path.join(cluster.dir, "rmw.jsonl")
    rmw = REPLICATION[protocol]["ops"] == "read-modify-write"
    sequential = REPLICATION[protocol]["reads"] == "sequential"
    args = ARGS
    if sequential:  # reads at the key's leader (see above)
        args = [*ARGS[:ARGS.index("--read-from") + 1], "primary", *ARGS[ARGS.index("--read-from") + 2:], "--reads",
                "sequential"]
    p, s = bench(cluster, *args, "--write-mix", "set,incr,cas", "--history", hist, "--lincheck", lincheck_binary(),
                 check=False)
    c = s["checker"]
    assert c["model"] == ("sequential-reads" if sequential else "linearizability"), c
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
