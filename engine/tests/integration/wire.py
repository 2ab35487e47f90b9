"""Raw access to a node's tcp transport for tests that send what no client would (engine/src/transport/tcp/wire.h,
engine/src/rpc/wire.h), and free local ports for hand-written topologies."""
import socket
import struct
import time

HELLO = "<IHHIHHII"  # magic, version, src_node, epoch, src_worker, dst_worker, max_packet, status
FRAME = "<IBBBBQII"  # length, type, 3 reserved, sequence, 2 reserved
RPC_PACKET = "<IIHHI"  # magic, epoch, message count, reserved, length
RPC_MESSAGE = "<HBBIQ"  # type, kind (1 request, 2 response), status, length, id


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def wire_epoch(port):
    """The epoch a node's transport and RPC layer check: not the topology's (a membership epoch changes it, and nodes
    of two membership epochs talk) but a fingerprint of what only a restart changes. A refused hello tells it."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(struct.pack(HELLO, 0x52445831, 1, 40002, 0, 0, 0, 65536, 0))
    reply = struct.unpack(HELLO, s.recv(24))
    s.close()
    return reply[3]


def handshake(port, epoch=None, src_node=40000):
    """Connects and says hello (with the node's wire epoch unless one is given); returns the socket and the node's
    hello (its last field is the status, 0 = ok)."""
    epoch = wire_epoch(port) if epoch is None else epoch
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(struct.pack(HELLO, 0x52445831, 1, src_node, epoch, 0, 0, 65536, 0))
    return s, struct.unpack(HELLO, s.recv(24))


def frame(length, ftype, body=b""):
    return struct.pack(FRAME, length, ftype, 0, 0, 0, 1, 0, 0) + body


def rpc_messages(buf):
    """The RPC messages of the complete frames at the start of `buf`: ([(kind, status, id, payload)], what is left)."""
    out = []
    while len(buf) >= 24:
        flen, ftype = struct.unpack_from("<IB", buf)
        if len(buf) < 24 + flen:
            break
        body, buf = buf[24:24 + flen], buf[24 + flen:]
        if ftype != 1:
            continue
        off = 16
        for _ in range(struct.unpack_from(RPC_PACKET, body)[2]):
            _, kind, status, mlen, mid = struct.unpack_from(RPC_MESSAGE, body, off)
            out.append((kind, status, mid, body[off + 16:off + 16 + mlen]))
            off += 16 + mlen
    return out, buf


def rpc_call(port, msg_type, payload, msg_id=7):
    """One request over a raw connection; returns (status, payload) of its response."""
    epoch = wire_epoch(port)
    s, hello = handshake(port, epoch, src_node=40001)
    assert hello[7] == 0, "handshake refused"
    packet = struct.pack(RPC_PACKET, 0x52504331, epoch, 1, 0, 16 + 16 + len(payload))
    packet += struct.pack(RPC_MESSAGE, msg_type, 1, 0, len(payload), msg_id) + payload
    s.sendall(frame(len(packet), 1, packet))
    buf = b""
    deadline = time.time() + 10
    try:
        while time.time() < deadline:
            messages, buf = rpc_messages(buf)
            for kind, status, mid, body in messages:
                if kind == 2 and mid == msg_id:
                    return status, body
            chunk = s.recv(65536)
            assert chunk, "connection closed"
            buf += chunk
    finally:
        s.close()
    raise AssertionError("no response")


def send_requests(port, messages, src_node, dst_worker=0, wait=2.0):
    """Sends `messages` ((type, payload) pairs, as requests with ids 1..n) over one raw connection that says it is node
    `src_node`, and gathers responses for `wait` seconds (a handler that drops a message, or a one-way type, answers
    nothing). Returns {message index: status}; raises when the node refuses the hello or closes the connection."""
    epoch = wire_epoch(port)
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(struct.pack(HELLO, 0x52445831, 1, src_node, epoch, 0, dst_worker, 65536, 0))
    hello = struct.unpack(HELLO, s.recv(24))
    assert hello[7] == 0, "handshake refused"
    for i, (msg_type, payload) in enumerate(messages):
        packet = struct.pack(RPC_PACKET, 0x52504331, epoch, 1, 0, 16 + 16 + len(payload))
        packet += struct.pack(RPC_MESSAGE, msg_type, 1, 0, len(payload), i + 1) + payload
        s.sendall(frame(len(packet), 1, packet))
    statuses, buf = {}, b""
    deadline = time.time() + wait
    s.settimeout(0.2)
    try:
        while time.time() < deadline and len(statuses) < len(messages):
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                continue
            assert chunk, "the node closed the connection"
            answers, buf = rpc_messages(buf + chunk)
            for kind, status, mid, _ in answers:
                if kind == 2 and 1 <= mid <= len(messages):
                    statuses[mid - 1] = status
    finally:
        s.close()
    return statuses
