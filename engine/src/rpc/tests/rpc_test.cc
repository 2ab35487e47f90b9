#include "rpc/rpc.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <vector>

#include "common/memory.h"

namespace rdx::rpc {
namespace {

using transport::CompletionKind;

// Two nodes over the tcp transport, one worker each, driven from the test thread.
struct Side {
  std::unique_ptr<transport::Transport> t;
  std::unique_ptr<transport::Endpoint> ep;
  Scheduler sched;
  std::unique_ptr<Rpc> rpc;
  MemoryBlock region;
};

struct Harness {
  Side a, b;
  ConnId ab = 0, ba = 0;
  explicit Harness(RpcConfig cfg = {}) {
    for (auto [side, node] : {std::pair{&a, 1}, std::pair{&b, 2}}) {
      transport::TransportConfig tc;
      tc.node = static_cast<transport::NodeId>(node);
      tc.listen_host = "127.0.0.1";
      tc.hugepages = false;
      side->t = transport::make_transport(tc).value();
      side->region = std::move(MemoryBlock::allocate(4096, false).value());
      EXPECT_TRUE(side->t->register_region(1, side->region.data(), side->region.size()).is_ok());
      side->ep = side->t->create_endpoint(0).value();
      side->rpc = std::make_unique<Rpc>(*side->ep, side->sched, cfg);
    }
    b.rpc->on_connection([this](const transport::Completion& c) {
      if (c.kind == CompletionKind::kConnUp) ba = c.conn;
    });
    bool up = false;
    a.rpc->on_connection([&up](const transport::Completion& c) { up |= c.kind == CompletionKind::kConnUp; });
    ab = a.ep->connect({2, "127.0.0.1", b.t->listen_port(), ""}, 0).value();
    EXPECT_TRUE(run_until([&] { return up; }));
    a.rpc->on_connection(nullptr);
  }
  // One iteration of both workers' loops.
  void step() {
    for (Side* s : {&a, &b}) {
      s->rpc->poll();
      s->sched.run_ready();
      s->rpc->flush();
    }
  }
  template <typename F>
  bool run_until(F done, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() > until) return false;
      step();
    }
    return true;
  }
};

struct Num {
  uint64_t v;
};

TEST(Rpc, RefusesASecondHandlerForOneMessageType) {
  Harness h;
  int first = 0, second = 0;
  ASSERT_TRUE(h.b.rpc->on(3, [&](const Incoming&) { ++first; }).is_ok());
  Status dup = h.b.rpc->on(3, [&](const Incoming&) { ++second; });
  EXPECT_EQ(dup.code(), Code::kAlreadyExists) << dup.to_string();
  EXPECT_NE(dup.message().find("message type 3"), std::string::npos) << dup.message();
  EXPECT_EQ(h.b.rpc->on(0, [](const Incoming&) {}).code(), Code::kInvalidArgument);
  // The first registration stays in force.
  Num n{1};
  ASSERT_TRUE(h.a.rpc->send_oneway(h.ab, 3, as_bytes_of(n)).is_ok());
  h.a.rpc->flush();
  ASSERT_TRUE(h.run_until([&] { return first == 1; }));
  EXPECT_EQ(second, 0);
}

TEST(Rpc, ManyMessagesTravelInOnePacketInOrderPerFlow) {
  Harness h;
  std::vector<uint64_t> got_a, got_b;
  ASSERT_TRUE(
      h.b.rpc->on(1, [&](const Incoming& in) { got_a.push_back(reinterpret_cast<const Num*>(in.payload.data())->v); })
          .is_ok());
  ASSERT_TRUE(
      h.b.rpc->on(2, [&](const Incoming& in) { got_b.push_back(reinterpret_cast<const Num*>(in.payload.data())->v); })
          .is_ok());
  uint64_t packets_before = h.b.rpc->stats().packets_received;
  for (uint64_t i = 0; i < 50; ++i) {
    Num n{i};
    ASSERT_TRUE(h.a.rpc->send_oneway(h.ab, i % 3 == 0 ? 2 : 1, as_bytes_of(n)).is_ok());
  }
  h.a.rpc->flush();
  ASSERT_TRUE(h.run_until([&] { return got_a.size() + got_b.size() == 50; }));
  EXPECT_EQ(h.b.rpc->stats().packets_received - packets_before, 1u) << "50 small messages must share one packet";
  for (size_t i = 1; i < got_a.size(); ++i) EXPECT_LT(got_a[i - 1], got_a[i]);
  for (size_t i = 1; i < got_b.size(); ++i) EXPECT_LT(got_b[i - 1], got_b[i]);
  EXPECT_EQ(got_b.size(), 17u);
}

TEST(Rpc, BatchCapsByCountAndBytesAndCanBeDisabled) {
  RpcConfig cfg;
  cfg.max_batch_messages = 8;
  Harness h(cfg);
  int got = 0;
  ASSERT_TRUE(h.b.rpc->on(1, [&](const Incoming&) { ++got; }).is_ok());
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(h.a.rpc->send_oneway(h.ab, 1, as_bytes_of(Num{1})).is_ok());
  h.a.rpc->flush();
  ASSERT_TRUE(h.run_until([&] { return got == 50; }));
  EXPECT_EQ(h.b.rpc->stats().packets_received, 7u);  // ceil(50 / 8)

  RpcConfig bytes_cfg;
  bytes_cfg.max_batch_bytes = 16 + 4 * (16 + 100);  // four 100-byte messages per packet
  Harness hb(bytes_cfg);
  got = 0;
  ASSERT_TRUE(hb.b.rpc->on(1, [&](const Incoming&) { ++got; }).is_ok());
  std::string payload(100, 'x');
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(hb.a.rpc->send_oneway(hb.ab, 1, as_bytes_of(payload)).is_ok());
  hb.a.rpc->flush();
  ASSERT_TRUE(hb.run_until([&] { return got == 20; }));
  EXPECT_EQ(hb.b.rpc->stats().packets_received, 5u);

  RpcConfig off;
  off.batching = false;
  Harness hn(off);
  got = 0;
  ASSERT_TRUE(hn.b.rpc->on(1, [&](const Incoming&) { ++got; }).is_ok());
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(hn.a.rpc->send_oneway(hn.ab, 1, as_bytes_of(Num{1})).is_ok());
  hn.a.rpc->flush();
  ASSERT_TRUE(hn.run_until([&] { return got == 20; }));
  EXPECT_EQ(hn.b.rpc->stats().packets_received, 20u);
}

Task<void> caller(Rpc& rpc, ConnId c, uint64_t x, std::map<uint64_t, uint64_t>& results, int& done) {
  Response r = co_await rpc.call(c, 7, as_bytes_of(Num{x}));
  EXPECT_EQ(r.status, Code::kOk);
  Num n{};
  if (r.payload.size() == sizeof(n)) std::memcpy(&n, r.payload.data(), sizeof(n));
  results[x] = n.v;
  ++done;
}

TEST(Rpc, RequestResponseMatchesIdsWithManyCallsInFlight) {
  Harness h;
  std::vector<ReplyTo> deferred;
  std::vector<uint64_t> deferred_vals;
  ASSERT_TRUE(h.b.rpc
                  ->on(7,
                       [&](const Incoming& in) {
                         uint64_t v = reinterpret_cast<const Num*>(in.payload.data())->v;
                         if (v % 2 == 0) {
                           h.b.rpc->respond(in.reply_to(), Code::kOk, as_bytes_of(Num{v * 10}));
                         } else {  // answer odd ones later, in reverse order
                           deferred.push_back(in.reply_to());
                           deferred_vals.push_back(v);
                         }
                       })
                  .is_ok());
  std::map<uint64_t, uint64_t> results;
  int done = 0;
  for (uint64_t i = 0; i < 200; ++i) spawn(caller(*h.a.rpc, h.ab, i, results, done));
  ASSERT_TRUE(h.run_until([&] { return deferred.size() == 100; }));
  for (size_t i = deferred.size(); i-- > 0;)
    h.b.rpc->respond(deferred[i], Code::kOk, as_bytes_of(Num{deferred_vals[i] * 10}));
  ASSERT_TRUE(h.run_until([&] { return done == 200; }));
  for (uint64_t i = 0; i < 200; ++i) EXPECT_EQ(results[i], i * 10);
  EXPECT_LT(h.a.rpc->stats().packets_sent, 20u) << "200 requests should be batched";
}

Task<void> ackable_caller(Rpc& rpc, ConnId c, int& ok, int& failed) {
  Response r = co_await rpc.call_ackable(c, 9, as_bytes_of(Num{1}));
  (r.status == Code::kOk ? ok : failed)++;
}

TEST(Rpc, SmartAcksCoverRangesOfConsecutiveIds) {
  Harness h;
  std::vector<ReplyTo> pending;
  ASSERT_TRUE(h.b.rpc->on(9, [&](const Incoming& in) { pending.push_back(in.reply_to()); }).is_ok());
  int ok = 0, failed = 0;
  for (int i = 0; i < 100; ++i) spawn(ackable_caller(*h.a.rpc, h.ab, ok, failed));
  ASSERT_TRUE(h.run_until([&] { return pending.size() == 100; }));
  // Acknowledge out of order: everything but the first, then the first. Only then is a range contiguous.
  for (size_t i = 1; i < pending.size(); ++i) h.b.rpc->ack(pending[i]);
  for (int i = 0; i < 5; ++i) h.step();
  EXPECT_EQ(ok, 0) << "no ack may be sent while id 1 is outstanding";
  h.b.rpc->ack(pending[0]);
  ASSERT_TRUE(h.run_until([&] { return ok == 100; }));
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(h.b.rpc->stats().ack_ranges_sent, 1u);
  EXPECT_EQ(h.b.rpc->stats().acks_covered, 100u);
}

Task<void> ackable_status(Rpc& rpc, ConnId c, Code& out) { out = (co_await rpc.call_ackable(c, 9, {})).status; }

TEST(Rpc, ARefusedAckableFailsAloneAndDoesNotHoldUpTheOthers) {
  Harness h;
  std::vector<ReplyTo> pending;
  ASSERT_TRUE(h.b.rpc->on(9, [&](const Incoming& in) { pending.push_back(in.reply_to()); }).is_ok());
  std::vector<Code> got(5, Code::kInternal);
  for (auto& g : got) spawn(ackable_status(*h.a.rpc, h.ab, g));
  ASSERT_TRUE(h.run_until([&] { return pending.size() == 5; }));
  // The middle one is refused before anything is acknowledged: it fails at once, the others wait for their acks.
  h.b.rpc->refuse(pending[2], Code::kAborted);
  ASSERT_TRUE(h.run_until([&] { return got[2] != Code::kInternal; }));
  EXPECT_EQ(got[2], Code::kAborted);
  for (size_t i : {0, 1, 3, 4}) EXPECT_EQ(got[i], Code::kInternal) << i;
  // The others complete once acknowledged; the refused id inside their range changes nothing.
  for (size_t i : {0, 1, 3, 4}) h.b.rpc->ack(pending[i]);
  ASSERT_TRUE(h.run_until([&] { return got[4] != Code::kInternal && got[0] != Code::kInternal; }));
  for (size_t i : {0, 1, 3, 4}) EXPECT_EQ(got[i], Code::kOk) << i;
  EXPECT_EQ(h.a.rpc->pending_calls(), 0u);
}

TEST(Rpc, UnknownTypeGetsUnsupported) {
  Harness h;
  Response got;
  bool done = false;
  spawn([](Rpc& rpc, ConnId c, Response& out, bool& d) -> Task<void> {
    out = co_await rpc.call(c, 42, {});
    d = true;
  }(*h.a.rpc, h.ab, got, done));
  ASSERT_TRUE(h.run_until([&] { return done; }));
  EXPECT_EQ(got.status, Code::kUnsupported);
  EXPECT_EQ(h.b.rpc->stats().unknown_types, 1u);
}

TEST(Rpc, CallsFailWhenThePeerDiesAndTimeOutWhenUnanswered) {
  RpcConfig cfg;
  cfg.call_timeout = std::chrono::milliseconds(200);
  Harness h(cfg);
  ASSERT_TRUE(h.b.rpc->on(7, [](const Incoming&) {}).is_ok());  // never answers
  Response r1;
  bool d1 = false;
  auto call = [](Rpc& rpc, ConnId c, Response& out, bool& d) -> Task<void> {
    out = co_await rpc.call(c, 7, {});
    d = true;
  };
  spawn(call(*h.a.rpc, h.ab, r1, d1));
  ASSERT_TRUE(h.run_until([&] { return d1; }));
  EXPECT_EQ(r1.status, Code::kTimeout);
  EXPECT_EQ(h.a.rpc->stats().calls_timed_out, 1u);

  Response r2;
  bool d2 = false;
  spawn(call(*h.a.rpc, h.ab, r2, d2));
  h.step();
  h.b.rpc.reset();
  h.b.ep.reset();
  h.b.t.reset();  // the peer dies
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!d2 && std::chrono::steady_clock::now() < until) {
    h.a.rpc->poll();
    h.a.sched.run_ready();
    h.a.rpc->flush();
  }
  ASSERT_TRUE(d2);
  EXPECT_EQ(r2.status, Code::kUnavailable);
}

TEST(Rpc, APerCallTimeoutAndAbandonedCallsFailWhileTheConnectionStays) {
  Harness h;  // the default call timeout (5 s) is far longer than this test waits
  ASSERT_TRUE(h.b.rpc->on(7, [](const Incoming&) {}).is_ok());  // never answers
  ASSERT_TRUE(h.b.rpc->on(8, [](const Incoming&) {}).is_ok());  // never acknowledges
  ASSERT_TRUE(h.b.rpc->on(9, [&h](const Incoming& in) { h.b.rpc->respond(in.reply_to(), Code::kOk); }).is_ok());
  ASSERT_TRUE(h.b.rpc->on(10, [&h](const Incoming& in) { h.b.rpc->ack(in.reply_to()); }).is_ok());
  auto call = [](Rpc& rpc, ConnId c, MsgType type, std::chrono::milliseconds timeout, bool ackable, Response& out,
                 bool& d) -> Task<void> {
    if (ackable) {
      out = co_await rpc.call_ackable(c, type, {});
    } else if (timeout.count() > 0) {
      out = co_await rpc.call(c, type, {}, timeout);
    } else {
      out = co_await rpc.call(c, type, {});
    }
    d = true;
  };
  Response quick, plain, ackable;
  bool d_quick = false, d_plain = false, d_ackable = false;
  const auto t0 = std::chrono::steady_clock::now();
  spawn(call(*h.a.rpc, h.ab, 7, std::chrono::milliseconds(100), false, quick, d_quick));
  ASSERT_TRUE(h.run_until([&] { return d_quick; }));
  EXPECT_EQ(quick.status, Code::kTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));

  spawn(call(*h.a.rpc, h.ab, 7, {}, false, plain, d_plain));
  spawn(call(*h.a.rpc, h.ab, 8, {}, true, ackable, d_ackable));
  for (int i = 0; i < 20; ++i) h.step();
  ASSERT_FALSE(d_plain || d_ackable);
  EXPECT_EQ(h.a.rpc->pending_calls(), 2u);
  h.a.rpc->abandon_calls(h.ab);
  ASSERT_TRUE(h.run_until([&] { return d_plain && d_ackable; }, std::chrono::milliseconds(500)));
  EXPECT_EQ(plain.status, Code::kUnavailable);
  EXPECT_EQ(ackable.status, Code::kUnavailable);
  EXPECT_NE(plain.payload.find("may or may not have been done"), std::string::npos);  // (clients pass it on)
  EXPECT_EQ(ackable.payload, plain.payload);
  EXPECT_EQ(h.a.rpc->pending_calls(), 0u);
  // The connection still works.
  Response after;
  bool d_after = false;
  spawn(call(*h.a.rpc, h.ab, 9, {}, false, after, d_after));
  ASSERT_TRUE(h.run_until([&] { return d_after; }));
  EXPECT_EQ(after.status, Code::kOk);
  // So do ackable messages after the abandoned one (their smart acks cover ids past it), of both types.
  Response acked[3];
  bool d_acked[3] = {false, false, false};
  spawn(call(*h.a.rpc, h.ab, 10, {}, true, acked[0], d_acked[0]));
  spawn(call(*h.a.rpc, h.ab, 10, {}, true, acked[1], d_acked[1]));
  ASSERT_TRUE(h.run_until([&] { return d_acked[0] && d_acked[1]; }));
  EXPECT_EQ(acked[0].status, Code::kOk);
  EXPECT_EQ(acked[1].status, Code::kOk);
  ASSERT_TRUE(h.b.rpc->on(11, [&h](const Incoming& in) { h.b.rpc->ack(in.reply_to()); }).is_ok());
  spawn(call(*h.a.rpc, h.ab, 11, {}, true, acked[2], d_acked[2]));
  ASSERT_TRUE(h.run_until([&] { return d_acked[2]; }));
  EXPECT_EQ(acked[2].status, Code::kOk);
}

TEST(Rpc, MalformedPacketsAreDroppedWholeAndCounted) {
  Harness h;
  int got = 0;
  ASSERT_TRUE(h.b.rpc->on(1, [&](const Incoming&) { ++got; }).is_ok());
  auto send_raw = [&](std::vector<std::byte> pkt) {
    auto buf = h.a.ep->packet_buffer(h.ab);
    ASSERT_GE(buf.size(), pkt.size());
    std::memcpy(buf.data(), pkt.data(), pkt.size());
    ASSERT_TRUE(h.a.ep->post_send(h.ab, pkt.size()).is_ok());
    h.a.ep->flush();
  };
  auto packet = [](uint32_t magic, uint16_t count, std::vector<std::pair<MsgHeader, size_t>> msgs, int trim = 0) {
    std::vector<std::byte> p(sizeof(PacketHeader));
    for (auto& [mh, body] : msgs) {
      size_t at = p.size();
      p.resize(at + sizeof(MsgHeader) + body);
      std::memcpy(p.data() + at, &mh, sizeof(mh));
    }
    p.resize(p.size() - trim);
    PacketHeader ph{magic, 1, count, 0, static_cast<uint32_t>(p.size())};
    std::memcpy(p.data(), &ph, sizeof(ph));
    return p;
  };
  MsgHeader good{1, static_cast<uint8_t>(MsgKind::kOneway), 0, 8, 0};
  MsgHeader liar{1, static_cast<uint8_t>(MsgKind::kOneway), 0, 5000, 0};  // claims more than the packet holds
  MsgHeader badkind{1, 99, 0, 0, 0};
  send_raw(packet(0xdeadbeef, 1, {{good, 8}}));               // wrong magic
  send_raw(packet(kPacketMagic, 2, {{good, 8}, {liar, 8}}));  // second message lies about its length
  send_raw(packet(kPacketMagic, 3, {{good, 8}, {good, 8}}));  // count says 3, holds 2
  send_raw(packet(kPacketMagic, 1, {{badkind, 0}}));
  send_raw(packet(kPacketMagic, 1, {{good, 8}}));  // a valid one last
  ASSERT_TRUE(h.run_until([&] { return got == 1; }));
  for (int i = 0; i < 5; ++i) h.step();
  EXPECT_EQ(got, 1) << "no message of a malformed packet may be dispatched";
  EXPECT_EQ(h.b.rpc->stats().bad_packets, 4u);
}

TEST(Rpc, OneSidedAwaitablesAndOversizedMessages) {
  Harness h;
  auto* word = reinterpret_cast<uint64_t*>(h.b.region.data());
  *word = 40;
  uint64_t* res = reinterpret_cast<uint64_t*>(h.a.ep->scratch().data());
  OneSidedResult r{};
  bool done = false;
  spawn([](Rpc& rpc, ConnId c, uint64_t* out, OneSidedResult& rr, bool& d) -> Task<void> {
    rr = co_await rpc.faa(c, {2, 1, 0}, 2, out);
    d = true;
  }(*h.a.rpc, h.ab, res, r, done));
  ASSERT_TRUE(h.run_until([&] { return done; }));
  EXPECT_EQ(r.status, Code::kOk);
  EXPECT_EQ(r.value, 40u);
  EXPECT_EQ(std::atomic_ref<uint64_t>(*word).load(), 42u);

  std::string huge(h.a.ep->max_packet(), 'x');
  Status st = h.a.rpc->send_oneway(h.ab, 1, as_bytes_of(huge));
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace rdx::rpc

namespace rdx::rpc {
namespace {

Task<int> immediate(int v) { co_return v; }
Task<int> after_yield(Scheduler& s, int v) {
  co_await s.yield();
  co_return v * 10;
}

TEST(Tasks, WhenAllCollectsResultsInOrderWhetherSyncOrAsync) {
  Scheduler s;
  std::vector<int> got;
  bool done = false;
  spawn([](Scheduler& sc, std::vector<int>& out, bool& d) -> Task<void> {
    std::vector<Task<int>> ts;
    ts.push_back(immediate(1));
    ts.push_back(after_yield(sc, 2));
    ts.push_back(immediate(3));
    ts.push_back(after_yield(sc, 4));
    out = co_await when_all(std::move(ts));
    std::vector<Task<int>> sync_only;
    sync_only.push_back(immediate(5));
    auto more = co_await when_all(std::move(sync_only));
    out.push_back(more[0]);
    auto none = co_await when_all(std::vector<Task<int>>{});
    out.push_back(static_cast<int>(none.size()));
    d = true;
  }(s, got, done));
  for (int i = 0; i < 10 && !done; ++i) s.run_ready();
  ASSERT_TRUE(done);
  EXPECT_EQ(got, (std::vector<int>{1, 20, 3, 40, 5, 0}));
}

}  // namespace
}  // namespace rdx::rpc

namespace rdx::rpc {
namespace {

TEST(Tasks, SleepResumesAfterTheDelayInDeadlineOrder) {
  Scheduler s;
  std::vector<int> order;
  auto sleeper = [](Scheduler& sc, std::vector<int>& out, int ms) -> Task<void> {
    co_await sc.sleep_for(std::chrono::milliseconds(ms));
    out.push_back(ms);
  };
  auto t0 = std::chrono::steady_clock::now();
  spawn(sleeper(s, order, 30));
  spawn(sleeper(s, order, 10));
  ASSERT_TRUE(s.next_timer().has_value());
  while (order.size() < 2) s.run_ready();
  EXPECT_EQ(order, (std::vector<int>{10, 30}));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(30));
  EXPECT_FALSE(s.next_timer().has_value());
}

}  // namespace
}  // namespace rdx::rpc
