"""The Redis-protocol endpoint of rdxd with real clients (redis-cli, redis-benchmark, redis-py) and hostile input.

Every test talks to real rdxd processes started by rdx-local. A module-scoped single-node cluster serves most tests;
the WATCH race and DBSIZE run on multi-node clusters, AUTH on a cluster with a password.
"""
import os
import pty
import random
import re
import select
import selectors
import socket
import subprocess
import threading
import time

import pytest
import redis  # Debian python3-redis (engine/tools/install-deps.sh); a missing module fails the run

from conftest import Cluster, run


# ---------------------------------------------------------------------------------------------------------------
# Helpers


def port_of(cluster, node="n0"):
    return cluster.node(node)["redis_port"]


def raw(port, data, wait=1.0, shutdown=False):
    """Sends bytes on a fresh connection; returns (reply bytes, closed_by_server)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(data)
    if shutdown:
        s.shutdown(socket.SHUT_WR)
    s.settimeout(wait)
    out, closed = b"", False
    try:
        while True:
            b = s.recv(1 << 16)
            if not b:
                closed = True
                break
            out += b
    except socket.timeout:
        pass
    except ConnectionResetError:
        closed = True
    s.close()
    return out, closed


def cmd(*args):
    """Encodes one RESP multibulk request."""
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def assert_alive(cluster, node="n0"):
    pid = cluster.pid(node)
    assert pid and os.path.exists(f"/proc/{pid}"), f"rdxd {node} is gone"
    assert redis.Redis(port=port_of(cluster, node), socket_timeout=5).ping()
    assert cluster.http(node, "/healthz")[0] == 200


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("resp-single"))
    c.up(nodes=1, workers=2)
    yield c
    c.down()


@pytest.fixture(scope="module")
def trio(tmp_path_factory):
    """Three replicas of one shard: every write is replicated. Its failure timeout is 2 s, not 500 ms: the test here
    is contention, and a process stalled for 500 ms on a loaded 2-core machine has its primary deposed, which fails
    the writes in flight with "may or may not have taken effect" (a 3-node INCR/SET redis-benchmark loop under load
    did so after 11 rounds); failover is tested by test_failure_detection.py and test_primary_failover.py."""
    c = Cluster(tmp_path_factory.mktemp("resp-trio"))
    c.up(nodes=3, workers=2, extra=["--failure-timeout-ms", "2000"])
    yield c
    c.down()


@pytest.fixture
def r(single):
    client = redis.Redis(port=port_of(single), socket_timeout=10)
    yield client
    client.close()


# ---------------------------------------------------------------------------------------------------------------
# redis-cli


def test_redis_cli_scripted(single):
    script = "\n".join([
        "PING", "SET cli:k hello", "GET cli:k", "APPEND cli:k _world", "STRLEN cli:k", "INCR cli:n", "INCRBY cli:n 41",
        "MULTI", "SET cli:a 1", "INCR cli:a", "GET cli:a", "EXEC", "GET cli:missing", "DEL cli:k cli:missing",
        "EXISTS cli:k", "NOSUCHCMD x", "GET", "SELECT 0", "SELECT 3",
    ]) + "\n"
    p = subprocess.run(["redis-cli", "-p", str(port_of(single))], input=script, capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [
        "PONG", "OK", "hello", "11", "11", "1", "42",
        "OK", "QUEUED", "QUEUED", "QUEUED", "OK", "2", "2", "", "1", "0",
        "ERR unknown command 'NOSUCHCMD', with args beginning with: 'x' ", "",
        "ERR wrong number of arguments for 'get' command", "", "OK", "ERR DB index is out of range", "",
    ]  # (redis-server gives the same lines, except that it has 16 databases: SELECT 3 is OK there)


def test_redis_cli_interactive_starts_and_has_help(single):
    """redis-cli's interactive mode asks COMMAND DOCS at start; HELP then shows rdx's documentation."""
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "dumb"  # plain line input (no cursor-position queries)
        os.execvp("redis-cli", ["redis-cli", "-p", str(port_of(single))])
    out = b""

    def drain(seconds):
        nonlocal out
        end = time.time() + seconds
        while time.time() < end:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    out += os.read(fd, 4096)
                except OSError:
                    return

    try:
        drain(0.5)
        for line in (b"PING\n", b"SET icli v\n", b"GET icli\n", b"HELP GET\n", b"exit\n"):
            os.write(fd, line)
            drain(0.5)
    finally:
        os.close(fd)
        os.waitpid(pid, 0)
    text = out.decode(errors="replace")
    assert "PONG" in text and '"v"' in text
    assert "Get the value of a key" in text, text
    assert "ERR" not in text, text


# ---------------------------------------------------------------------------------------------------------------
# redis-benchmark


def test_redis_benchmark_set_get_pipelined(single):
    port = port_of(single)
    p = run(["redis-benchmark", "-p", str(port), "-t", "set,get", "-n", "20000", "-P", "16", "-c", "50", "--csv"],
            timeout=120)
    rows = {}
    for line in p.stdout.splitlines():
        m = re.match(r'"(\w+)","([\d.]+)"', line)
        if m:
            rows[m.group(1)] = float(m.group(2))
    assert set(rows) == {"SET", "GET"}, p.stdout + p.stderr
    assert all(v > 0 for v in rows.values())
    assert "WARN" not in p.stderr and "ERR" not in p.stdout, p.stdout + p.stderr
    # redis-benchmark writes a 3-byte value to key:__rand_int__ (one key without -r).
    assert len(redis.Redis(port=port).get("key:__rand_int__")) == 3


def test_redis_benchmark_random_keys_all_land(single):
    port = port_of(single)
    run(["redis-benchmark", "-p", str(port), "-t", "set", "-n", "5000", "-r", "1000", "-P", "8", "-c", "10", "-q"],
        timeout=120)
    client = redis.Redis(port=port)
    keys = [f"key:{i:012d}" for i in range(1000)]
    present = sum(1 for v in client.mget(keys) if v is not None and len(v) == 3)
    assert present > 900  # 5000 draws over 1000 keys leave almost none unset


# ---------------------------------------------------------------------------------------------------------------
# redis-py: commands


def test_strings_and_keys(r):
    assert r.ping()
    assert r.echo("hi") == b"hi"
    assert r.set("s:a", "1") and r.get("s:a") == b"1"
    assert r.get("s:none") is None
    assert r.set("s:a", "2", nx=True) is None and r.get("s:a") == b"1"
    assert r.set("s:b", "x", xx=True) is None and r.get("s:b") is None
    assert r.set("s:a", "3", xx=True) and r.get("s:a") == b"3"
    assert r.set("s:a", "4", get=True) == b"3"
    assert r.setnx("s:c", "c") is True and r.setnx("s:c", "d") is False
    assert r.getset("s:c", "e") == b"c" and r.get("s:c") == b"e"
    assert r.getdel("s:c") == b"e" and r.get("s:c") is None
    assert r.append("s:ap", "ab") == 2 and r.append("s:ap", "cd") == 4 and r.get("s:ap") == b"abcd"
    assert r.strlen("s:ap") == 4 and r.strlen("s:none") == 0
    assert r.mset({"s:m1": "1", "s:m2": "2"}) and r.mget("s:m1", "s:none", "s:m2") == [b"1", None, b"2"]
    assert r.exists("s:m1", "s:m2", "s:none", "s:m1") == 3
    assert r.delete("s:m1", "s:m2", "s:none") == 2 and r.exists("s:m1") == 0
    assert r.type("s:a") == b"string" and r.type("s:none") == b"none"
    assert r.ttl("s:a") == -1 and r.ttl("s:none") == -2 and r.pttl("s:a") == -1
    assert r.persist("s:a") is False
    binary = bytes(range(256)) * 4
    assert r.set(b"s:\x00bin\r\n", binary) and r.get(b"s:\x00bin\r\n") == binary
    assert r.set("s:empty", "") and r.get("s:empty") == b""


def test_counters(r):
    assert r.incr("c:n") == 1 and r.incrby("c:n", 9) == 10 and r.decr("c:n") == 9 and r.decrby("c:n", 10) == -1
    r.set("c:max", str(2**63 - 1))
    with pytest.raises(redis.ResponseError, match="increment or decrement would overflow"):
        r.incr("c:max")
    for bad in ("abc", "01", " 1", "1.5", ""):
        r.set("c:bad", bad)
        with pytest.raises(redis.ResponseError, match="^value is not an integer or out of range$"):
            r.incr("c:bad")
        assert r.get("c:bad") == bad.encode()  # untouched
    with pytest.raises(redis.ResponseError, match="value is not an integer or out of range"):
        r.incrby("c:n", "x")
    with pytest.raises(redis.ResponseError, match="decrement would overflow"):
        r.decrby("c:n", -(2**63))


def test_size_limits_and_expiry_are_explicit(r):
    assert r.set("lim:v", b"v" * (1 << 20)) and r.strlen("lim:v") == 1 << 20
    with pytest.raises(redis.ResponseError, match="rdx stores values up to 1 MiB"):
        r.set("lim:v2", b"v" * ((1 << 20) + 1))
    with pytest.raises(redis.ResponseError, match="1024 bytes"):
        r.set("k" * 1025, "v")
    assert r.get("k" * 1025) is None  # such a key cannot exist
    with pytest.raises(redis.ResponseError, match="does not support key expiry"):
        r.set("lim:e", "v", ex=10)
    with pytest.raises(redis.ResponseError, match="does not support key expiry"):
        r.expire("lim:v", 10)
    assert r.get("lim:e") is None
    with pytest.raises(redis.ResponseError, match="invalid expire time in 'set' command"):
        r.execute_command("SET", "lim:e", "v", "EX", "0")
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("SET", "lim:e", "v", "NX", "XX")
    assert r.set("lim:k", "v", keepttl=True)


def test_resp3_via_hello(single):
    client = redis.Redis(port=port_of(single), protocol=3)
    assert client.set("r3:k", "v") and client.get("r3:k") == b"v" and client.get("r3:none") is None
    hello = client.execute_command("HELLO", "3")
    assert hello[b"proto"] == 3 and hello[b"server"] == b"redis" and hello[b"version"] == b"7.0.0"
    assert client.execute_command("CLIENT", "GETNAME") is None
    out, _ = raw(port_of(single), b"HELLO 3\r\nGET r3:none\r\nMGET r3:k r3:none\r\nINFO keyspace\r\n")
    assert out.startswith(b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n")
    assert b"_\r\n*2\r\n$1\r\nv\r\n_\r\n=" in out  # RESP3 nulls; INFO as a verbatim string
    assert b"txt:# Keyspace\r\ndb0:keys=" in out
    out, _ = raw(port_of(single), b"HELLO 4\r\nHELLO x\r\nHELLO 2 foo\r\n")
    assert out == (b"-NOPROTO unsupported protocol version\r\n"
                   b"-ERR Protocol version is not an integer or out of range\r\n"
                   b"-ERR Syntax error in HELLO option 'foo'\r\n")


def test_connection_and_server_commands(single, r):
    assert r.client_setname("worker-1") and r.client_getname() == "worker-1"
    with pytest.raises(redis.ResponseError, match="Client names cannot contain spaces"):
        r.client_setname("has space")
    cid = r.client_id()
    assert cid > 0 and f"id={cid} " in r.execute_command("CLIENT", "INFO").decode()
    assert r.command_count() == len(r.command()) >= 40
    out, _ = raw(port_of(single), b"COMMAND INFO get nosuch\r\n")
    assert out.startswith(b"*2\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n")
    assert out.endswith(b"*-1\r\n")  # an unknown name is a null entry, as in Redis
    assert r.execute_command("SELECT", "0") in (b"OK", True)
    with pytest.raises(redis.ResponseError, match="DB index is out of range"):
        r.execute_command("SELECT", "1")
    assert r.config_get("save") == {"save": ""} and r.config_get("appendonly") == {"appendonly": "no"}
    info = r.info()
    assert info["redis_version"] == "7.0.0" and info["connected_clients"] >= 1 and "db0" in info
    assert set(r.info("keyspace")) == {"db0"}
    before = r.dbsize()
    r.set("dbsize:new", "1")
    assert r.dbsize() == before + 1
    out, closed = raw(port_of(single), b"PING\r\nQUIT\r\nPING\r\n")
    assert out == b"+PONG\r\n+OK\r\n" and closed
    out, _ = raw(port_of(single), b"CLIENT SETNAME x\r\nMULTI\r\nRESET\r\nCLIENT GETNAME\r\nEXEC\r\n")
    assert out == b"+OK\r\n+OK\r\n+RESET\r\n$-1\r\n-ERR EXEC without MULTI\r\n"


def test_inline_commands_and_pipelining(single):
    port = port_of(single)
    out, _ = raw(port, b'SET inl "hello world"\r\nGET inl\nECHO \'it\\\'s\'\r\n\r\nPING\r\n')
    assert out == b"+OK\r\n$11\r\nhello world\r\n$4\r\nit's\r\n+PONG\r\n"
    # A deep pipeline on one connection: replies in order.
    n = 5000
    req = b"".join(cmd("SET", f"pipe:{i}", i) + cmd("GET", f"pipe:{i}") for i in range(n))
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(req)
    expected = b"".join(b"+OK\r\n$%d\r\n%d\r\n" % (len(str(i)), i) for i in range(n))
    got = b""
    while len(got) < len(expected):
        chunk = s.recv(1 << 16)
        assert chunk
        got += chunk
    s.close()
    assert got == expected


def test_many_connections_pipelining_concurrently(single):
    port = port_of(single)
    conns, per = 300, 40
    sel = selectors.DefaultSelector()
    expected, got = {}, {}
    for c in range(conns):
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.setblocking(False)
        payload = b"".join(cmd("SET", f"mc:{c}:{i}", f"{c}-{i}") + cmd("GET", f"mc:{c}:{i}") for i in range(per))
        expected[s] = b"".join(b"+OK\r\n$%d\r\n%s\r\n" % (len(f"{c}-{i}"), f"{c}-{i}".encode()) for i in range(per))
        got[s] = b""
        s.sendall(payload)
        sel.register(s, selectors.EVENT_READ)
    deadline = time.time() + 60
    pending = set(expected)
    while pending and time.time() < deadline:
        for key, _ in sel.select(timeout=1):
            s = key.fileobj
            data = s.recv(1 << 16)
            assert data, "server closed a pipelining connection"
            got[s] += data
            if len(got[s]) >= len(expected[s]):
                pending.discard(s)
                sel.unregister(s)
    assert not pending, f"{len(pending)} connections did not get every reply"
    for s in expected:
        assert got[s] == expected[s]
        s.close()


# ---------------------------------------------------------------------------------------------------------------
# Transactions


def test_multi_exec_discard_and_queue_errors(single, r):
    p = r.pipeline(transaction=True)
    p.set("tx:a", "1").incr("tx:a").get("tx:a").mget("tx:a", "tx:none").delete("tx:none")
    assert p.execute() == [True, 2, b"2", [b"2", None], 0]
    port = port_of(single)
    out, _ = raw(port, b"MULTI\r\nSET tx:q 1\r\nNOSUCH\r\nSET tx:q2\r\nEXEC\r\nGET tx:q\r\n")
    assert out == (b"+OK\r\n+QUEUED\r\n-ERR unknown command 'NOSUCH', with args beginning with: \r\n"
                   b"-ERR wrong number of arguments for 'set' command\r\n"
                   b"-EXECABORT Transaction discarded because of previous errors.\r\n$-1\r\n")
    out, _ = raw(port, b"MULTI\r\nMULTI\r\nWATCH x\r\nSET tx:d 1\r\nDISCARD\r\nGET tx:d\r\nEXEC\r\nDISCARD\r\n")
    assert out == (b"+OK\r\n-ERR MULTI calls can not be nested\r\n-ERR WATCH inside MULTI is not allowed\r\n"
                   b"+QUEUED\r\n+OK\r\n$-1\r\n-ERR EXEC without MULTI\r\n-ERR DISCARD without MULTI\r\n")
    # A runtime error inside EXEC fails that command only, as in Redis.
    r.set("tx:str", "abc")
    p = r.pipeline(transaction=True)
    p.set("tx:r1", "1").incr("tx:str").set("tx:r2", "2")
    res = p.execute(raise_on_error=False)
    assert res[0] is True and isinstance(res[1], redis.ResponseError) and res[2] is True
    assert r.get("tx:r1") == b"1" and r.get("tx:r2") == b"2"


def test_transaction_never_half_applied_on_disconnect(single, r):
    port = port_of(single)
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"MULTI\r\nSET half:a 1\r\nSET half:b 2\r\n")
    time.sleep(0.3)
    s.close()  # gone before EXEC
    time.sleep(0.3)
    assert r.get("half:a") is None and r.get("half:b") is None
    out, _ = raw(port, b"MULTI\r\nSET half:c 1\r\n*2\r\n$3\r\nSET\r\n$5\r\nhalf:")  # truncated inside MULTI
    assert r.get("half:c") is None


def test_watch_detects_concurrent_change(r):
    r.set("w:k", "1")
    with r.pipeline() as p:
        p.watch("w:k")
        p.multi()
        p.set("w:k", "2")
        assert p.execute() == [True]
    with r.pipeline() as p:
        p.watch("w:k")
        redis.Redis(port=r.connection_pool.connection_kwargs["port"]).set("w:k", "other")
        p.multi()
        p.set("w:k", "3")
        with pytest.raises(redis.WatchError):
            p.execute()
    assert r.get("w:k") == b"other"
    with r.pipeline() as p:  # a watched key that is absent and stays absent
        p.watch("w:absent")
        p.multi()
        p.set("w:other", "1")
        assert p.execute() == [True]
    out, _ = raw(r.connection_pool.connection_kwargs["port"], b"WATCH w:k\r\nUNWATCH\r\nMULTI\r\nEXEC\r\n")
    assert out == b"+OK\r\n+OK\r\n+OK\r\n*0\r\n"


def watch_race(port, key, iterations, results, idx):
    client = redis.Redis(port=port, socket_timeout=30)
    ok = conflicts = 0
    while ok < iterations:
        with client.pipeline() as p:
            try:
                p.watch(key)
                v = int(p.get(key) or 0)
                p.multi()
                p.set(key, v + 1)
                p.execute()
                ok += 1
            except redis.WatchError:
                conflicts += 1
    results[idx] = (ok, conflicts)


@pytest.mark.parametrize("cluster_name", ["single", "trio"])
def test_two_clients_racing_watch_multi_exec_counter(request, cluster_name):
    """Two clients increment one counter with WATCH/GET/MULTI/SET/EXEC; the counter ends at exactly the number of
    successful EXECs (each conflict loses with a null reply, none double-applies). On the 3-replica cluster the
    clients use different nodes (the primary and a backup) and the counter is replicated."""
    c = request.getfixturevalue(cluster_name)
    nodes = len(c.topology["nodes"])
    ports = [port_of(c, "n0"), port_of(c, f"n{nodes - 1}")]
    results = [None, None]
    threads = [threading.Thread(target=watch_race, args=(ports[i], "race:counter", 300, results, i))
               for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert all(res is not None for res in results), results
    successes = sum(res[0] for res in results)
    final = int(redis.Redis(port=ports[0]).get("race:counter"))
    assert final == successes == 600, results
    for n in range(nodes):
        assert int(redis.Redis(port=port_of(c, f"n{n}")).get("race:counter")) == 600
    print(f"watch race on {nodes} node(s): successes={successes} conflicts={sum(r[1] for r in results)}")


@pytest.mark.parametrize("cluster_name", ["single", "trio"])
def test_hot_key_writers_and_counter(request, cluster_name):
    """redis-benchmark's single hot key from 50 pipelining connections: every SET answered OK (writes of one key
    take turns; waiting SETs are combined), every INCR applied exactly once."""
    c = request.getfixturevalue(cluster_name)
    port = port_of(c)
    redis.Redis(port=port).delete("counter:__rand_int__")
    p = run(["redis-benchmark", "-p", str(port), "-t", "set,incr", "-n", "8000", "-P", "16", "-c", "50", "--csv"],
            timeout=300)
    assert '"SET"' in p.stdout and '"INCR"' in p.stdout and "Error" not in p.stdout + p.stderr, p.stdout + p.stderr
    for n in c.topology["nodes"]:  # (8000 = 50 clients x 16 x 10: redis-benchmark issues exactly that many)
        assert int(redis.Redis(port=n["redis_port"]).get("counter:__rand_int__")) == 8000


def test_single_key_commands_never_fail_under_contention_through_every_node(trio):
    """Single-key commands are operations of the replication protocol, evaluated at the key's primary, which orders
    them: like Redis, they never fail because of contention. redis-benchmark INCR and SET on 4 keys from 50
    connections to each of the 3 nodes at once: no error reply, and every INCR applied exactly once."""
    ports = [n["redis_port"] for n in trio.topology["nodes"]]
    r0 = redis.Redis(port=ports[0])
    counters = [f"counter:{i:012d}" for i in range(4)]
    r0.delete(*counters)
    marks = trio.log_marks("n0", "n1", "n2")
    requests = 20000
    procs = [subprocess.Popen(["redis-benchmark", "-p", str(p), "-t", "incr,set", "-r", "4", "-c", "50", "-n",
                               str(requests), "--csv"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for p in ports]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    for p, out in zip(procs, outputs):
        assert p.returncode == 0 and '"INCR"' in out and '"SET"' in out, out + trio.logs_since(marks)
        assert "ERR" not in out and "Error" not in out, out + trio.logs_since(marks)
    assert sum(int(r0.get(k) or 0) for k in counters) == len(ports) * requests
    print("\n".join(outputs))


def test_pipelined_sets_of_one_key_then_read(single):
    out, _ = raw(port_of(single), b"SET pk 1\r\nSET pk 2\r\nset pk 3\r\nSET other x\r\nSET pk 4\r\nGET pk\r\n"
                                  b"SET pk 5\r\nSET pk 6 NX\r\nGET pk\r\n")
    assert out == b"+OK\r\n" * 5 + b"$1\r\n4\r\n+OK\r\n$-1\r\n$1\r\n5\r\n"


def test_concurrent_incr_is_atomic(single):
    port = port_of(single)

    def work():
        client = redis.Redis(port=port)
        for _ in range(500):
            client.incr("atomic:n")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert int(redis.Redis(port=port).get("atomic:n")) == 2000


def test_dbsize_sums_every_shard(tmp_path):
    c = Cluster(tmp_path / "shards")
    c.up(nodes=2, shards=2, workers=1)
    try:
        a, b = redis.Redis(port=port_of(c, "n0")), redis.Redis(port=port_of(c, "n1"))
        for i in range(200):
            a.set(f"shard:{i}", i)
        assert a.dbsize() == 200 and b.dbsize() == 200
        assert b.mget([f"shard:{i}" for i in range(0, 200, 50)]) == [b"0", b"50", b"100", b"150"]
    finally:
        c.down()


# ---------------------------------------------------------------------------------------------------------------
# AUTH


def test_auth_is_required_when_a_password_is_set(tmp_path):
    c = Cluster(tmp_path / "auth")
    os.environ["RDX_PASSWORD"] = "s3cret"
    try:
        c.up(nodes=1, workers=1)
    finally:
        del os.environ["RDX_PASSWORD"]
    try:
        port = port_of(c)
        out, _ = raw(port, b"PING\r\nGET a\r\nFOO\r\nAUTH wrong\r\nAUTH bob s3cret\r\nHELLO 3\r\nAUTH s3cret\r\nPING\r\n")
        assert out == (b"-NOAUTH Authentication required.\r\n-NOAUTH Authentication required.\r\n"
                       b"-ERR unknown command 'FOO', with args beginning with: \r\n"
                       b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
                       b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
                       b"-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH "
                       b"<user> <pass> option can be used to authenticate the client and select the RESP protocol "
                       b"version at the same time\r\n+OK\r\n+PONG\r\n")
        out, _ = raw(port, b"HELLO 3 AUTH default s3cret SETNAME app\r\nCLIENT GETNAME\r\n")
        assert out.startswith(b"%7\r\n") and out.endswith(b"$3\r\napp\r\n")
        out, closed = raw(port, b"*20\r\n")  # unauthenticated clients get Redis' small request limits
        assert out == b"-ERR Protocol error: unauthenticated multibulk length\r\n" and closed
        out, closed = raw(port, b"*2\r\n$3\r\nGET\r\n$20000\r\n")
        assert out == b"-ERR Protocol error: unauthenticated bulk length\r\n" and closed
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=port, password="nope").ping()
        client = redis.Redis(port=port, password="s3cret")
        assert client.set("a", "1") and client.get("a") == b"1"
        p = subprocess.run(["redis-cli", "-p", str(port), "--no-auth-warning", "-a", "s3cret", "GET", "a"],
                           capture_output=True, text=True, timeout=30)
        assert p.stdout.strip() == "1"
    finally:
        c.down()


# ---------------------------------------------------------------------------------------------------------------
# Bad input: an error reply or a closed connection, never a crash or a half-applied transaction


@pytest.mark.parametrize("payload,reply", [
    (b"*1\r\n$4\r\nPING", b""),                                                # truncated bulk: waits
    (b"*2\r\n$3\r\nGET\r\n$100\r\nshort\r\n", b""),                            # declared longer than sent: waits
    (b"*1\r\n$4\r\nPINGxx\r\n", b"-ERR Protocol error: expected CRLF after bulk data\r\n"),  # wrong length
    (b"*2\r\n$4\r\nECHO\r\n$1\r\nab\r\n", b"-ERR Protocol error: expected CRLF after bulk data\r\n"),
    (b"*1\r\n$536870913\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),  # over 512 MB
    (b"*1\r\n$99999999999999999999\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1048577\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),  # over 1M elements
    (b"*-5x\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*1\r\n:1\r\n", b"-ERR Protocol error: expected '$', got ':'\r\n"),
    (b"*1\r\n$-1\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"x" * 70000, b"-ERR Protocol error: too big inline request\r\n"),
    (b"*" + b"9" * 70000, b"-ERR Protocol error: too big mbulk count string\r\n"),
    (b'SET "unbalanced\r\n', b"-ERR Protocol error: unbalanced quotes in request\r\n"),
])
def test_malformed_requests(single, payload, reply):
    out, closed = raw(port_of(single), cmd("PING") + payload, wait=0.5)
    assert out == b"+PONG\r\n" + reply
    assert closed == bool(reply)  # a protocol error closes the connection after its reply, like Redis
    assert_alive(single)


def test_huge_declared_length_then_disconnect(single):
    """A 512 MB bulk declared and never sent costs nothing up front; the client just goes away."""
    s = socket.create_connection(("127.0.0.1", port_of(single)))
    s.sendall(b"*3\r\n$3\r\nSET\r\n$4\r\nhuge\r\n$536870912\r\n" + b"x" * 100000)
    time.sleep(0.2)
    s.close()
    assert_alive(single)
    assert redis.Redis(port=port_of(single)).get("huge") is None


def test_unknown_commands_and_wrong_arity(single):
    out, closed = raw(port_of(single), b"FOO\r\nfoo a b\r\nGET\r\nSET a\r\nINCR a b\r\nEXEC x\r\nPING\r\n")
    assert out == (b"-ERR unknown command 'FOO', with args beginning with: \r\n"
                   b"-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n"
                   b"-ERR wrong number of arguments for 'get' command\r\n"
                   b"-ERR wrong number of arguments for 'set' command\r\n"
                   b"-ERR wrong number of arguments for 'incr' command\r\n"
                   b"-ERR wrong number of arguments for 'exec' command\r\n+PONG\r\n")
    assert not closed
    out, _ = raw(port_of(single), cmd("X" * 300, "a" * 300))  # truncated to 128 bytes, as Redis does
    assert out == b"-ERR unknown command '" + b"X" * 128 + b"', with args beginning with: '" + b"a" * 128 + b"' \r\n"


def test_binary_garbage_never_crashes(single):
    rng = random.Random(7)
    port = port_of(single)
    for i in range(200):
        blob = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 600)))
        if i % 3 == 0:
            blob = b"*" + blob  # garbage that starts like a multibulk
        elif i % 3 == 1:
            blob = cmd("SET", "g", "v")[: rng.randrange(1, 20)] + blob
        try:
            raw(port, blob, wait=0.05, shutdown=True)
        except OSError:
            pass
    assert_alive(single)
    client = redis.Redis(port=port)
    assert client.set("after:garbage", "ok") and client.get("after:garbage") == b"ok"


def test_non_integer_incr_inside_exec_applies_nothing_else_twice(single, r):
    r.set("ni:v", "not-a-number")
    out, _ = raw(port_of(single), b"MULTI\r\nINCR ni:v\r\nINCR ni:c\r\nEXEC\r\n")
    assert out == (b"+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n-ERR value is not an integer or out of range\r\n:1\r\n")
    assert r.get("ni:v") == b"not-a-number" and r.get("ni:c") == b"1"
