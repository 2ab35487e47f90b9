#pragma once
#include <chrono>
#include <deque>
#include <memory>
#include <vector>

#include "common/memory.h"
#include "common/net.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/tcp/wire.h"
#include "transport/transport.h"

namespace rdx::transport::tcp {

class TcpEndpoint final : public Endpoint {
 public:
  static Result<std::unique_ptr<Endpoint>> create(TcpTransport& t, uint16_t worker);
  ~TcpEndpoint() override;

  Result<ConnId> connect(const PeerAddr& peer, uint16_t remote_worker) override;
  void disconnect(ConnId conn) override;
  bool connected(ConnId conn) const override;
  std::span<std::byte> packet_buffer(ConnId conn) override;
  Status post_send(ConnId conn, size_t len) override;
  size_t max_packet() const override { return transport_.config().max_packet; }
  Status read(ConnId conn, RemotePtr src, void* dst, uint32_t len, uint64_t cookie) override;
  Status write(ConnId conn, RemotePtr dst, const void* src, uint32_t len, uint64_t cookie, bool signaled) override;
  Status write_imm(ConnId conn, RemotePtr dst, const void* src, uint32_t len, uint32_t imm, uint64_t cookie) override;
  Status cas(ConnId conn, RemotePtr dst, uint64_t expected, uint64_t desired, uint64_t* result,
             uint64_t cookie) override;
  Status faa(ConnId conn, RemotePtr dst, uint64_t add, uint64_t* result, uint64_t cookie) override;
  void flush() override;
  size_t poll(std::span<Completion> out) override;
  int wait_fd() const override { return epfd_.get(); }
  void arm() override {}
  std::span<std::byte> scratch() override { return scratch_.span(); }
  const EndpointStats& stats() const override { return stats_; }
  uint16_t worker() const override { return worker_; }

  // Frames larger than this are protocol violations (the connection is closed and counted).
  static constexpr uint32_t kMaxOneSidedBytes = 2u << 20;

 private:
  enum class State : uint8_t { kConnecting, kHandshake, kUp, kDown };
  struct PendingOp {
    CompletionKind kind;
    uint64_t op_id;
    uint64_t cookie;
    void* dst;  // READ destination
    uint32_t len;
    uint64_t* result;  // CAS/FAA
    bool signaled;
  };
  struct Conn {
    net::UniqueFd fd;
    State state = State::kConnecting;
    NodeId peer_node = 0;
    uint16_t peer_worker = 0;
    std::vector<std::byte> out;  // bytes [out_sent, size) still to write
    size_t out_sent = 0;
    bool want_out = false;      // EPOLLOUT armed
    std::vector<std::byte> in;  // bytes [in_begin, in_end) received, not yet parsed
    size_t in_begin = 0, in_end = 0;
    size_t grow_to = 0;                                   // a frame larger than `in` is pending
    bool peer_closed = false;                             // EOF seen; buffered frames are still delivered
    std::deque<PendingOp> pending;                        // one response per request, in order
    std::vector<std::byte> stage;                         // packet_buffer()
    std::chrono::steady_clock::time_point up_deadline{};  // outgoing connections: fail if not up by then
    std::string dialed;                                   // outgoing connections: the host dialed
  };

  TcpEndpoint(TcpTransport& t, uint16_t worker, net::UniqueFd epfd, MemoryBlock scratch);
  Conn* live(ConnId c);
  const Conn* live(ConnId c) const;
  ConnId add_conn(net::UniqueFd fd, State st, NodeId node, uint16_t worker);
  void adopt_accepted();
  // Fails outgoing connections whose handshake has not completed by their deadline.
  void expire_opening();
  void on_writable(ConnId id);
  void read_socket(ConnId id);
  // Parses complete frames; returns false if the connection was closed for a protocol violation.
  bool parse_frames(ConnId id, std::span<Completion> out, size_t& n);
  bool handle_frame(ConnId id, const FrameHeader& h, std::span<const std::byte> body, std::span<Completion> out,
                    size_t& n);
  void serve_remote_op(ConnId id, const FrameHeader& h, std::span<const std::byte> body, std::span<Completion> out,
                       size_t& n);
  bool complete_local_op(ConnId id, const FrameHeader& h, std::span<const std::byte> body, std::span<Completion> out,
                         size_t& n);
  void fail(ConnId id, const char* why);
  Status queue_op(ConnId conn, FrameType type, const RemoteOp& op, const void* data, uint32_t data_len, uint32_t imm,
                  uint8_t flags, PendingOp pending);
  void append_frame(Conn& c, FrameType type, uint8_t status, uint64_t op_id, const void* a, size_t alen,
                    const void* b = nullptr, size_t blen = 0, uint32_t imm = 0, uint8_t flags = 0);
  void update_epoll(ConnId id);
  void write_out(ConnId id);

  TcpTransport& transport_;
  uint16_t worker_;
  net::UniqueFd epfd_;
  MemoryBlock scratch_;
  std::vector<std::unique_ptr<Conn>> conns_;             // ConnIds are never reused
  std::deque<Completion> deferred_;                      // completions without payload, delivered first
  std::vector<ConnId> opening_;                          // outgoing connections not up yet (see expire_opening)
  std::vector<std::vector<std::byte>> retired_buffers_;  // receive buffers of connections that failed this poll
  uint64_t next_op_id_ = 1;
  EndpointStats stats_;
};

}  // namespace rdx::transport::tcp
