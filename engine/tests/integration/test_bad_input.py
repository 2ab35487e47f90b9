"""rdxd refuses bad configuration with a clear message and survives hostile network input."""
import json
import os
import socket
import struct
import subprocess
import urllib.error
import urllib.request

from conftest import BIN, wait_until
from wire import RPC_MESSAGE, RPC_PACKET, frame, free_ports, handshake, wire_epoch

RDXD = os.path.join(BIN, "rdxd")


def rdxd(tmp_path, topo, node="n0", timeout=10):
    path = tmp_path / "topology.json"
    path.write_text(topo if isinstance(topo, str) else json.dumps(topo))
    return subprocess.run([RDXD, "--config", str(path), "--node", node], capture_output=True, text=True,
                          timeout=timeout)


def base_topology():
    return {"cluster": "t", "epoch": 1, "transport": {"kind": "tcp"},
            "shards": [{"id": 0, "members": ["n0"]}],
            "nodes": [{"name": "n0", "host": "127.0.0.1", "port": 1, "http_port": 1}]}


def test_malformed_topology_is_refused_clearly(tmp_path):
    p = rdxd(tmp_path, '{"cluster": "t", "epoch": ')
    assert p.returncode == 2 and "not valid JSON" in p.stderr + p.stdout
    t = base_topology()
    t["nodes"][0]["port"] = 99999
    p = rdxd(tmp_path, t)
    assert p.returncode == 2 and "nodes[0].port: 99999 is out of range" in p.stderr + p.stdout


def test_unknown_transport_and_protocol_and_node(tmp_path):
    t = base_topology()
    t["transport"]["kind"] = "smoke-signals"
    p = rdxd(tmp_path, t)
    assert p.returncode == 2 and "'smoke-signals' is not one of: tcp, verbs" in p.stderr + p.stdout
    t = base_topology()
    t["replication"] = {"protocol": "derecho"}
    p = rdxd(tmp_path, t)
    assert p.returncode == 2 and "replication protocol 'derecho' is not implemented" in p.stderr + p.stdout
    p = rdxd(tmp_path, base_topology(), node="n7")
    assert p.returncode == 2 and "node 'n7' is not in the topology" in p.stderr + p.stdout
    p = subprocess.run([RDXD, "--config", "/nonexistent.json"], capture_output=True, text=True, timeout=10)
    assert p.returncode == 2 and "cannot read topology file" in p.stderr + p.stdout


def test_unreachable_peer_keeps_node_unready_then_recovers(cluster):
    cluster.up(nodes=3)
    cluster.kill("n0")  # the primary disappears
    wait_until(lambda: cluster.http("n1", "/readyz")[0] == 503, what="n1 to report not ready")
    code, body = cluster.http("n1", "/readyz")
    assert "peers_up=false" in body
    assert cluster.metric("n1", "rdx_transport_connection_failures_total") > 0
    cluster.start("n0")
    wait_until(lambda: cluster.http("n1", "/readyz")[0] == 200, what="n1 ready again")


def test_readyz_names_the_peer_it_cannot_reach_and_why(tmp_path):
    """A peer whose name does not resolve (a DNS problem in the cluster) keeps the node unready, and /readyz and
    the log say which peer and why instead of a bare 503."""
    port, redis_port, http_port = free_ports(3)
    topo = {"cluster": "t", "epoch": 1, "transport": {"kind": "tcp"},
            "shards": [{"id": 0, "members": ["n0"]}, {"id": 1, "members": ["n1"]}],
            "nodes": [{"name": "n0", "host": "127.0.0.1", "port": port, "redis_port": redis_port,
                       "http_port": http_port},
                      {"name": "n1", "host": "n1.does-not-exist.invalid", "port": 1, "http_port": 1}]}
    path = tmp_path / "topology.json"
    path.write_text(json.dumps(topo))
    log = open(tmp_path / "n0.log", "w")
    p = subprocess.Popen([RDXD, "--config", str(path), "--node", "n0"], stdout=log, stderr=subprocess.STDOUT)
    try:
        def waiting_body():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/readyz", timeout=2) as r:
                    return r.status, r.read().decode()
            except urllib.error.HTTPError as e:
                return e.code, e.read().decode()
            except OSError:
                return 0, ""
        wait_until(lambda: "n1.does-not-exist.invalid" in waiting_body()[1], timeout=30,
                   what="/readyz to name the unresolvable peer")
        code, body = waiting_body()
        assert code == 503 and "waiting_for=[n1 (" in body and "resolve" in body, body
        wait_until(lambda: "still cannot connect to n1" in open(tmp_path / "n0.log").read(), timeout=60,
                   what="a warning in the log")
    finally:
        p.terminate()
        p.wait(timeout=15)
        log.close()


def test_truncated_oversized_and_garbage_messages_are_rejected(cluster):
    cluster.up(nodes=3)
    port = cluster.node("n0")["port"]
    before = cluster.metric("n0", "rdx_transport_rejected_messages_total")
    # Oversized: a packet frame declaring 1 GiB.
    s, reply = handshake(port)
    assert reply[7] == 0
    s.sendall(frame(1 << 30, 1))
    assert s.recv(1) == b""  # the node closes the connection
    # Garbage inside a valid frame: an RPC packet with a bad magic, then one whose message lies about its length.
    s, _ = handshake(port)
    s.sendall(frame(32, 1, b"\xde\xad" * 16))
    s.sendall(frame(48, 1, struct.pack(RPC_PACKET, 0x52504331, wire_epoch(port), 1, 0, 48) + struct.pack(RPC_MESSAGE, 1, 1, 0, 9999, 7)
                    + b"x" * 16))
    # Truncated: a frame that promises 100 bytes and stops at 10.
    s2, _ = handshake(port)
    s2.sendall(frame(100, 1, b"x" * 10))
    s2.close()
    # Wrong epoch and raw garbage instead of a handshake are refused.
    s3, reply3 = handshake(port, epoch=wire_epoch(port) ^ 1)
    assert reply3[7] != 0
    g = socket.create_connection(("127.0.0.1", port), timeout=5)
    g.sendall(os.urandom(64))
    wait_until(lambda: cluster.metric("n0", "rdx_transport_rejected_messages_total") > before, what="rejection counted")
    wait_until(lambda: cluster.metric("n0", "rdx_rpc_bad_packets_total") >= 2, what="bad packets counted")
    s.close()
    g.close()
    # Still serving.
    p, r = cluster.bench("--duration", "1", "--warmup", "0", "--keys", "100", "--threads", "1")
    assert r["errors"]["total"] == 0 and r["ops"] > 0
