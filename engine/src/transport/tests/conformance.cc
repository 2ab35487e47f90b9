// Transport semantics every backend must have (see conformance.h).
#include "transport/tests/conformance.h"

#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "common/atomic_copy.h"
#include "common/memory.h"

namespace rdx::transport::testing {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kDeadline = std::chrono::seconds(20);

// One node: a transport, a registered region and endpoints.
struct Node {
  NodeId id;
  std::unique_ptr<Transport> transport;
  MemoryBlock region;
  std::vector<std::unique_ptr<Endpoint>> eps;
};

std::unique_ptr<Node> make_node(const BackendParam& p, NodeId id, uint16_t workers, size_t region_bytes = 1 << 20) {
  auto n = std::make_unique<Node>();
  n->id = id;
  auto t = make_transport(p.config(id, workers));
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  if (!t) return nullptr;
  n->transport = std::move(t.value());
  n->region = std::move(MemoryBlock::allocate(region_bytes, false).value());
  EXPECT_TRUE(n->transport->register_region(1, n->region.data(), n->region.size()).is_ok());
  return n;
}

void add_endpoints(Node& n, uint16_t count) {
  for (uint16_t w = 0; w < count; ++w) {
    auto ep = n.transport->create_endpoint(w);
    ASSERT_TRUE(ep.is_ok()) << ep.status().to_string();
    n.eps.push_back(std::move(ep.value()));
  }
}

// Polls the given endpoints until `done` holds, handing every completion to `on`. Fails the test on timeout.
template <typename Done, typename On>
bool pump(std::vector<Endpoint*> eps, Done done, On on) {
  Completion cs[32];
  auto until = Clock::now() + kDeadline;
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

// A connected pair: a.eps[0] -> b.eps[0]; returns the ConnIds on both sides.
struct Pair {
  std::unique_ptr<Node> a, b;
  ConnId ab = 0, ba = 0;
};

Pair connect_pair(const BackendParam& p) {
  Pair pr;
  pr.a = make_node(p, 1, 1);
  pr.b = make_node(p, 2, 1);
  add_endpoints(*pr.a, 1);
  add_endpoints(*pr.b, 1);
  auto c = pr.a->eps[0]->connect(p.peer_addr(2, pr.b->transport->listen_port()), 0);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  pr.ab = c.value();
  bool up_a = false, up_b = false;
  EXPECT_TRUE(pump(
      {pr.a->eps[0].get(), pr.b->eps[0].get()}, [&] { return up_a && up_b; },
      [&](Endpoint* e, const Completion& cp) {
        if (cp.kind != CompletionKind::kConnUp) return;
        if (e == pr.a->eps[0].get()) {
          up_a = true;
          EXPECT_EQ(cp.peer_node, 2);
        } else {
          up_b = true;
          pr.ba = cp.conn;
          EXPECT_EQ(cp.peer_node, 1);
          EXPECT_EQ(cp.peer_worker, 0);
        }
      }));
  return pr;
}

#define SKIP_IF_UNAVAILABLE()                                    \
  do {                                                           \
    std::string why = GetParam().unavailable_reason();           \
    if (!why.empty()) GTEST_SKIP() << "NOT RUN (" << why << ")"; \
  } while (0)

TEST_P(TransportConformance, SendsAndReceivesManyPackets) {
  SKIP_IF_UNAVAILABLE();
  Pair pr = connect_pair(GetParam());
  Endpoint& a = *pr.a->eps[0];
  Endpoint& b = *pr.b->eps[0];
  constexpr uint64_t kPackets = 3000;
  uint64_t sent = 0, got = 0;
  Completion cs[32];
  auto until = Clock::now() + kDeadline;
  while (got < kPackets && Clock::now() < until) {
    for (int burst = 0; burst < 16 && sent < kPackets; ++burst) {
      auto buf = a.packet_buffer(pr.ab);
      if (buf.empty()) break;  // out of credits: poll first
      size_t len = 8 + sent % 200;
      ASSERT_LE(len, buf.size());
      std::memcpy(buf.data(), &sent, 8);
      for (size_t i = 8; i < len; ++i) buf[i] = std::byte(sent + i);
      ASSERT_TRUE(a.post_send(pr.ab, len).is_ok());
      ++sent;
    }
    a.flush();
    a.poll(cs);
    size_t n = b.poll(cs);
    for (size_t k = 0; k < n; ++k) {
      if (cs[k].kind != CompletionKind::kRecv) continue;
      ASSERT_EQ(cs[k].data.size(), 8 + got % 200);
      uint64_t seq;
      std::memcpy(&seq, cs[k].data.data(), 8);
      ASSERT_EQ(seq, got) << "packets must arrive in order";
      for (size_t i = 8; i < cs[k].data.size(); ++i) ASSERT_EQ(cs[k].data[i], std::byte(seq + i));
      ++got;
    }
  }
  EXPECT_EQ(got, kPackets);
  EXPECT_GE(a.stats().packets_sent, kPackets);
  EXPECT_GE(b.stats().packets_received, kPackets);
}

TEST_P(TransportConformance, RejectsOversizedPacket) {
  SKIP_IF_UNAVAILABLE();
  Pair pr = connect_pair(GetParam());
  Endpoint& a = *pr.a->eps[0];
  ASSERT_FALSE(a.packet_buffer(pr.ab).empty());
  Status st = a.post_send(pr.ab, a.max_packet() + 1);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
}

// Waits for the completions with the given cookies on `a` while polling both sides (others are dropped).
std::map<uint64_t, Completion> wait_all(Pair& pr, std::set<uint64_t> cookies) {
  std::map<uint64_t, Completion> got;
  EXPECT_TRUE(pump(
      {pr.a->eps[0].get(), pr.b->eps[0].get()}, [&] { return got.size() == cookies.size(); },
      [&](Endpoint* e, const Completion& cp) {
        if (e == pr.a->eps[0].get() && cookies.count(cp.cookie) != 0 && cp.kind != CompletionKind::kRecv &&
            cp.kind != CompletionKind::kConnUp)
          got[cp.cookie] = cp;
      }));
  return got;
}

Completion wait_for(Pair& pr, uint64_t cookie) { return wait_all(pr, {cookie})[cookie]; }

TEST_P(TransportConformance, OneSidedReadWriteCasFaa) {
  SKIP_IF_UNAVAILABLE();
  Pair pr = connect_pair(GetParam());
  Endpoint& a = *pr.a->eps[0];
  std::byte* remote = pr.b->region.data();
  auto scratch = a.scratch();
  ASSERT_GE(scratch.size(), 8192u);
  RemotePtr base{2, 1, 4096};

  for (int i = 0; i < 1000; ++i) scratch[i] = std::byte(i * 7);
  ASSERT_TRUE(a.write(pr.ab, base, scratch.data(), 1000, 11, true).is_ok());
  a.flush();
  Completion c = wait_for(pr, 11);
  EXPECT_EQ(c.kind, CompletionKind::kWrite);
  EXPECT_EQ(c.status, Code::kOk);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(remote[4096 + i], std::byte(i * 7));

  std::memset(scratch.data() + 2000, 0, 1000);
  ASSERT_TRUE(a.read(pr.ab, base, scratch.data() + 2000, 1000, 12).is_ok());
  a.flush();
  c = wait_for(pr, 12);
  EXPECT_EQ(c.kind, CompletionKind::kRead);
  EXPECT_EQ(c.status, Code::kOk);
  EXPECT_EQ(std::memcmp(scratch.data() + 2000, remote + 4096, 1000), 0);

  auto* word = reinterpret_cast<uint64_t*>(remote + 64);
  std::atomic_ref<uint64_t>(*word).store(5);
  auto* result = reinterpret_cast<uint64_t*>(scratch.data() + 4096);
  ASSERT_TRUE(a.cas(pr.ab, {2, 1, 64}, 5, 9, result, 13).is_ok());
  a.flush();
  c = wait_for(pr, 13);
  EXPECT_EQ(c.kind, CompletionKind::kCas);
  EXPECT_EQ(c.value, 5u);
  EXPECT_EQ(*result, 5u);
  EXPECT_EQ(std::atomic_ref<uint64_t>(*word).load(), 9u);
  ASSERT_TRUE(a.cas(pr.ab, {2, 1, 64}, 5, 100, result, 14).is_ok());  // fails: word is 9
  a.flush();
  c = wait_for(pr, 14);
  EXPECT_EQ(c.value, 9u);
  EXPECT_EQ(std::atomic_ref<uint64_t>(*word).load(), 9u);
  ASSERT_TRUE(a.faa(pr.ab, {2, 1, 64}, 3, result, 15).is_ok());
  a.flush();
  c = wait_for(pr, 15);
  EXPECT_EQ(c.kind, CompletionKind::kFaa);
  EXPECT_EQ(c.value, 9u);
  EXPECT_EQ(std::atomic_ref<uint64_t>(*word).load(), 12u);
  EXPECT_GE(a.stats().onesided_issued, 5u);
}

TEST_P(TransportConformance, BadRemotePointersFailTheOpNotTheConnection) {
  SKIP_IF_UNAVAILABLE();
  Pair pr = connect_pair(GetParam());
  Endpoint& a = *pr.a->eps[0];
  auto scratch = a.scratch();
  auto* result = reinterpret_cast<uint64_t*>(scratch.data());
  ASSERT_TRUE(a.read(pr.ab, {2, 9, 0}, scratch.data() + 64, 8, 21).is_ok());                        // unknown region
  ASSERT_TRUE(a.read(pr.ab, {2, 1, pr.b->region.size() - 4}, scratch.data() + 64, 8, 22).is_ok());  // past the end
  ASSERT_TRUE(a.cas(pr.ab, {2, 1, 3}, 0, 1, result, 23).is_ok());                                   // misaligned atomic
  a.flush();
  auto got = wait_all(pr, {21, 22, 23});
  EXPECT_EQ(got[21].status, Code::kInvalidArgument);
  EXPECT_EQ(got[22].status, Code::kInvalidArgument);
  EXPECT_EQ(got[23].status, Code::kInvalidArgument);
  ASSERT_TRUE(a.read(pr.ab, {2, 1, 0}, scratch.data() + 64, 8, 24).is_ok());
  a.flush();
  EXPECT_EQ(wait_for(pr, 24).status, Code::kOk);
  EXPECT_TRUE(a.connected(pr.ab));
}

TEST_P(TransportConformance, WriteWithImmNotifiesTarget) {
  SKIP_IF_UNAVAILABLE();
  Pair pr = connect_pair(GetParam());
  Endpoint& a = *pr.a->eps[0];
  Endpoint& b = *pr.b->eps[0];
  auto scratch = a.scratch();
  std::memcpy(scratch.data(), "hello-imm", 9);
  ASSERT_TRUE(a.write_imm(pr.ab, {2, 1, 512}, scratch.data(), 9, 0xabcd, 31).is_ok());
  a.flush();
  bool imm = false, done = false;
  ASSERT_TRUE(pump(
      {&a, &b}, [&] { return imm && done; },
      [&](Endpoint* e, const Completion& cp) {
        if (e == &b && cp.kind == CompletionKind::kRecvImm) {
          EXPECT_EQ(cp.imm, 0xabcdu);
          EXPECT_EQ(std::memcmp(pr.b->region.data() + 512, "hello-imm", 9), 0);
          imm = true;
        }
        if (e == &a && cp.cookie == 31) done = true;
      }));
}

// Many initiator threads (each with its own endpoint) and target-local threads hammer one word with FAA and CAS.
// Linearizable: every FAA returns a distinct old value, every successful CAS increments exactly once, and the final
// value equals the number of increments.
TEST_P(TransportConformance, ConcurrentAtomicsAreLinearizable) {
  SKIP_IF_UNAVAILABLE();
  constexpr uint16_t kThreads = 3;
  constexpr int kOpsPerThread = 400;
  auto a = make_node(GetParam(), 1, kThreads);
  auto b = make_node(GetParam(), 2, kThreads);
  add_endpoints(*b, kThreads);
  std::atomic<bool> stop{false};
  std::thread server([&] {  // the target's worker threads poll (tcp serves one-sided ops there)
    Completion cs[32];
    while (!stop.load()) {
      for (auto& e : b->eps) {
        e->poll(cs);
        e->flush();
      }
    }
  });
  auto* word = reinterpret_cast<uint64_t*>(b->region.data() + 128);
  std::atomic<uint64_t> local_incs{0};
  std::thread local([&] {  // target-local CAS increments on the same word
    std::atomic_ref<uint64_t> w(*word);
    for (int i = 0; i < kOpsPerThread; ++i) {
      uint64_t v = w.load();
      while (!w.compare_exchange_weak(v, v + 1)) {
      }
      local_incs.fetch_add(1);
    }
  });
  std::vector<std::vector<uint64_t>> olds(kThreads);
  std::vector<std::thread> clients;
  std::atomic<int> failures{0};
  for (uint16_t t = 0; t < kThreads; ++t) {
    clients.emplace_back([&, t] {
      auto ep = a->transport->create_endpoint(t).value();
      ConnId c = ep->connect(GetParam().peer_addr(2, b->transport->listen_port()), t).value();
      Completion cs[32];
      bool up = false;
      while (!up) {
        size_t n = ep->poll(cs);
        for (size_t i = 0; i < n; ++i) up |= cs[i].kind == CompletionKind::kConnUp;
        for (size_t i = 0; i < n; ++i)
          if (cs[i].kind == CompletionKind::kConnDown) return (void)failures.fetch_add(1);
      }
      auto* res = reinterpret_cast<uint64_t*>(ep->scratch().data());
      for (int i = 0; i < kOpsPerThread; ++i) {
        bool use_cas = i % 2 == 1;
        // FAA: one op. CAS: read-modify-CAS loop until it succeeds (each success is one increment).
        if (!use_cas) {
          if (!ep->faa(c, {2, 1, 128}, 1, res, i).is_ok()) return (void)failures.fetch_add(1);
          ep->flush();
          for (bool got = false; !got;) {
            size_t n = ep->poll(cs);
            for (size_t k = 0; k < n; ++k)
              if (cs[k].kind == CompletionKind::kFaa) {
                got = true;
                if (cs[k].status != Code::kOk) failures.fetch_add(1);
                olds[t].push_back(cs[k].value);
              }
          }
        } else {
          uint64_t expect = 0;
          for (;;) {
            if (!ep->cas(c, {2, 1, 128}, expect, expect + 1, res, i).is_ok()) return (void)failures.fetch_add(1);
            ep->flush();
            uint64_t old = 0;
            for (bool got = false; !got;) {
              size_t n = ep->poll(cs);
              for (size_t k = 0; k < n; ++k)
                if (cs[k].kind == CompletionKind::kCas) {
                  got = true;
                  old = cs[k].value;
                }
            }
            if (old == expect) {
              olds[t].push_back(old);
              break;
            }
            expect = old;
          }
        }
      }
    });
  }
  for (auto& th : clients) th.join();
  local.join();
  stop.store(true);
  server.join();
  ASSERT_EQ(failures.load(), 0);
  std::set<uint64_t> distinct;
  size_t remote_incs = 0;
  for (auto& v : olds) {
    remote_incs += v.size();
    distinct.insert(v.begin(), v.end());
  }
  EXPECT_EQ(distinct.size(), remote_incs) << "two remote increments observed the same old value";
  EXPECT_EQ(std::atomic_ref<uint64_t>(*word).load(), remote_incs + local_incs.load());
}

// A writer on the target updates a record [version | payload | trailer] in the header/trailer order of store/record.h
// while a remote reader READs it. A READ image is accepted only if header == trailer and even; an accepted image must
// never be torn (payload bytes all derived from the accepted version).
TEST_P(TransportConformance, ReadNeverPassesVersionCheckWhenTorn) {
  SKIP_IF_UNAVAILABLE();
  Pair pr = connect_pair(GetParam());
  Endpoint& a = *pr.a->eps[0];
  Endpoint& b = *pr.b->eps[0];
  constexpr size_t kPayload = 240;  // spans several cache lines
  constexpr size_t kRec = 8 + kPayload + 8;
  std::byte* rec = pr.b->region.data() + 8192;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> writes{0};
  std::thread writer([&] {
    std::atomic_ref<uint64_t> head(*reinterpret_cast<uint64_t*>(rec));
    std::atomic_ref<uint64_t> tail(*reinterpret_cast<uint64_t*>(rec + 8 + kPayload));
    std::byte payload[kPayload];
    for (uint64_t v = 2; !stop.load(); v += 2) {
      head.store(v - 1, std::memory_order_release);  // odd: write in progress
      tail.store(v - 1, std::memory_order_release);
      std::memset(payload, static_cast<int>(v & 0xff), kPayload);
      atomic_store_bytes(rec + 8, payload, kPayload);
      tail.store(v, std::memory_order_release);
      head.store(v, std::memory_order_release);
      writes.fetch_add(1);
      // Pause now and then so some reads see a stable record: under a slow build (ASan) and a busy machine a
      // non-stop writer left every read torn, and "accepted > 0" (the check is not vacuous) failed.
      if (v % 128 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  std::thread server([&] {
    Completion cs[32];
    while (!stop.load()) {
      b.poll(cs);
      b.flush();
    }
  });
  std::byte* img = a.scratch().data();
  int accepted = 0, rejected = 0, torn_accepted = 0;
  Completion cs[32];
  for (int i = 0; i < 1500; ++i) {
    ASSERT_TRUE(a.read(pr.ab, {2, 1, 8192}, img, kRec, 1000 + i).is_ok());
    a.flush();
    for (bool got = false; !got;) {
      size_t n = a.poll(cs);
      for (size_t k = 0; k < n; ++k) got |= cs[k].kind == CompletionKind::kRead;
    }
    uint64_t h, t;
    std::memcpy(&h, img, 8);
    std::memcpy(&t, img + 8 + kPayload, 8);
    if (h != t || (h & 1) != 0) {
      ++rejected;
      continue;
    }
    ++accepted;
    for (size_t k = 0; k < kPayload; ++k)
      if (img[8 + k] != std::byte(h & 0xff)) {
        ++torn_accepted;
        break;
      }
  }
  stop.store(true);
  writer.join();
  server.join();
  EXPECT_EQ(torn_accepted, 0);
  EXPECT_GT(accepted, 0);
  RecordProperty("accepted", accepted);
  RecordProperty("rejected", rejected);
  RecordProperty("writes", static_cast<int>(writes.load()));
}

TEST_P(TransportConformance, PeerDeathFailsPendingOpsAndReportsConnDown) {
  SKIP_IF_UNAVAILABLE();
  Pair pr = connect_pair(GetParam());
  Endpoint& a = *pr.a->eps[0];
  pr.b->eps.clear();
  pr.b->transport.reset();  // the peer process goes away
  auto scratch = a.scratch();
  (void)a.read(pr.ab, {2, 1, 0}, scratch.data(), 8, 41);  // may be refused at once if the loss is already known
  a.flush();
  bool down = false;
  ASSERT_TRUE(pump(
      {&a}, [&] { return down; },
      [&](Endpoint*, const Completion& cp) {
        if (cp.kind == CompletionKind::kConnDown) down = true;
        if (cp.cookie == 41) {
          EXPECT_NE(cp.status, Code::kOk);
        }
      }));
  EXPECT_FALSE(a.connected(pr.ab));
  EXPECT_TRUE(a.packet_buffer(pr.ab).empty());
}

TEST_P(TransportConformance, RefusesOtherEpochs) {
  SKIP_IF_UNAVAILABLE();
  auto b = make_node(GetParam(), 2, 1);
  add_endpoints(*b, 1);
  TransportConfig cfg = GetParam().config(1, 1);
  cfg.epoch = 7;  // b runs epoch 1
  auto ta = make_transport(cfg).value();
  auto a = ta->create_endpoint(0).value();
  auto c = a->connect(GetParam().peer_addr(2, b->transport->listen_port()), 0);
  if (!c.is_ok()) return;  // refused synchronously: fine
  bool down = false, up = false;
  ASSERT_TRUE(pump(
      {a.get(), b->eps[0].get()}, [&] { return down; },
      [&](Endpoint* e, const Completion& cp) {
        if (e == a.get() && cp.kind == CompletionKind::kConnDown) down = true;
        if (cp.kind == CompletionKind::kConnUp) up = true;
      }));
  EXPECT_FALSE(up);
}

TEST_P(TransportConformance, UnreachablePeerFailsCleanly) {
  SKIP_IF_UNAVAILABLE();
  auto a = make_node(GetParam(), 1, 1);
  add_endpoints(*a, 1);
  // Nothing listens on port 1.
  auto c = a->eps[0]->connect(GetParam().peer_addr(2, 1), 0);
  if (!c.is_ok()) {
    EXPECT_EQ(c.status().code(), Code::kUnavailable);
    return;
  }
  bool down = false;
  ASSERT_TRUE(pump(
      {a->eps[0].get()}, [&] { return down; },
      [&](Endpoint*, const Completion& cp) {
        if (cp.kind == CompletionKind::kConnDown) down = true;
      }));
}

TEST_P(TransportConformance, WaitFdWakesOnArrival) {
  SKIP_IF_UNAVAILABLE();
  Pair pr = connect_pair(GetParam());
  Endpoint& a = *pr.a->eps[0];
  Endpoint& b = *pr.b->eps[0];
  std::thread sender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto buf = a.packet_buffer(pr.ab);
    std::memcpy(buf.data(), "wake", 4);
    (void)a.post_send(pr.ab, 4);
    a.flush();
  });
  Completion cs[8];
  bool got = false;
  auto until = Clock::now() + kDeadline;
  while (!got && Clock::now() < until) {
    b.arm();
    size_t n = b.poll(cs);
    for (size_t i = 0; i < n; ++i) got |= cs[i].kind == CompletionKind::kRecv;
    if (got) break;
    pollfd p{b.wait_fd(), POLLIN, 0};
    ::poll(&p, 1, 1000);
  }
  sender.join();
  EXPECT_TRUE(got);
}

}  // namespace
}  // namespace rdx::transport::testing
