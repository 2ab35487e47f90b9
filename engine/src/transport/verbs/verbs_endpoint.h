#pragma once
// VerbsEndpoint: one worker's view of the verbs transport.
//
// Resources: one CQ (with a completion channel) shared by all of the endpoint's RC QPs and by one shared receive queue
// (SRQ) of max_packet-sized buffers; one registered memory block (huge pages when available) holding scratch(), the
// receive buffers, a pool of send buffers and a pool of 8-byte atomic result slots.
//
// Send path: read/write/cas/faa/post_send append an operation to the connection's backlog; flush() posts the
// backlog of every connection as one chain of work requests per QP (one ibv_post_send = one doorbell). Packets and
// writes that fit the QP's max_inline_data are posted inline (their buffer is free right after posting). Operations
// that need no completion are posted unsignaled; every kSignalInterval-th one is signaled anyway, and so is the last
// one of a chain holding a send buffer, so send-queue slots and buffers are reclaimed (a completion retires every
// earlier WR of its QP). When the send queue is full the rest of the backlog is posted by later poll()s.
//
// Failures: an error completion, a DISCONNECTED event or disconnect() take the connection down: every operation still
// pending on it fails (kUnavailable), then kConnDown is delivered; later flush completions of its QP are ignored.
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <chrono>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "common/memory.h"
#include "transport/transport.h"
#include "transport/verbs/verbs_transport_impl.h"
#include "transport/verbs/wire.h"

namespace rdx::transport::verbs {

class VerbsEndpoint final : public Endpoint {
 public:
  static constexpr uint32_t kSqDepth = 128;          // send WRs per QP
  static constexpr uint32_t kSignalInterval = 16;    // at most this many unsignaled WRs in a row
  static constexpr uint32_t kSrqDepth = 256;         // receive buffers per endpoint
  static constexpr uint32_t kSendBuffers = 256;      // packet buffers per endpoint
  static constexpr uint32_t kAtomicSlots = 1024;     // internal CAS/FAA results (callers that pass result=nullptr)
  static constexpr size_t kMaxBacklog = 1u << 16;    // operations queued per connection beyond the send queue
  static constexpr uint32_t kCmCheckInterval = 256;  // poll()s between clock reads for the rdma_cm check
  static constexpr std::chrono::microseconds kCmCheckPeriod{1000};  // rdma_cm channel look when busy polling

  static Result<std::unique_ptr<Endpoint>> create(VerbsTransport& t, uint16_t worker);
  ~VerbsEndpoint() override;

  Result<ConnId> connect(const PeerAddr& peer, uint16_t remote_worker) override;
  void disconnect(ConnId conn) override;
  bool connected(ConnId conn) const override;
  std::span<std::byte> packet_buffer(ConnId conn) override;
  Status post_send(ConnId conn, size_t len) override;
  size_t max_packet() const override { return max_packet_; }
  Status read(ConnId conn, RemotePtr src, void* dst, uint32_t len, uint64_t cookie) override;
  Status write(ConnId conn, RemotePtr dst, const void* src, uint32_t len, uint64_t cookie, bool signaled) override;
  Status write_imm(ConnId conn, RemotePtr dst, const void* src, uint32_t len, uint32_t imm, uint64_t cookie) override;
  Status cas(ConnId conn, RemotePtr dst, uint64_t expected, uint64_t desired, uint64_t* result,
             uint64_t cookie) override;
  Status faa(ConnId conn, RemotePtr dst, uint64_t add, uint64_t* result, uint64_t cookie) override;
  void flush() override;
  size_t poll(std::span<Completion> out) override;
  int wait_fd() const override { return epfd_; }
  void arm() override;
  std::span<std::byte> scratch() override { return {block_.data(), scratch_bytes_}; }
  const EndpointStats& stats() const override { return stats_; }
  uint16_t worker() const override { return worker_; }

 private:
  enum class State : uint8_t { kResolving, kConnecting, kAccepting, kEstablished, kUp, kDown };
  enum class OpClass : uint8_t { kUser, kPacket, kControl };

  // One work request, from enqueue until its completion (or failure) retires it.
  struct Op {
    OpClass cls = OpClass::kUser;
    CompletionKind kind = CompletionKind::kWrite;
    ibv_wr_opcode opcode = IBV_WR_SEND;
    bool user_signaled = false;  // the caller gets a completion on success
    uint32_t len = 0;
    uint32_t lkey = 0;
    uint32_t rkey = 0;
    uint32_t imm = 0;  // host order
    uint64_t local = 0;
    uint64_t remote = 0;
    uint64_t arg0 = 0, arg1 = 0;  // CAS compare/swap, FAA add
    uint64_t cookie = 0;
    uint64_t* result = nullptr;  // CAS/FAA old value lands here
    int32_t buffer = -1;         // send-pool buffer (packets, control messages)
    int32_t atomic_slot = -1;    // internal result slot
  };

  struct Conn {
    State state = State::kResolving;
    bool outgoing = false;
    rdma_cm_id* cm = nullptr;
    ibv_qp* qp = nullptr;
    NodeId peer_node = 0;
    uint16_t peer_worker = 0;
    bool table_received = false;
    bool table_sent = false;
    std::vector<RegionDesc> peer_regions;
    uint32_t max_inline = 0;
    std::deque<Op> backlog;  // not yet posted; the first `released` were flushed by the caller
    size_t released = 0;
    std::vector<Op> slots;          // posted WRs, indexed by sequence % kSqDepth
    uint64_t posted = 0, done = 0;  // WR sequence numbers: [done, posted) are on the send queue
    uint32_t unsignaled_run = 0;
    bool holds_buffers = false;  // an unsignaled WR since the last signaled one keeps a send buffer
    int32_t staged = -1;         // buffer handed out by packet_buffer()
    bool dirty = false;          // in dirty_ (has released backlog)
    Incoming incoming;           // accepted connections: the request
  };

  struct Pending {
    Completion c;
    int32_t recv_buffer = -1;  // kRecv: the SRQ buffer behind c.data, reposted after delivery
  };

  VerbsEndpoint(VerbsTransport& t, uint16_t worker);
  Status init();

  // Connection management (verbs_conn.cc).
  Conn* live(ConnId id);
  const Conn* live(ConnId id) const;
  void adopt_incoming();
  void accept_incoming(const Incoming& in);
  void process_cm_events();
  void on_cm_event(ConnId id, rdma_cm_event_type type, int status, const void* pdata, size_t plen);
  Status create_qp(Conn& c);
  void on_established(ConnId id, const void* pdata, size_t plen);
  void send_region_table(ConnId id);
  void maybe_up(ConnId id);
  void fail(ConnId id, Code code, const std::string& why);
  void destroy_buried();
  bool cm_check_due();

  // Data path (verbs_endpoint.cc).
  Status check_local(const void* p, size_t len, uint32_t* lkey) const;
  bool check_remote(Conn& c, ConnId id, RemotePtr p, uint32_t len, bool atomic, uint64_t* addr, uint32_t* rkey,
                    CompletionKind kind, uint64_t cookie);
  Status issue(ConnId id, Op op, RemotePtr target);
  Status atomic(ConnId conn, CompletionKind kind, RemotePtr dst, uint64_t arg0, uint64_t arg1, uint64_t* result,
                uint64_t cookie);
  void enqueue(Conn& c, ConnId id, Op op);
  void post_backlog(ConnId id);
  void prune_dirty();
  void poll_cq(size_t want);
  void on_send_wc(const ibv_wc& wc);
  void on_recv_wc(const ibv_wc& wc);
  void retire(Conn& c, ConnId id, uint64_t seq, Code status, bool report);
  void release(Op& op);
  void emit(const Conn& c, ConnId id, CompletionKind kind, Code status, uint64_t cookie = 0, uint64_t value = 0);
  void repost_recvs();
  std::byte* recv_buf(uint32_t i) const { return block_.data() + recv_off_ + size_t{i} * max_packet_; }
  std::byte* send_buf(int32_t i) const { return block_.data() + send_off_ + size_t(i) * max_packet_; }
  uint64_t* atomic_buf(int32_t i) const { return reinterpret_cast<uint64_t*>(block_.data() + atomic_off_) + i; }
  Status grow_cq(size_t qps);

  VerbsTransport& transport_;
  const Device& dev_;
  uint16_t worker_;
  size_t max_packet_;
  size_t scratch_bytes_;
  WorkerSlot& slot_;

  MemoryBlock block_;
  size_t recv_off_ = 0, send_off_ = 0, atomic_off_ = 0;
  ibv_mr* mr_ = nullptr;
  ibv_comp_channel* comp_channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  int cq_capacity_ = 0;
  ibv_srq* srq_ = nullptr;
  int epfd_ = -1;
  bool armed_ = false;
  unsigned unacked_cq_events_ = 0;

  std::vector<std::unique_ptr<Conn>> conns_;  // ConnIds are never reused
  std::unordered_map<uint32_t, ConnId> by_qpn_;
  std::vector<ConnId> dirty_;
  std::vector<ConnId> table_unsent_;  // established, region table waiting for send buffers
  std::vector<ConnId> buried_;        // down; QP and cm_id destroyed at the end of poll()
  size_t live_qps_ = 0;
  size_t connecting_ = 0;  // connections in setup: the CM channel is checked on every poll()
  uint32_t polls_ = 0;
  std::chrono::steady_clock::time_point last_cm_check_{};

  std::vector<int32_t> free_send_;
  std::vector<int32_t> free_atomic_;
  std::vector<uint32_t> lent_recvs_;  // delivered in the last poll(); reposted at the next
  std::vector<uint32_t> repost_;      // consumed, to post back to the SRQ
  std::deque<Pending> pending_;
  std::vector<ibv_send_wr> wrs_;
  std::vector<ibv_sge> sges_;
  std::vector<ibv_recv_wr> recv_wrs_;
  std::vector<ibv_sge> recv_sges_;
  EndpointStats stats_;
};

}  // namespace rdx::transport::verbs
