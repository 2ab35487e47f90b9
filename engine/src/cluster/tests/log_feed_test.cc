// The log feed under concurrent publishers (cluster/log_feed.h): a subscriber that joins or leaves while workers
// publish receives every record after its start, once, in LSN order, with no gap.
#include "cluster/log_feed.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace rdx::cluster {
namespace {

TEST(LogFeed, SubscribersJoiningUnderLoadSeeEveryRecordAfterTheirStart) {
  LogFeed feed;
  constexpr int kPublishers = 4;
  std::atomic<bool> stop{false};
  std::vector<std::jthread> publishers;
  for (int p = 0; p < kPublishers; ++p)
    publishers.emplace_back([&feed, &stop, p] {
      const std::optional<std::string> value = std::to_string(p);
      for (uint64_t i = 1; !stop.load(std::memory_order_relaxed); ++i)
        feed.publish("k" + std::to_string(p), i % 7 ? value : std::nullopt, i);
    });
  auto wait_for_records = [&feed](uint64_t n) {
    const uint64_t until = feed.last_lsn() + n;
    while (feed.last_lsn() < until) std::this_thread::yield();
  };

  struct Seen {
    LogFeed::Subscription sub{};
    std::vector<uint64_t> lsns;  // appended under the feed's lock (subscribers are called while it is held)
  };
  Seen a, b;
  wait_for_records(100);
  a.sub = feed.subscribe([&a](const LogRecord& r) { a.lsns.push_back(r.lsn); });
  wait_for_records(1000);
  b.sub = feed.subscribe([&b](const LogRecord& r) { b.lsns.push_back(r.lsn); });
  wait_for_records(1000);
  feed.unsubscribe(a.sub.id);  // a leaves while they publish; b stays to the end
  wait_for_records(1000);
  stop = true;
  publishers.clear();  // joins

  const uint64_t last = feed.last_lsn();
  EXPECT_LE(a.sub.from + 1000, b.sub.from);
  ASSERT_GE(a.lsns.size(), 2000u);
  for (size_t i = 0; i < a.lsns.size(); ++i) ASSERT_EQ(a.lsns[i], a.sub.from + 1 + i) << "a, record " << i;
  ASSERT_EQ(b.lsns.size(), last - b.sub.from) << "b must see every record after its start";
  for (size_t i = 0; i < b.lsns.size(); ++i) ASSERT_EQ(b.lsns[i], b.sub.from + 1 + i) << "b, record " << i;
}

TEST(LogFeed, RecordsCarryTheWrite) {
  LogFeed feed;
  feed.publish("before", std::string("x"), 1);  // nobody subscribed: numbered all the same
  std::vector<std::tuple<uint64_t, std::string, std::optional<std::string>, uint64_t>> got;
  auto sub = feed.subscribe([&got](const LogRecord& r) {
    got.emplace_back(r.lsn, std::string(r.key), r.value ? std::optional(*r.value) : std::nullopt, r.version);
  });
  EXPECT_EQ(sub.from, 1u);
  feed.publish("a", std::string("v"), 7);
  feed.publish("a", std::nullopt, 8);
  feed.unsubscribe(sub.id);
  feed.publish("a", std::string("w"), 9);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], std::make_tuple(uint64_t(2), std::string("a"), std::optional<std::string>("v"), uint64_t(7)));
  EXPECT_EQ(got[1], std::make_tuple(uint64_t(3), std::string("a"), std::optional<std::string>(), uint64_t(8)));
  EXPECT_EQ(feed.last_lsn(), 4u);
}

}  // namespace
}  // namespace rdx::cluster
