// The tcp backend: the shared conformance suite plus tcp-specific checks of hostile input on the wire.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "common/memory.h"
#include "common/net.h"
#include "transport/tcp/wire.h"
#include "transport/tests/conformance.h"

namespace rdx::transport::testing {
namespace {

BackendParam tcp_param() {
  BackendParam p;
  p.name = "tcp";
  p.config = [](NodeId node, uint16_t workers) {
    TransportConfig c;
    c.kind = "tcp";
    c.node = node;
    c.listen_host = "127.0.0.1";
    c.listen_port = 0;
    c.workers = workers;
    c.hugepages = false;
    return c;
  };
  p.unavailable_reason = [] { return std::string(); };
  p.peer_addr = [](NodeId node, uint16_t port) { return PeerAddr{node, "127.0.0.1", port, ""}; };
  return p;
}

INSTANTIATE_TEST_SUITE_P(Tcp, TransportConformance, ::testing::Values(tcp_param()), param_name);

// A raw client that completes the handshake and then misbehaves.
struct RawPeer {
  net::UniqueFd fd;
  explicit RawPeer(uint16_t port, uint32_t epoch = 1) {
    auto c = net::connect_tcp_nonblocking("127.0.0.1", port);
    EXPECT_TRUE(c.is_ok());
    fd = std::move(c.value());
    tcp::Hello h{tcp::kMagic, tcp::kWireVersion, 9, epoch, 0, 0, 4096, 0};
    EXPECT_TRUE(net::write_full(fd.get(), &h, sizeof(h), 2000).is_ok());
    tcp::Hello reply{};
    EXPECT_TRUE(net::read_full(fd.get(), &reply, sizeof(reply), 2000).is_ok());
    EXPECT_EQ(reply.status, 0u);
  }
  void send_frame(tcp::FrameType type, uint32_t declared_len, const void* body, size_t body_len) {
    tcp::FrameHeader h{declared_len, static_cast<uint8_t>(type), 0, 0, 0, 1, 0, 0};
    ASSERT_TRUE(net::write_full(fd.get(), &h, sizeof(h), 2000).is_ok());
    if (body_len > 0) {
      ASSERT_TRUE(net::write_full(fd.get(), body, body_len, 2000).is_ok());
    }
  }
  bool closed_by_peer(int timeout_ms) {
    char c;
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < until) {
      ssize_t r = ::recv(fd.get(), &c, 1, MSG_DONTWAIT);
      if (r == 0) return true;
      if (r < 0 && errno != EAGAIN) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }
};

struct Server {
  std::unique_ptr<Transport> t;
  std::unique_ptr<Endpoint> ep;
  MemoryBlock region;
  Server() {
    t = make_transport(tcp_param().config(1, 1)).value();
    region = std::move(MemoryBlock::allocate(4096, false).value());
    EXPECT_TRUE(t->register_region(1, region.data(), region.size()).is_ok());
    ep = t->create_endpoint(0).value();
  }
  // Polls until `n` completions of `kind` were seen or the deadline passes.
  int poll_for(CompletionKind kind, int n, int timeout_ms = 3000) {
    Completion cs[16];
    int seen = 0;
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (seen < n && std::chrono::steady_clock::now() < until) {
      size_t got = ep->poll(cs);
      for (size_t i = 0; i < got; ++i) seen += cs[i].kind == kind;
    }
    return seen;
  }
};

TEST(TcpWire, OversizedFrameIsRejectedAndCounted) {
  Server s;
  RawPeer p(s.t->listen_port());
  ASSERT_EQ(s.poll_for(CompletionKind::kConnUp, 1), 1);
  p.send_frame(tcp::FrameType::kPacket, 1u << 30, nullptr, 0);  // declares 1 GiB
  EXPECT_EQ(s.poll_for(CompletionKind::kConnDown, 1), 1);
  EXPECT_EQ(s.ep->stats().rejected_messages, 1u);
  EXPECT_TRUE(p.closed_by_peer(2000));
}

TEST(TcpWire, TruncatedFrameClosesConnectionWithoutDelivery) {
  Server s;
  RawPeer p(s.t->listen_port());
  ASSERT_EQ(s.poll_for(CompletionKind::kConnUp, 1), 1);
  char half[10] = {};
  p.send_frame(tcp::FrameType::kPacket, 100, half, sizeof(half));  // promises 100 bytes, sends 10, then closes
  p.fd.reset();
  Completion cs[16];
  int recv = 0, down = 0;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (down == 0 && std::chrono::steady_clock::now() < until) {
    size_t n = s.ep->poll(cs);
    for (size_t i = 0; i < n; ++i) {
      recv += cs[i].kind == CompletionKind::kRecv;
      down += cs[i].kind == CompletionKind::kConnDown;
    }
  }
  EXPECT_EQ(down, 1);
  EXPECT_EQ(recv, 0);
}

TEST(TcpWire, UnknownFrameTypeAndGarbageAreRejected) {
  Server s;
  RawPeer p(s.t->listen_port());
  ASSERT_EQ(s.poll_for(CompletionKind::kConnUp, 1), 1);
  p.send_frame(static_cast<tcp::FrameType>(77), 0, nullptr, 0);
  EXPECT_EQ(s.poll_for(CompletionKind::kConnDown, 1), 1);
  EXPECT_GE(s.ep->stats().rejected_messages, 1u);

  // Garbage instead of a handshake: refused by the listener, never reaches the endpoint.
  auto c = net::connect_tcp_nonblocking("127.0.0.1", s.t->listen_port()).value();
  char junk[64];
  std::memset(junk, 0xEE, sizeof(junk));
  ASSERT_TRUE(net::write_full(c.get(), junk, sizeof(junk), 2000).is_ok());
  EXPECT_EQ(s.poll_for(CompletionKind::kConnUp, 1, 500), 0);
}

TEST(TcpWire, ShortOneSidedRequestIsRejected) {
  Server s;
  RawPeer p(s.t->listen_port());
  ASSERT_EQ(s.poll_for(CompletionKind::kConnUp, 1), 1);
  char small[4] = {};
  p.send_frame(tcp::FrameType::kReadReq, sizeof(small), small, sizeof(small));  // RemoteOp needs 32 bytes
  EXPECT_EQ(s.poll_for(CompletionKind::kConnDown, 1), 1);
}

TEST(TcpTransport, RejectsUnknownKindAndBadConfig) {
  TransportConfig c = tcp_param().config(1, 1);
  c.kind = "carrier-pigeon";
  auto t = make_transport(c);
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.status().code(), Code::kInvalidArgument);
  EXPECT_NE(t.status().message().find("carrier-pigeon"), std::string::npos);
  c = tcp_param().config(1, 0);
  EXPECT_FALSE(make_transport(c).is_ok());
  c = tcp_param().config(1, 1);
  c.listen_host = "256.1.1.1";
  EXPECT_FALSE(make_transport(c).is_ok());
}

TEST(TcpTransport, RegionsAreSealedOnceEndpointsExist) {
  auto t = make_transport(tcp_param().config(1, 1)).value();
  auto mem = MemoryBlock::allocate(4096, false).value();
  ASSERT_TRUE(t->register_region(1, mem.data(), mem.size()).is_ok());
  EXPECT_EQ(t->register_region(1, mem.data(), mem.size()).code(), Code::kAlreadyExists);
  auto ep = t->create_endpoint(0).value();
  EXPECT_EQ(t->register_region(2, mem.data(), mem.size()).code(), Code::kUnsupported);
}

// A peer whose kernel accepts the TCP connection but whose process never answers the Hello (a hung process, or a
// stale address now owned by something else): the connection fails after connect_timeout_ms, so the caller retries.
TEST(TcpTransport, ConnectionNotUpBeforeTheTimeoutFails) {
  uint16_t port = 0;
  auto silent = net::listen_tcp("127.0.0.1", &port);  // listens, never accepts
  ASSERT_TRUE(silent.is_ok());
  TransportConfig c = tcp_param().config(1, 1);
  c.listen_host.clear();  // a pure client
  c.connect_timeout_ms = 300;
  auto t = make_transport(c).value();
  auto ep = t->create_endpoint(0).value();
  auto start = std::chrono::steady_clock::now();
  auto conn = ep->connect(PeerAddr{2, "127.0.0.1", port, ""}, 0);
  ASSERT_TRUE(conn.is_ok());
  bool down = false, up = false;
  Completion out[16];
  while (!down && std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
    size_t n = ep->poll(out);
    for (size_t i = 0; i < n; ++i) {
      if (out[i].conn != conn.value()) continue;
      up |= out[i].kind == CompletionKind::kConnUp;
      down |= out[i].kind == CompletionKind::kConnDown;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(down) << "the connection never failed";
  EXPECT_FALSE(up);
  EXPECT_GE(waited, std::chrono::milliseconds(250));
  EXPECT_LT(waited, std::chrono::seconds(5));
  EXPECT_FALSE(ep->connected(conn.value()));
  EXPECT_GE(ep->stats().conn_failures, 1u);
}

// A restarted pod has a new IP while DNS may still answer its old one: a node dials a peer at the address the
// peer's latest connection came from, so the name (here one that does not resolve at all) is not needed.
TEST(TcpTransport, DialsAPeerWhereItsConnectionCameFrom) {
  auto polls_up = [](Endpoint& ep, ConnId conn) {
    Completion out[16];
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
         std::chrono::steady_clock::now() < until;) {
      size_t n = ep.poll(out);
      for (size_t i = 0; i < n; ++i) {
        if (out[i].conn != conn) continue;
        if (out[i].kind == CompletionKind::kConnUp) return true;
        if (out[i].kind == CompletionKind::kConnDown) return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
  };
  auto a = make_transport(tcp_param().config(1, 1)).value();
  auto b = make_transport(tcp_param().config(2, 1)).value();
  auto ep_a = a->create_endpoint(0).value();
  auto ep_b = b->create_endpoint(0).value();
  const PeerAddr b_by_stale_name{2, "stale-name.invalid", b->listen_port(), ""};

  auto before = ep_a->connect(b_by_stale_name, 0);  // nothing learned yet: the name is all there is
  EXPECT_TRUE(!before.is_ok() || !polls_up(*ep_a, before.value()));

  auto b_to_a = ep_b->connect(PeerAddr{1, "127.0.0.1", a->listen_port(), ""}, 0);
  ASSERT_TRUE(b_to_a.is_ok());
  ASSERT_TRUE(polls_up(*ep_b, b_to_a.value()));
  auto a_to_b = ep_a->connect(b_by_stale_name, 0);
  ASSERT_TRUE(a_to_b.is_ok()) << a_to_b.status().to_string();
  EXPECT_TRUE(polls_up(*ep_a, a_to_b.value()));

  // An address where another node answers (a reused pod IP) is no connection to the node dialled.
  auto wrong = ep_a->connect(PeerAddr{3, "127.0.0.1", b->listen_port(), ""}, 0);
  ASSERT_TRUE(wrong.is_ok());
  EXPECT_FALSE(polls_up(*ep_a, wrong.value()));

  // What a transport learned is what a node relays to its peers (server/address_relay.h).
  auto learned = b->learned_addresses();
  ASSERT_EQ(learned.size(), 1u);
  EXPECT_EQ(learned[0].node, 1);
  EXPECT_EQ(learned[0].host, "127.0.0.1");
}

// Two nodes that cannot resolve each other's name (pods restarted within one DNS TTL) dial where a third node says
// the other is (suggest_address), until a dial there fails.
TEST(TcpTransport, DialsAPeerWhereAnotherNodeSaysItIs) {
  auto a = make_transport(tcp_param().config(1, 1)).value();
  auto b = make_transport(tcp_param().config(2, 1)).value();
  auto ep_a = a->create_endpoint(0).value();
  auto ep_b = b->create_endpoint(0).value();
  const PeerAddr b_by_stale_name{2, "stale-name.invalid", b->listen_port(), ""};
  auto comes_up = [](Endpoint& ep, Result<ConnId> conn) {
    if (!conn.is_ok()) return false;
    Completion out[16];
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
         std::chrono::steady_clock::now() < until;) {
      size_t n = ep.poll(out);
      for (size_t i = 0; i < n; ++i) {
        if (out[i].conn != conn.value()) continue;
        if (out[i].kind == CompletionKind::kConnUp) return true;
        if (out[i].kind == CompletionKind::kConnDown) return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
  };

  a->suggest_address(2, "127.0.0.2");  // a wrong suggestion (nothing listens there): one failed dial forgets it
  EXPECT_FALSE(comes_up(*ep_a, ep_a->connect(b_by_stale_name, 0)));
  a->suggest_address(2, "127.0.0.1");
  EXPECT_TRUE(comes_up(*ep_a, ep_a->connect(b_by_stale_name, 0)));
  EXPECT_TRUE(a->learned_addresses().empty()) << "a suggestion is not relayed on: only what the transport saw";
  a->suggest_address(1, "127.0.0.2");  // about itself: ignored
  EXPECT_TRUE(a->learned_addresses().empty());
}

}  // namespace
}  // namespace rdx::transport::testing
