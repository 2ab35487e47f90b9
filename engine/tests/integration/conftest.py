"""Fixtures for multi-process tests: real rdxd processes on loopback, driven through engine/tools/rdx-local."""
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

ENGINE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RDX_LOCAL = os.path.join(ENGINE, "tools", "rdx-local")
BIN = os.environ.get("RDX_BIN", os.path.join(ENGINE, "build", "release", "bin"))


def registered_entries(family):
    """What rdxd registers in a family (transport, replication, txn, workload), each entry as `rdxd --list --json`
    prints it: tests parametrized over it run on every protocol the build has."""
    out = subprocess.run([os.path.join(BIN, "rdxd"), "--list", "--json"], capture_output=True, text=True, check=True,
                         timeout=30).stdout
    return json.loads(out)[family]


def registered(family):
    """The names rdxd registers in a family."""
    return [e["name"] for e in registered_entries(family)]


def run(cmd, timeout=120, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


class Cluster:
    def __init__(self, d):
        self.dir = str(d)
        self.topology_path = os.path.join(self.dir, "topology.json")

    def up(self, nodes=3, shards=1, workers=2, extra=()):
        run([sys.executable, RDX_LOCAL, "up", "--dir", self.dir, "--nodes", str(nodes), "--shards", str(shards),
             "--workers", str(workers), "--bin", BIN, "--memory-mb", "128", *extra], timeout=90)
        return self

    @property
    def topology(self):
        with open(self.topology_path) as f:
            return json.load(f)

    def node(self, name):
        return next(n for n in self.topology["nodes"] if n["name"] == name)

    def http(self, name, path):
        n = self.node(name)
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{n['http_port']}{path}", timeout=2) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def readyz(self, name):
        """The node's /readyz (status, body); (0, "") while it is not listening yet."""
        try:
            return self.http(name, "/readyz")
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return 0, ""

    def ready(self, name):
        """True when the node answers /readyz with 200; a node still starting (not listening yet) is not ready."""
        return self.readyz(name)[0] == 200

    def log_marks(self, *names):
        """Where each node's log ends now: logs_since(marks) is what the nodes logged afterwards."""
        return {n: len(self.log(n)) for n in names}

    def logs_since(self, marks, *names):
        return "".join(self.log(n)[marks[n]:] for n in (names or marks))

    def metric(self, name, metric, **labels):
        """Sum of a metric's samples on a node whose labels include `labels`."""
        _, text = self.http(name, "/metrics")
        total = 0.0
        for line in text.splitlines():
            if not line.startswith(metric + "{") and not line.startswith(metric + " "):
                continue
            if all(f'{k}="{v}"' in line for k, v in labels.items()):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def kill(self, name, signal="KILL"):
        run([sys.executable, RDX_LOCAL, "kill", "--dir", self.dir, "--node", name, "--signal", signal])

    def start(self, name, wait=True):
        run([sys.executable, RDX_LOCAL, "start", "--dir", self.dir, "--node", name, "--bin", BIN]
            + ([] if wait else ["--no-wait"]), timeout=90)

    def primary(self, nodes=("n0", "n1", "n2"), timeout=10):
        """The node that says it is its shard's primary (INFO role; single-shard clusters): it changes with every
        failover. Waits up to `timeout` for one; two at once fail."""
        import redis  # (the real-client tests' dependency; conftest itself runs without it)
        deadline = time.time() + timeout
        while True:
            found = []
            for n in nodes:
                try:
                    role = redis.Redis(port=self.node(n)["redis_port"], socket_timeout=2).info("replication")["role"]
                except redis.RedisError:
                    continue
                if role == "master":
                    found.append(n)
            assert len(found) <= 1, f"two primaries: {found}"
            if found:
                return found[0]
            if time.time() > deadline:
                raise AssertionError(f"none of {nodes} says it is the primary")
            time.sleep(0.05)

    def add(self, shard=0, wait=True):
        """A new node joins `shard`: the next membership epoch (the running nodes apply it live), then the node
        starts. Returns its name."""
        p = run([sys.executable, RDX_LOCAL, "add", "--dir", self.dir, "--shard", str(shard), "--bin", BIN]
                + ([] if wait else ["--no-wait"]), timeout=90)
        return p.stdout.strip().splitlines()[-1]

    def remove(self, name):
        """The next membership epoch without `name` (the last node); returns once it stopped itself."""
        run([sys.executable, RDX_LOCAL, "remove", "--dir", self.dir, "--node", name], timeout=60)

    def pid(self, name):
        with open(os.path.join(self.dir, "pids.json")) as f:
            return json.load(f).get(name)

    def log(self, name):
        with open(os.path.join(self.dir, f"{name}.log"), errors="replace") as f:
            return f.read()

    def down(self):
        run([sys.executable, RDX_LOCAL, "down", "--dir", self.dir], check=False)

    def bench(self, *args, timeout=180, check=True):
        out = os.path.join(self.dir, f"bench-{time.time_ns()}.json")
        p = run([os.path.join(BIN, "rdx-bench"), "--config", self.topology_path, "--json", out, *args],
                timeout=timeout, check=check)
        result = json.load(open(out)) if os.path.exists(out) else None
        return p, result

    def bench_async(self, *args):
        out = os.path.join(self.dir, f"bench-{time.time_ns()}.json")
        p = subprocess.Popen([os.path.join(BIN, "rdx-bench"), "--config", self.topology_path, "--json", out, *args],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return p, out


class PinnedClients:
    """Client threads pinned to nodes (`per_node` on each), running `client(node, seed)` until the `with` block ends.
    Subclasses define client(); it loops while not self.stop.is_set() and guards shared state with self.lock."""

    def __init__(self, cluster, nodes, per_node=2):
        self.cluster, self.lock, self.stop = cluster, threading.Lock(), threading.Event()
        self.threads = [threading.Thread(target=self.client, args=(n, i), daemon=True)
                        for n in nodes for i in range(per_node)]

    def client(self, node, seed):
        raise NotImplementedError

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.finish()

    def finish(self):
        """Stops the clients (idempotent): the `with` block's end, or earlier."""
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path / "cluster")
    yield c
    c.down()
    # Dump logs of a failed test (pytest shows captured output on failure).
    for f in sorted(os.listdir(c.dir)) if os.path.isdir(c.dir) else []:
        if f.endswith(".log"):
            print(f"----- {f} (tail) -----")
            print(open(os.path.join(c.dir, f), errors="replace").read()[-3000:])


def wait_until(pred, timeout=30, interval=0.1, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


# Every collected test must run: a skipped test fails the session (a missing dependency must never pass quietly),
# and the summary says how many of the collected tests passed.
_skipped = []


def pytest_runtest_logreport(report):
    if report.skipped:
        _skipped.append(f"{report.nodeid}: {report.longrepr}")


def pytest_sessionfinish(session, exitstatus):
    if _skipped and session.exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    stats = terminalreporter.stats
    selected = terminalreporter._session.testscollected  # after -k deselection
    deselected = len(stats.get("deselected", []))
    passed = len([r for r in stats.get("passed", []) if r.when == "call"])
    terminalreporter.write_line(f"integration: {passed} of {selected} selected tests passed, {len(_skipped)} skipped "
                                f"({selected + deselected} collected, {deselected} deselected)")
    for s in _skipped:
        terminalreporter.write_line(f"SKIPPED (fails the run): {s}")
