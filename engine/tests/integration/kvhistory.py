"""Single-key histories of real redis-py clients, checked per key for linearizability by rdx-lincheck (Porcupine,
engine/tools/lincheck; its README.md has the history format)."""
import functools
import json
import os
import random
import resource
import subprocess
import time

import redis

from conftest import ENGINE, PinnedClients

LINCHECK_SRC = os.path.join(ENGINE, "tools", "lincheck")
LINCHECK = os.path.join(ENGINE, "build", "tools", "bin", "rdx-lincheck")


@functools.lru_cache(maxsize=None)
def lincheck_binary():
    """Builds rdx-lincheck (go build is incremental: a no-op when nothing changed). Go is a requirement of the
    project (hack/lib.sh); without it the test fails here, it does not skip."""
    p = subprocess.run(["go", "build", "-o", LINCHECK, "."], cwd=LINCHECK_SRC, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, f"go build rdx-lincheck failed:\n{p.stdout}\n{p.stderr}"
    return LINCHECK


def lincheck(history, html=None, timeout="60s", reads="linearizable"):
    """(exit status, report) of rdx-lincheck on `history`; with `html`, a failure's visualization goes there.
    `reads`: what reads are checked for, as the protocol's registry line says (linearizable, or sequential: per
    session, which the Redis tests pin to one node)."""
    cmd = [lincheck_binary(), "--timeout", timeout, "--reads", reads] + (["--html", html] if html else []) + [history]
    # Porcupine's search can grow without bound on histories with many unknown outcomes: bounded here, so such a
    # history fails this test (exit by signal) instead of starving the machine.
    limit = 6 << 30
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)))
    assert p.returncode in (0, 1, 3), f"{' '.join(cmd)} exited {p.returncode}: {p.stderr}"
    return p.returncode, json.loads(p.stdout)


class KvRecorder(PinnedClients):
    """Clients pinned to nodes, each doing operations from `ops` on `keys` back to back, recording every operation
    in lincheck's format: [start, end] in CLOCK_REALTIME; a write that raised has an unknown outcome (no end: a
    timeout or a failure after forwarding may still have applied it) unless the error says nothing was applied; a
    read that raised changed nothing and is left out. Values are integers, so INCR applies to whatever SET wrote.
    `ops` may differ per node (a dict); clients at the nodes in `stop_on_error` end when their connection fails. "multi-incr" is INCR inside MULTI/EXEC (a
    transaction coordinated by the node the client talks to)."""

    OPS = ("get", "set", "incr", "incrby", "decr", "setnx", "getset", "del")

    def __init__(self, cluster, nodes, keys, ops=OPS, per_node=2, stop_on_error=(), del_count=True):
        super().__init__(cluster, nodes, per_node)
        self.keys, self.stop_on_error = keys, set(stop_on_error)
        self.del_count = del_count  # False: DEL's reply is not checked (a protocol whose count is what a quorum saw)
        self.ops = ops if isinstance(ops, dict) else {n: ops for n in nodes}
        self.records, self.errors = [], []
        self.client_ids = {(n, i): k for k, (n, i) in enumerate((n, i) for n in nodes for i in range(per_node))}
        self.next_client_id = len(self.client_ids)

    def new_client_id(self):
        with self.lock:
            self.next_client_id += 1
            return self.next_client_id - 1

    def client(self, node, seed):
        cid = self.client_ids[(node, seed)]
        r = redis.Redis(host="127.0.0.1", port=self.cluster.node(node)["redis_port"], socket_timeout=30)
        rng = random.Random(hash((node, seed)))
        while not self.stop.is_set():
            key, op = rng.choice(self.keys), rng.choice(self.ops[node])
            rec = {"client": cid, "node": node, "key": key, "op": op}
            value = str(rng.randrange(1000))
            if op in ("set", "setnx", "getset"):
                rec["in"] = value
            elif op in ("incr", "incrby", "decr", "multi-incr"):
                rec["op"], rec["by"] = "incr", {"incr": 1, "incrby": 7, "decr": -1, "multi-incr": 1}[op]
            rec["start"] = time.time_ns()
            try:
                out = self.call(r, op, key, value)
            except redis.RedisError as e:
                # Refused connections sent nothing (the node is down): no effect, and a pause before trying again. A
                # transaction the server aborted (a conflict) had no effect either.
                sent = not (isinstance(e, redis.ConnectionError) and "connecting to" in str(e))
                # A conflict abort, and a refusal that says so, had no effect; other errors may have had one.
                aborted = isinstance(e, redis.ResponseError) and (
                    "aborted" in str(e) or "nothing was applied" in str(e))
                with self.lock:
                    self.errors.append(f"{node} {op} {key}: {e}")
                    if op != "get" and sent and not aborted:
                        self.records.append(rec)
                if isinstance(e, (redis.ConnectionError, redis.TimeoutError)):
                    if node in self.stop_on_error:
                        return
                    # The connection is gone (redis-py opens another for the next call), and with it the session:
                    # what a session is guaranteed (zab: reads never older than its own last write or read) holds per
                    # connection, and the next one may reach a node that restarted. Its calls are another client's.
                    cid = self.new_client_id()
                time.sleep(0.05 if not sent or not aborted else 0.005)  # a client backs off (fewer unknown outcomes)
                continue
            rec["end"] = time.time_ns()
            if op != "set" and (op != "del" or self.del_count):
                rec["out"] = out
            with self.lock:
                self.records.append(rec)

    @staticmethod
    def call(r, op, key, value):
        if op == "get":
            v = r.get(key)
            return None if v is None else v.decode()
        if op == "set":
            return r.set(key, value)
        if op == "incr":
            return r.incr(key)
        if op == "multi-incr":
            pipe = r.pipeline(transaction=True)
            pipe.incr(key)
            return pipe.execute()[0]
        if op == "incrby":
            return r.incrby(key, 7)
        if op == "decr":
            return r.decr(key)
        if op == "setnx":
            return bool(r.setnx(key, value))
        if op == "getset":
            v = r.getset(key, value)
            return None if v is None else v.decode()
        return r.delete(key)  # del

    def write(self, path):
        with open(path, "w") as f:
            f.write('{"rdx_kv_history":1}\n')
            for rec in self.records:
                f.write(json.dumps(rec) + "\n")

    def completed(self, kinds, during=(), nodes=None):
        """How many operations of `kinds` completed (at `nodes`, inside one of the `during` windows if given)."""
        return sum(1 for r in self.records
                   if r["op"] in kinds and "end" in r and (nodes is None or r["node"] in nodes)
                   and (not during or any(a < r["start"] and r["end"] < b for a, b in during)))


def write_versions_history(rec, path):
    """The GET/INCR history `rec` as rdx-check's history (rdx-check checks versions, Porcupine values): a counter's
    value is its version (INCR only), so an INCR is a one-key transaction that read value-1 and wrote value, a GET one
    that read value. An INCR whose outcome the client could not know may still have taken effect: a version that was
    read but that no known INCR created is credited to such an INCR of the key that began before the version was
    first seen, as a transaction that may have ended any time later (no real-time order after it). Returns how many
    were credited."""
    done = [x for x in rec.records if "end" in x]
    horizon = max(x["end"] for x in done) + 1
    created = {(r["key"], int(r["out"])) for r in done if r["op"] == "incr"}
    first_seen = {}
    for r in done:
        v = int(r["out"] or 0)
        for seen in ([v] if r["op"] == "get" else [v - 1, v]):
            if seen > 0:
                first_seen[(r["key"], seen)] = min(first_seen.get((r["key"], seen), horizon), r["end"])
    # Versions nobody known created, each with the time by which it existed (a version v-1 existed before v did).
    missing = {k for k in first_seen if k not in created}
    pending = sorted(missing)
    while pending:
        key, v = pending.pop()
        if v - 1 > 0 and (key, v - 1) not in created:
            first_seen[(key, v - 1)] = min(first_seen.get((key, v - 1), horizon), first_seen[(key, v)])
            if (key, v - 1) not in missing:
                missing.add((key, v - 1))
                pending.append((key, v - 1))
    unknown = {}
    for r in (x for x in rec.records if "end" not in x and x["op"] == "incr"):
        unknown.setdefault(r["key"], []).append(r)
    # An INCR that may have created a version began before it existed; the sets of such INCRs grow with the
    # deadline, so taking the versions by deadline and any INCR that fits matches as many as can be matched.
    inferred = []
    for key, v in sorted(missing, key=lambda k: first_seen[k]):
        fits = [u for u in unknown.get(key, []) if u["start"] < first_seen[(key, v)]]
        if not fits:
            continue  # left for the checker to report
        u = min(fits, key=lambda x: x["start"])
        unknown[key].remove(u)
        inferred.append({"type": f"incr?@{u['node']}", "start": u["start"], "end": horizon,
                         "reads": [[key, v - 1]], "writes": [[key, v]]})
    with open(path, "w") as f:
        f.write('{"rdx_history":1}\n')
        for i, r in enumerate(done):
            v = int(r["out"] or 0)
            h = {"id": i, "type": f"{r['op']}@{r['node']}", "start": r["start"], "end": r["end"], "committed": True}
            if r["op"] == "get":
                h["reads"] = [[r["key"], v]]
            else:
                h["reads"], h["writes"] = [[r["key"], v - 1]], [[r["key"], v]]
            f.write(json.dumps(h) + "\n")
        for j, h in enumerate(inferred):
            f.write(json.dumps({"id": len(done) + j, "committed": True, **h}) + "\n")
    return len(inferred)
