// verbs-specific behaviour on a real RDMA device (soft-RoCE in the VM): doorbell batching, inlining, selective
// signaling under send-queue pressure, buffer recycling, worker routing, local-buffer rules, ordering of failures.
// Without a device every case skips with "verbs tests NOT RUN: <reason>".
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>

#include "common/memory.h"
#include "transport/verbs/tests/verbs_env.h"
#include "transport/verbs/verbs_endpoint.h"
#include "transport/verbs/verbs_transport.h"

namespace rdx::transport::verbs {
namespace {

using Clock = std::chrono::steady_clock;

// One line up front that says the device tests did not run and why (each skipped test repeats it).
class NotRunBanner : public ::testing::Environment {
 public:
  void SetUp() override {
    if (verbs_env().addr.empty()) std::printf("verbs tests NOT RUN: %s\n", verbs_env().why_not.c_str());
  }
};
[[maybe_unused]] const ::testing::Environment* const kBanner = ::testing::AddGlobalTestEnvironment(new NotRunBanner);

class VerbsBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    if (verbs_env().addr.empty()) GTEST_SKIP() << "verbs tests NOT RUN: " << verbs_env().why_not;
  }

  struct Node {
    std::unique_ptr<Transport> t;
    MemoryBlock region;
    std::vector<std::unique_ptr<Endpoint>> eps;
  };

  static Node node(NodeId id, uint16_t workers, bool hugepages = false, uint16_t endpoints = 1) {
    Node n;
    TransportConfig cfg = verbs_test_config(id, workers);
    cfg.hugepages = hugepages;
    auto t = make_verbs_transport(cfg);
    EXPECT_TRUE(t.is_ok()) << t.status().to_string();
    n.t = std::move(t.value());
    n.region = std::move(MemoryBlock::allocate(1 << 20, hugepages).value());
    EXPECT_TRUE(n.t->register_region(1, n.region.data(), n.region.size()).is_ok());
    for (uint16_t w = 0; w < endpoints; ++w) n.eps.push_back(std::move(n.t->create_endpoint(w).value()));
    return n;
  }

  // Polls until `done` or 30 s; every completion goes to `on`.
  static bool pump(std::vector<Endpoint*> eps, const std::function<bool()>& done,
                   const std::function<void(Endpoint*, const Completion&)>& on) {
    Completion cs[32];
    auto until = Clock::now() + std::chrono::seconds(30);
    while (!done()) {
      if (Clock::now() > until) return false;
      for (Endpoint* e : eps) {
        e->flush();
        size_t n = e->poll(cs);
        for (size_t i = 0; i < n; ++i) on(e, cs[i]);
      }
    }
    return true;
  }

  // a.eps[0] -> b.eps[worker]; returns (conn on a, conn on b).
  static std::pair<ConnId, ConnId> connect(Node& a, Node& b, uint16_t worker = 0) {
    ConnId ab = a.eps[0]->connect(verbs_peer(2, b.t->listen_port()), worker).value();
    ConnId ba = 0;
    bool up_a = false, up_b = false;
    EXPECT_TRUE(pump(
        {a.eps[0].get(), b.eps[worker].get()}, [&] { return up_a && up_b; },
        [&](Endpoint* e, const Completion& c) {
          if (c.kind != CompletionKind::kConnUp) return;
          if (e == a.eps[0].get())
            up_a = true;
          else {
            up_b = true;
            ba = c.conn;
          }
        }));
    return {ab, ba};
  }
};

TEST_F(VerbsBackend, BatchesDoorbellsInlinesSmallPacketsAndKeepsOrder) {
  Node a = node(1, 1), b = node(2, 1);
  auto [ab, ba] = connect(a, b);
  Endpoint& ea = *a.eps[0];
  const EndpointStats before = ea.stats();
  constexpr int kPackets = 64;
  for (int i = 0; i < kPackets; ++i) {
    auto buf = ea.packet_buffer(ab);
    ASSERT_FALSE(buf.empty());
    std::memcpy(buf.data(), &i, sizeof(i));
    ASSERT_TRUE(ea.post_send(ab, 32).is_ok());
  }
  ea.flush();
  EXPECT_EQ(ea.stats().doorbells - before.doorbells, 1u) << "64 packets, one ibv_post_send";
  EXPECT_EQ(ea.stats().inline_sends - before.inline_sends, uint64_t{kPackets}) << "32-byte packets go inline";
  int got = 0;
  ASSERT_TRUE(pump(
      {&ea, b.eps[0].get()}, [&] { return got == kPackets; },
      [&](Endpoint* e, const Completion& c) {
        if (e != b.eps[0].get() || c.kind != CompletionKind::kRecv) return;
        int v;
        std::memcpy(&v, c.data.data(), sizeof(v));
        EXPECT_EQ(v, got++);
        EXPECT_EQ(c.conn, ba);
      }));
}

TEST_F(VerbsBackend, LargePacketsRecycleSendBuffers) {
  Node a = node(1, 1), b = node(2, 1);
  auto [ab, ba] = connect(a, b);
  Endpoint& ea = *a.eps[0];
  const size_t big = ea.max_packet();
  constexpr uint64_t kPackets = 3 * VerbsEndpoint::kSendBuffers;  // only completes if buffers come back
  uint64_t sent = 0, got = 0;
  ASSERT_TRUE(pump(
      {&ea, b.eps[0].get()},
      [&] {
        while (sent < kPackets) {
          auto buf = ea.packet_buffer(ab);
          if (buf.empty()) break;
          std::memset(buf.data(), static_cast<int>(sent & 0xff), big);
          std::memcpy(buf.data(), &sent, sizeof(sent));
          EXPECT_TRUE(ea.post_send(ab, big).is_ok());
          ++sent;
        }
        return got == kPackets;
      },
      [&](Endpoint* e, const Completion& c) {
        if (e != b.eps[0].get() || c.kind != CompletionKind::kRecv) return;
        ASSERT_EQ(c.data.size(), big);
        uint64_t seq;
        std::memcpy(&seq, c.data.data(), sizeof(seq));
        EXPECT_EQ(seq, got);
        EXPECT_EQ(c.data[big - 1], std::byte(seq & 0xff));
        ++got;
      }));
  EXPECT_EQ(ea.stats().bytes_sent, kPackets * big);
  EXPECT_EQ(b.eps[0]->stats().bytes_received, kPackets * big);
}

TEST_F(VerbsBackend, ManyUnsignaledWritesBeyondTheSendQueueThenARead) {
  Node a = node(1, 1), b = node(2, 1);
  auto [ab, ba] = connect(a, b);
  Endpoint& ea = *a.eps[0];
  auto scratch = ea.scratch();
  constexpr uint64_t kWrites = 10 * VerbsEndpoint::kSqDepth;
  // Each write stores its index into its own 8-byte slot; only the final READ is signaled.
  auto* src = reinterpret_cast<uint64_t*>(scratch.data());
  for (uint64_t i = 0; i < kWrites; ++i) {
    src[i] = i + 1;
    ASSERT_TRUE(ea.write(ab, {2, 1, i * 8}, &src[i], 8, i, false).is_ok());
  }
  auto* dst = reinterpret_cast<uint64_t*>(scratch.data() + kWrites * 8);
  ASSERT_TRUE(ea.read(ab, {2, 1, 0}, dst, kWrites * 8, 999).is_ok());
  ea.flush();
  int completions = 0;
  bool read_done = false;
  ASSERT_TRUE(pump(
      {&ea, b.eps[0].get()}, [&] { return read_done; },
      [&](Endpoint* e, const Completion& c) {
        if (e != &ea) return;
        ++completions;
        if (c.cookie == 999) {
          read_done = true;
          EXPECT_EQ(c.status, Code::kOk);
        }
      }));
  EXPECT_EQ(completions, 1) << "unsignaled writes complete silently";
  for (uint64_t i = 0; i < kWrites; ++i) ASSERT_EQ(dst[i], i + 1) << "READ after WRITEs on one QP sees them";
  EXPECT_GT(ea.stats().doorbells, kWrites / VerbsEndpoint::kSqDepth) << "the backlog is posted in send-queue chunks";
}

TEST_F(VerbsBackend, RoutesByWorkerAndQueuesConnectionsUntilTheEndpointExists) {
  Node a = node(1, 1);
  Node b = node(2, 2, false, /*endpoints=*/0);
  ConnId ab = a.eps[0]->connect(verbs_peer(2, b.t->listen_port()), 1).value();
  // No endpoint for worker 1 yet: the request waits in the transport.
  Completion cs[8];
  auto t0 = Clock::now();
  while (Clock::now() - t0 < std::chrono::milliseconds(300)) {
    a.eps[0]->poll(cs);
    ASSERT_FALSE(a.eps[0]->connected(ab));
  }
  b.eps.push_back(std::move(b.t->create_endpoint(0).value()));
  b.eps.push_back(std::move(b.t->create_endpoint(1).value()));
  EXPECT_FALSE(b.t->create_endpoint(1).is_ok()) << "one endpoint per worker";
  bool up_a = false, up_b1 = false;
  ASSERT_TRUE(pump(
      {a.eps[0].get(), b.eps[0].get(), b.eps[1].get()}, [&] { return up_a && up_b1; },
      [&](Endpoint* e, const Completion& c) {
        if (c.kind != CompletionKind::kConnUp) return;
        EXPECT_NE(e, b.eps[0].get()) << "worker 0 must not get worker 1's connection";
        if (e == a.eps[0].get()) {
          up_a = true;
          EXPECT_EQ(c.peer_node, 2);
          EXPECT_EQ(c.peer_worker, 1);
        }
        if (e == b.eps[1].get()) {
          up_b1 = true;
          EXPECT_EQ(c.peer_node, 1);
          EXPECT_EQ(c.peer_worker, 0);
        }
      }));
}

TEST_F(VerbsBackend, LocalBuffersMustBeRegisteredAndRemotePointersMustNameThePeer) {
  Node a = node(1, 1), b = node(2, 1);
  auto [ab, ba] = connect(a, b);
  Endpoint& ea = *a.eps[0];
  uint64_t on_stack[4];
  EXPECT_EQ(ea.read(ab, {2, 1, 0}, on_stack, 8, 1).code(), Code::kInvalidArgument);
  EXPECT_EQ(ea.faa(ab, {2, 1, 0}, 1, on_stack, 2).code(), Code::kInvalidArgument);
  auto* unaligned = reinterpret_cast<uint64_t*>(ea.scratch().data() + 4);
  EXPECT_EQ(ea.cas(ab, {2, 1, 0}, 0, 1, unaligned, 3).code(), Code::kInvalidArgument);
  // Registered regions of this process are valid local buffers too; a null result uses an internal slot.
  std::memcpy(b.region.data() + 64, "remote!", 8);
  ASSERT_TRUE(ea.read(ab, {2, 1, 64}, a.region.data(), 8, 4).is_ok());
  *reinterpret_cast<uint64_t*>(b.region.data() + 128) = 41;
  ASSERT_TRUE(ea.faa(ab, {2, 1, 128}, 1, nullptr, 5).is_ok());
  ASSERT_TRUE(ea.read(ab, {3, 1, 0}, a.region.data(), 8, 6).is_ok());  // node 3 is not this connection's peer
  ea.flush();
  std::map<uint64_t, Completion> got;
  ASSERT_TRUE(pump(
      {&ea, b.eps[0].get()}, [&] { return got.size() == 3; },
      [&](Endpoint* e, const Completion& c) {
        if (e == &ea && c.kind != CompletionKind::kConnUp) got[c.cookie] = c;
      }));
  EXPECT_EQ(got[4].status, Code::kOk);
  EXPECT_EQ(std::memcmp(a.region.data(), "remote!", 8), 0);
  EXPECT_EQ(got[5].value, 41u);
  EXPECT_EQ(got[6].status, Code::kInvalidArgument);
  EXPECT_GE(ea.stats().rejected_messages, 1u);
}

TEST_F(VerbsBackend, DisconnectFailsQueuedAndPostedOpsBeforeConnDownOnBothSides) {
  Node a = node(1, 1), b = node(2, 1);
  auto [ab, ba] = connect(a, b);
  Endpoint& ea = *a.eps[0];
  auto* res = reinterpret_cast<uint64_t*>(ea.scratch().data());
  ASSERT_TRUE(ea.read(ab, {2, 1, 0}, ea.scratch().data() + 64, 64, 1).is_ok());
  ea.flush();                                                // posted
  ASSERT_TRUE(ea.cas(ab, {2, 1, 0}, 0, 1, res, 2).is_ok());  // queued, not flushed
  ASSERT_TRUE(ea.write(ab, {2, 1, 0}, ea.scratch().data() + 64, 8, 3, false).is_ok());
  ea.disconnect(ab);
  EXPECT_FALSE(ea.connected(ab));
  EXPECT_TRUE(ea.packet_buffer(ab).empty());
  EXPECT_EQ(ea.read(ab, {2, 1, 0}, ea.scratch().data(), 8, 4).code(), Code::kUnavailable);
  std::vector<Completion> seen;
  bool b_down = false;
  ASSERT_TRUE(pump(
      {&ea, b.eps[0].get()}, [&] { return b_down && !seen.empty() && seen.back().kind == CompletionKind::kConnDown; },
      [&](Endpoint* e, const Completion& c) {
        if (e == &ea) seen.push_back(c);
        if (e == b.eps[0].get() && c.kind == CompletionKind::kConnDown) {
          b_down = true;
          EXPECT_EQ(c.conn, ba);
        }
      }));
  // The op posted before the disconnect may have completed; the queued ones failed; kConnDown is last.
  std::map<uint64_t, Code> status;
  for (size_t i = 0; i + 1 < seen.size(); ++i) status[seen[i].cookie] = seen[i].status;
  EXPECT_EQ(status.count(2), 1u);
  EXPECT_EQ(status[2], Code::kUnavailable);
  EXPECT_EQ(status.count(3), 1u) << "a failed unsignaled write is reported";
  EXPECT_EQ(status[3], Code::kUnavailable);
  EXPECT_EQ(seen.back().conn, ab);
  EXPECT_GE(ea.stats().conn_failures, 1u);
}

TEST_F(VerbsBackend, HugePageMemoryWorksWhenAvailable) {
  Node a = node(1, 1, /*hugepages=*/true), b = node(2, 1, true);
  if (!b.region.huge()) GTEST_SKIP() << "no 2 MB pages reserved here (vm.nr_hugepages=0): normal pages were used";
  auto [ab, ba] = connect(a, b);
  Endpoint& ea = *a.eps[0];
  std::memset(b.region.data() + (1 << 19), 0x5a, 4096);
  ASSERT_TRUE(ea.read(ab, {2, 1, 1 << 19}, ea.scratch().data(), 4096, 7).is_ok());
  ea.flush();
  bool done = false;
  ASSERT_TRUE(pump(
      {&ea, b.eps[0].get()}, [&] { return done; },
      [&](Endpoint* e, const Completion& c) {
        if (e == &ea && c.cookie == 7) done = c.status == Code::kOk;
      }));
  EXPECT_EQ(ea.scratch()[4095], std::byte{0x5a});
}

TEST(VerbsConfig, RejectsAddressesWithoutRdma) {
  if (verbs_env().addr.empty()) GTEST_SKIP() << "verbs tests NOT RUN: " << verbs_env().why_not;
  TransportConfig cfg = verbs_test_config(1, 1);
  cfg.rdma_addr = "127.0.0.1";
  auto t = make_verbs_transport(cfg);
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.status().code(), Code::kUnavailable) << t.status().to_string();
  cfg.rdma_addr.clear();
  cfg.rdma_interface = "no-such-if0";
  t = make_verbs_transport(cfg);
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.status().message().find("does not exist"), std::string::npos) << t.status().to_string();
  cfg = verbs_test_config(1, 1);
  cfg.device = "no_such_dev";
  EXPECT_EQ(make_verbs_transport(cfg).status().code(), Code::kInvalidArgument);
  cfg = verbs_test_config(1, 1);
  cfg.gid_index = 250;
  EXPECT_EQ(make_verbs_transport(cfg).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace rdx::transport::verbs
