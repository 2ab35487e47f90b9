#pragma once
// The RPC layer of one worker thread: message flows over one transport Endpoint, with
// - opportunistic per-destination batching: messages queue into the open packet of their destination and every
//   flush() sends what is there (never waits to fill a batch); caps by bytes and message count;
// - handlers registered per message type;
// - request/response with ids (co_await rpc.call(...)), one-way messages, and ackable messages acknowledged by
//   smart acks: one kAckRange covers every consecutive id of a (connection, type) completed since the last flush;
// - one-sided operations as awaitables (co_await rpc.read(...)), so protocols mix both primitives in one coroutine.
// Not thread-safe: one Rpc per worker, used only from that worker's thread.
#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "rpc/task.h"
#include "rpc/wire.h"
#include "transport/transport.h"

namespace rdx::rpc {

using MsgType = uint16_t;
using transport::ConnId;

// The message types one service or protocol owns: `count` types from `first`. Ranges are assigned in one table
// (cluster/msg_ids.h) and in the protocol registries, and never overlap; a protocol names its messages by offset.
struct MsgRange {
  MsgType first = 0;
  uint16_t count = 0;
  constexpr MsgType at(uint16_t offset) const { return static_cast<MsgType>(first + (offset < count ? offset : 0)); }
  constexpr bool contains(MsgType t) const { return t >= first && t - first < count; }
  constexpr bool overlaps(const MsgRange& o) const { return first < o.first + o.count && o.first < first + count; }
  constexpr MsgType last() const { return static_cast<MsgType>(first + count - 1); }
};

struct RpcConfig {
  uint32_t epoch = 1;
  bool batching = true;           // false: one message per packet, each sent on its own (for comparison)
  size_t max_batch_bytes = 4096;  // packet bytes before a batch is closed (<= the endpoint's max_packet)
  size_t max_batch_messages = 64;
  std::chrono::milliseconds call_timeout{5000};
};

struct Response {
  Code status = Code::kOk;
  std::string payload;
};

// Enough to answer a message later (asynchronous handlers).
struct ReplyTo {
  ConnId conn = 0;
  uint64_t id = 0;
  MsgKind kind = MsgKind::kOneway;
  MsgType type = 0;
};

struct Incoming {
  ConnId conn;
  MsgType type;
  MsgKind kind;
  uint64_t id;
  transport::NodeId peer_node;
  std::span<const std::byte> payload;  // valid only during the handler call
  ReplyTo reply_to() const { return {conn, id, kind, type}; }
};

using Handler = std::function<void(const Incoming&)>;
using ConnHandler = std::function<void(const transport::Completion&)>;

struct RpcStats {
  uint64_t messages_sent = 0, packets_sent = 0, messages_received = 0, packets_received = 0;
  uint64_t bad_packets = 0;    // malformed packets dropped whole
  uint64_t unknown_types = 0;  // messages without a handler (requests get kUnsupported)
  uint64_t ack_ranges_sent = 0, acks_covered = 0;
  uint64_t calls_failed = 0, calls_timed_out = 0, late_responses = 0;
};

class Rpc;

// co_await rpc.call(conn, type, payload) -> Response
class CallAwaiter {
 public:
  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> h);
  Response await_resume() { return std::move(resp_); }

 private:
  friend class Rpc;
  CallAwaiter(Rpc* rpc, ConnId conn, MsgType type, MsgKind kind, std::span<const std::byte> payload)
      : rpc_(rpc), conn_(conn), type_(type), kind_(kind), payload_(payload) {}
  Rpc* rpc_;
  ConnId conn_;
  MsgType type_;
  MsgKind kind_;
  std::span<const std::byte> payload_;
  std::coroutine_handle<> handle_;
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::milliseconds timeout_{0};  // 0: the Rpc's call_timeout
  Response resp_;
};

// co_await rpc.read/write/cas/faa(...) -> OneSidedResult
struct OneSidedResult {
  Code status = Code::kOk;
  uint64_t value = 0;  // CAS/FAA old value
};

class OneSidedAwaiter {
 public:
  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> h);
  OneSidedResult await_resume() const { return result_; }

 private:
  friend class Rpc;
  enum class Op : uint8_t { kRead, kWrite, kCas, kFaa };
  Rpc* rpc_ = nullptr;
  Op op_ = Op::kRead;
  ConnId conn_ = 0;
  transport::RemotePtr remote_;
  void* local_ = nullptr;
  uint32_t len_ = 0;
  uint64_t arg0_ = 0, arg1_ = 0;
  std::coroutine_handle<> handle_;
  OneSidedResult result_;
};

class Rpc {
 public:
  Rpc(transport::Endpoint& ep, Scheduler& sched, RpcConfig cfg);
  Rpc(const Rpc&) = delete;
  Rpc& operator=(const Rpc&) = delete;
  ~Rpc();

  // Registers the handler of `type`; a type that already has one is refused (two services claiming one message
  // type is a wiring error that would otherwise silently drop one of them).
  Status on(MsgType type, Handler h);
  void on_connection(ConnHandler h) { conn_handler_ = std::move(h); }

  // Request/response. The payload is copied when the awaiter suspends.
  CallAwaiter call(ConnId conn, MsgType type, std::span<const std::byte> payload) {
    return CallAwaiter(this, conn, type, MsgKind::kRequest, payload);
  }
  // The same with its own timeout (e.g. heartbeats, which must not outlive the failure timeout).
  CallAwaiter call(ConnId conn, MsgType type, std::span<const std::byte> payload, std::chrono::milliseconds timeout) {
    CallAwaiter a(this, conn, type, MsgKind::kRequest, payload);
    a.timeout_ = timeout;
    return a;
  }
  // A request as a task that owns its payload, to await several at once (when_all). timeout 0: the call timeout.
  Task<Response> call_task(ConnId conn, MsgType type, std::string payload,
                           std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  // Ackable: completes (status kOk) when the receiver's smart ack covers it, or fails (kUnavailable/kTimeout).
  CallAwaiter call_ackable(ConnId conn, MsgType type, std::span<const std::byte> payload) {
    return CallAwaiter(this, conn, type, MsgKind::kAckable, payload);
  }
  Status send_oneway(ConnId conn, MsgType type, std::span<const std::byte> payload);

  void respond(const ReplyTo& to, Code status, std::span<const std::byte> payload = {});
  void ack(const ReplyTo& to);
  // Answers an ackable message with a failure (`status`, not kOk): its call fails with it at once, and the
  // message counts as done for the smart acks (the ones after it are not held up).
  void refuse(const ReplyTo& to, Code status);

  OneSidedAwaiter read(ConnId c, transport::RemotePtr src, void* dst, uint32_t len);
  OneSidedAwaiter write(ConnId c, transport::RemotePtr dst, const void* src, uint32_t len);
  OneSidedAwaiter cas(ConnId c, transport::RemotePtr dst, uint64_t expected, uint64_t desired, uint64_t* result);
  OneSidedAwaiter faa(ConnId c, transport::RemotePtr dst, uint64_t add, uint64_t* result);

  // Polls the endpoint once and dispatches what arrived (handlers run inline; resumed coroutines go to the
  // scheduler). Returns the number of completions handled.
  size_t poll();
  // Closes open batches, emits coalesced acks, and rings the doorbell.
  void flush();

  size_t max_message_payload() const;
  // Calls and ackable messages still waiting for their answer (their coroutines are suspended).
  size_t pending_calls() const;
  // Fails every call and ackable message still waiting for an answer on `conn` (kUnavailable), keeping the
  // connection: its peer was declared failed, so nobody should wait for it any more. Late answers are dropped.
  void abandon_calls(ConnId conn);
  const RpcStats& stats() const { return stats_; }
  // Tests (rdxd --test-partition): while *peer holds a node id, every message from that node is dropped unread.
  void drop_messages_from(const std::atomic<int32_t>* peer) { drop_from_ = peer; }
  transport::Endpoint& endpoint() { return ep_; }
  Scheduler& scheduler() { return sched_; }
  const RpcConfig& config() const { return cfg_; }

 private:
  friend class CallAwaiter;
  friend class OneSidedAwaiter;

  struct AckRecv {              // receiver side of one (connection, type) ackable flow
    uint64_t next = 1;          // lowest id not yet acknowledged by the handler
    uint64_t emitted_upto = 0;  // last id covered by an emitted range
    std::set<uint64_t> done_ahead;
  };
  struct AckSend {  // sender side
    uint64_t next_seq = 1;
    std::deque<std::pair<uint64_t, CallAwaiter*>> pending;
  };
  struct ConnState {
    std::vector<std::byte> open;  // the open batch (PacketHeader + messages)
    uint16_t open_count = 0;
    std::deque<std::vector<std::byte>> closed;  // batches waiting for send credit
    std::map<MsgType, AckRecv> ack_recv;
    std::map<MsgType, AckSend> ack_send;
    bool acks_dirty = false;
    transport::NodeId peer_node = 0;
  };

  ConnState& conn_state(ConnId c);
  Status append(ConnId c, const MsgHeader& h, std::span<const std::byte> payload);
  void close_batch(ConnState& cs);
  bool start_call(CallAwaiter* a);
  bool start_onesided(OneSidedAwaiter* a);
  void on_packet(const transport::Completion& cp);
  void on_message(ConnId conn, const MsgHeader& h, std::span<const std::byte> payload);
  void on_onesided(const transport::Completion& cp);
  void on_conn_down(ConnId conn);
  void emit_acks(ConnId c, ConnState& cs);
  void expire_calls();
  void finish_call(CallAwaiter* a, Code status, std::span<const std::byte> payload);

  transport::Endpoint& ep_;
  Scheduler& sched_;
  RpcConfig cfg_;
  std::vector<Handler> handlers_;
  ConnHandler conn_handler_;
  std::vector<ConnState> conns_;
  std::unordered_map<uint64_t, CallAwaiter*> calls_;
  uint64_t next_call_id_ = 1;
  std::chrono::steady_clock::time_point next_expiry_check_{};
  RpcStats stats_;
  const std::atomic<int32_t>* drop_from_ = nullptr;
};

// Payload helpers: messages are plain structs plus byte strings, copied with memcpy.
template <typename T>
requires std::is_trivially_copyable_v<T> std::span<const std::byte> as_bytes_of(const T& v) {
  return {reinterpret_cast<const std::byte*>(&v), sizeof(T)};
}
inline std::span<const std::byte> as_bytes_of(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}
inline std::span<const std::byte> as_bytes_of(const std::string& s) { return as_bytes_of(std::string_view(s)); }

}  // namespace rdx::rpc
