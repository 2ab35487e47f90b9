#pragma once
// The transport interface: one per process (Transport), one Endpoint per worker thread. Two real backends implement it:
// `tcp` (any machine) and `verbs` (rdma-core: IB, RoCEv2, soft-RoCE). Protocols and the RPC layer see only this header;
// they never touch sockets or QPs.
//
// Model
// - A node exposes memory regions (RegionId -> bytes). A RemotePtr (node, region, offset) names remote memory;
// protocols
//   pass RemotePtrs around (e.g. a lock RPC returns the record's RemotePtr for a later one-sided READ).
// - Endpoint e of worker w on node A connects to worker w' on node B: a Conn. Over a Conn an endpoint sends packets
//   (two-sided, ordered, reliable, each at most max_packet() bytes) and issues one-sided READ, WRITE, WRITE_WITH_IMM,
//   CAS and FAA against B's regions. Everything is asynchronous: post, flush() (one doorbell for everything posted
//   since the last flush), then poll() for completions.
// - Local buffers of one-sided operations (the READ destination, WRITE source, CAS/FAA result) must lie inside a region
//   registered with this process's Transport or inside the endpoint's scratch() memory (verbs needs them registered;
//   tcp accepts any memory but the rule is the same so code stays portable).
// - CAS and FAA operate on 8-byte aligned 64-bit words and are atomic with respect to each other. Whether they are
//   atomic with respect to the target CPU's own atomics on the same word depends on the backend: tcp yes (the target
//   thread executes them with std::atomic_ref); verbs NO (NICs, and rxe, which does a locked read-modify-write in the
//   kernel, only serialise RDMA atomics among themselves: measured, 1120 of 3000 remote FAAs lost against a local
//   CAS loop). Protocols that mix one-sided atomics with local ones on a word must route the local ones through the
//   transport too (a loopback connection), or not mix them.
// - verbs also enforces what tcp tolerates: RemotePtr.node must be the connection's peer, local buffers must be
//   registered. Both: one endpoint per worker index at a time, endpoints destroyed before their transport, and
//   max_packet equal on both ends.
// - One-sided READ and WRITE copy 8-byte words in ascending address order (tcp guarantees it; RDMA NICs DMA in
//   increasing address order in practice). Readers that must detect concurrent writers use version words laid out for
//   that order (store/record.h) and never trust a READ without validating them.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/registry.h"
#include "common/status.h"

namespace rdx::transport {

using NodeId = uint16_t;    // nodes of the topology; clients use ids >= kFirstClientNode
using RegionId = uint16_t;  // per node
using ConnId = uint32_t;    // index of a connection inside one Endpoint
inline constexpr NodeId kFirstClientNode = 0x8000;

struct RemotePtr {
  NodeId node = 0;
  RegionId region = 0;
  uint64_t offset = 0;
  RemotePtr plus(uint64_t delta) const { return {node, region, offset + delta}; }
};

// Where a peer listens. For verbs, `rdma_addr` (if non-empty) is the IP librdmacm resolves the device from; the
// bootstrap uses host:port over TCP either way.
struct PeerAddr {
  NodeId node = 0;
  std::string host;
  uint16_t port = 0;
  std::string rdma_addr;
};

enum class CompletionKind : uint8_t {
  kRecv,      // a packet arrived: data valid until the next poll()
  kRecvImm,   // a peer's WRITE_WITH_IMM landed in our region: imm set, data = the written bytes if known, else empty
  kRead,      // one-sided READ done: local destination filled
  kWrite,     // signaled WRITE / WRITE_WITH_IMM done
  kCas,       // CAS done: value = old value at the target (also stored at the local result pointer)
  kFaa,       // FAA done: value = old value
  kConnUp,    // connection established (outgoing or accepted); conn, peer_node, peer_worker set
  kConnDown,  // connection lost (peer died, closed, or error); every operation still pending on it fails first
};

struct Completion {
  CompletionKind kind = CompletionKind::kRecv;
  Code status =
      Code::kOk;  // non-OK: the operation failed (kUnavailable on a dead peer, kInvalidArgument on a bad region)
  ConnId conn = 0;
  uint64_t cookie = 0;  // caller's id of the operation (one-sided ops)
  uint64_t value = 0;   // CAS/FAA old value
  uint32_t imm = 0;     // kRecvImm
  NodeId peer_node = 0;
  uint16_t peer_worker = 0;
  std::span<const std::byte> data;  // kRecv payload
};

struct EndpointStats {
  uint64_t packets_sent = 0, packets_received = 0, bytes_sent = 0, bytes_received = 0;
  uint64_t doorbells = 0;          // flush() calls that posted something (verbs: ibv_post_send calls)
  uint64_t onesided_issued = 0;    // READ/WRITE/CAS/FAA issued by this endpoint
  uint64_t onesided_served = 0;    // tcp: one-sided ops from peers executed by this endpoint's thread (emulated)
  uint64_t rejected_messages = 0;  // malformed/oversized frames dropped (peer connection closed)
  uint64_t inline_sends = 0;       // verbs: sends posted with IBV_SEND_INLINE
  uint64_t conn_failures = 0;      // connects that failed or connections lost
};

class Endpoint {
 public:
  virtual ~Endpoint() = default;

  // Starts connecting to `remote_worker` of `peer`; completes with kConnUp or kConnDown. Never blocks on the network.
  virtual Result<ConnId> connect(const PeerAddr& peer, uint16_t remote_worker) = 0;
  virtual void disconnect(ConnId conn) = 0;
  virtual bool connected(ConnId conn) const = 0;

  // Two-sided. packet_buffer() returns a writable buffer of max_packet() bytes for the next packet to `conn`
  // (empty if the connection is down or out of send credits; then retry after poll()); post_send() queues it.
  virtual std::span<std::byte> packet_buffer(ConnId conn) = 0;
  virtual Status post_send(ConnId conn, size_t len) = 0;
  virtual size_t max_packet() const = 0;

  // One-sided. Completions carry `cookie`. write() with signaled=false completes silently unless it fails.
  // A RemotePtr outside the peer's registered regions (unknown region, out of bounds, misaligned atomic) completes
  // with status kInvalidArgument and the connection stays usable. A non-OK Status return means nothing was queued
  // (connection not up, length over the backend's limit).
  virtual Status read(ConnId conn, RemotePtr src, void* dst, uint32_t len, uint64_t cookie) = 0;
  virtual Status write(ConnId conn, RemotePtr dst, const void* src, uint32_t len, uint64_t cookie, bool signaled) = 0;
  virtual Status write_imm(ConnId conn, RemotePtr dst, const void* src, uint32_t len, uint32_t imm,
                           uint64_t cookie) = 0;
  virtual Status cas(ConnId conn, RemotePtr dst, uint64_t expected, uint64_t desired, uint64_t* result,
                     uint64_t cookie) = 0;
  virtual Status faa(ConnId conn, RemotePtr dst, uint64_t add, uint64_t* result, uint64_t cookie) = 0;

  // Posts everything queued since the last flush (doorbell batching).
  virtual void flush() = 0;
  // Non-blocking: fills `out` with up to out.size() completions; returns how many. Also serves emulated one-sided ops
  // (tcp) and accepts incoming connections handed over by the Transport.
  virtual size_t poll(std::span<Completion> out) = 0;

  // Blocking support (completion channel / epoll): after arm(), wait_fd() becomes readable when poll() may return
  // something. Callers: arm(); poll() once more (to close the race); then wait on the fd.
  virtual int wait_fd() const = 0;
  virtual void arm() = 0;

  // Registered scratch memory private to this endpoint, for local buffers of one-sided ops.
  virtual std::span<std::byte> scratch() = 0;

  virtual const EndpointStats& stats() const = 0;
  virtual uint16_t worker() const = 0;
};

struct LearnedAddress {
  NodeId node = 0;
  std::string host;  // an IPv4 address
};

struct TransportConfig {
  std::string kind = "tcp";  // tcp | verbs
  NodeId node = 0;           // this process's node id
  std::string listen_host;   // empty: do not listen (pure clients); "0.0.0.0" or an address
  uint16_t listen_port = 0;  // 0 with listen_host set: pick a free port (see Transport::listen_port())
  uint16_t workers = 1;      // number of endpoints that will be created (accepted connections are routed by worker)
  uint32_t epoch = 1;        // connections from other epochs are refused
  size_t max_packet = 4096;  // bytes per packet (verbs: also the RECV buffer size)
  // An outgoing connection that is not up after this long fails (kConnDown) so the caller retries and resolves the
  // peer's name again: a SYN to the stale address of a restarted pod would otherwise wait minutes for the kernel.
  uint32_t connect_timeout_ms = 5000;
  size_t scratch_bytes = 1 << 20;  // per-endpoint scratch
  bool hugepages = true;
  // verbs
  std::string device;          // ibv device name; empty = resolve from rdma address
  int gid_index = -1;          // -1 = detect
  std::string rdma_interface;  // interface to take the local RDMA IP from (empty: the one of listen/rdma address)
  std::string rdma_addr;       // local RDMA IP (overrides rdma_interface)
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Makes [base, base+len) addressable by peers as (this node, id, offset). All regions are registered before the
  // first create_endpoint() (the store pre-allocates its arena; RDMA stores pre-register for the same reason), so
  // every connection learns the complete region table when it is established. Later calls fail with kUnsupported.
  virtual Status register_region(RegionId id, void* base, size_t len) = 0;
  // Creates the endpoint of worker `worker` (0..workers-1). Call from the thread that will use it.
  virtual Result<std::unique_ptr<Endpoint>> create_endpoint(uint16_t worker) = 0;
  virtual uint16_t listen_port() const = 0;
  virtual std::string kind() const = 0;

  // Where data nodes are, as this transport learned from their accepted connections (tcp: the source IP; a restarted
  // pod's new IP, which DNS may not answer yet). Empty for a transport that learns none.
  virtual std::vector<LearnedAddress> learned_addresses() const { return {}; }
  // An address another node learned for `node` (server/address_relay.h): dialed when this transport learned none of
  // its own, until a dial there fails. A transport that dials by other means ignores it.
  virtual void suggest_address(NodeId /*node*/, const std::string& /*host*/) {}
};

// The transports of this build (common/registry.h): tcp always, verbs when built with rdma-core.
struct TransportEntry {
  std::string_view name;
  Result<std::unique_ptr<Transport>> (*make)(const TransportConfig& cfg);
  std::string_view summary;
};
const Registry<TransportEntry>& transports();

// Factory for the configured backend. kind "verbs" fails with kUnsupported when no RDMA device is present; kinds
// this build does not have fail with kInvalidArgument naming those it has.
Result<std::unique_ptr<Transport>> make_transport(const TransportConfig& cfg);

// True when this machine has at least one RDMA device usable by the verbs backend (for tests to report "not run").
bool verbs_available(std::string* why_not);

}  // namespace rdx::transport
