// Primary-backup's undecided transaction writes (primary_backup/undecided.h) and the messages that carry them.
#include <gtest/gtest.h>

#include <algorithm>

#include "replication/primary_backup/heard.h"
#include "replication/primary_backup/messages.h"
#include "replication/primary_backup/undecided.h"

namespace rdx::replication::primary_backup {
namespace {

// A writer id of `worker` (cluster::writer_worker), as WorkerContext::next_writer_id makes them.
uint64_t txid_of(uint16_t worker, uint64_t seq) { return (uint64_t{3} << 38) | (uint64_t{worker} << 32) | seq; }

cluster::InheritedWrite write(uint64_t txid, std::string key, uint64_t version, std::optional<std::string> before) {
  return cluster::InheritedWrite{txid, {0, 2}, cluster::LogWrite{std::move(key), "new", version}, std::move(before)};
}

TEST(PbUndecided, BatchesCarryTheTransactionsParticipants) {
  LogBatch b;
  b.txid = 7;
  b.view = 9;
  b.participants = {0, 3};
  b.recovered = true;
  b.writes = {cluster::LogWrite{"a", "1", 5}, cluster::LogWrite{"b", std::nullopt, 6}};
  const std::string bytes = b.encode();
  auto d = LogBatch::decode(rpc::as_bytes_of(bytes));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->participants, b.participants);
  EXPECT_TRUE(d->recovered);
  EXPECT_FALSE(d->committed);
  ASSERT_EQ(d->writes.size(), 2u);
  EXPECT_EQ(d->writes[1].value, std::nullopt);
  EXPECT_FALSE(LogBatch::decode(rpc::as_bytes_of(bytes.substr(0, bytes.size() - 1))));
}

TEST(PbUndecided, UndecidedWritesTravelWithTheirBeforeImages) {
  const std::vector<cluster::InheritedWrite> ws = {write(1, "a", 4, "old"), write(2, "b", 8, std::nullopt)};
  const std::string bytes = encode_undecided(ws);
  auto d = decode_undecided(rpc::as_bytes_of(bytes));
  ASSERT_TRUE(d);
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[0].txid, 1u);
  EXPECT_EQ((*d)[0].participants, (std::vector<uint16_t>{0, 2}));
  EXPECT_EQ((*d)[0].write.value, "new");
  EXPECT_EQ((*d)[0].before, "old");
  EXPECT_EQ((*d)[1].write.version, 8u);
  EXPECT_EQ((*d)[1].before, std::nullopt);
  EXPECT_FALSE(decode_undecided(rpc::as_bytes_of(bytes.substr(0, bytes.size() - 2))));
}

TEST(PbUndecided, ANoticeOrANewerWriteDecidesAKeysWrite) {
  UndecidedWrites u;
  u.note(write(1, "a", 4, "old"));
  u.note(write(2, "b", 8, "old"));
  u.note(write(3, "c", 2, "old"));
  u.decided("a", 4);                  // its notice
  u.decided("b", 7);                  // an older write's notice: b's stays
  u.note(write(4, "c", 1, "older"));  // a stale replay: the newer write stays
  auto left = u.take();
  ASSERT_EQ(left.size(), 2u);
  std::sort(left.begin(), left.end(), [](const auto& x, const auto& y) { return x.write.key < y.write.key; });
  EXPECT_EQ(left[0].txid, 2u);
  EXPECT_EQ(left[1].txid, 3u);
  EXPECT_TRUE(u.take().empty());
}

TEST(PbUndecided, EachInheritedWriteGoesToItsCoordinatorsWorkerIndex) {
  UndecidedWrites u;
  u.inherit({write(txid_of(0, 1), "a", 4, "x"), write(txid_of(1, 2), "b", 4, "x"), write(txid_of(3, 3), "c", 4, "x")});
  const auto w1 = u.take_inherited(1, 2);  // workers 1 and 3 of the coordinators map to worker 1 of 2
  ASSERT_EQ(w1.size(), 2u);
  EXPECT_EQ(w1[0].write.key, "b");
  EXPECT_EQ(w1[1].write.key, "c");
  EXPECT_TRUE(u.take_inherited(1, 2).empty());
  ASSERT_EQ(u.take_inherited(0, 2).size(), 1u);
}

TEST(PbUndecided, ACopyOfTheShardForgetsUndecidedAndUntakenInheritedWrites) {
  UndecidedWrites u;
  u.note(write(txid_of(0, 1), "a", 4, "old"));
  u.inherit({write(txid_of(0, 2), "b", 4, "x")});
  u.clear();
  EXPECT_TRUE(u.take().empty());
  EXPECT_TRUE(u.take_inherited(0, 1).empty());
}

// A new primary's answer for its predecessor: "nothing replicated here" tells only within the time it heard every
// write.
TEST(PbHeard, NothingHeardIsAFactOnlyWithinTheMemory) {
  using Kind = cluster::TxnHeard::Kind;
  using std::chrono::milliseconds;
  HeardTransactions h;
  const auto t0 = HeardTransactions::Clock::time_point{} + std::chrono::hours(1);
  EXPECT_EQ(h.heard(1, t0).kind, Kind::kNotKept);  // not in sync yet: it may have missed writes
  h.complete_from(t0);
  h.replicated(1, t0 + milliseconds(10));
  h.replicated(2, t0 + milliseconds(20));
  h.shown(2, t0 + milliseconds(30));
  EXPECT_EQ(h.heard(1, t0 + milliseconds(40)).kind, Kind::kReplicated);
  EXPECT_EQ(h.heard(2, t0 + milliseconds(40)).kind, Kind::kShown);
  const cluster::TxnHeard none = h.heard(3, t0 + milliseconds(40));
  EXPECT_EQ(none.kind, Kind::kNothing);
  EXPECT_EQ(none.complete_for, milliseconds(40));

  // A minute later 1 is forgotten (2's notice came later): the memory begins where the forgotten ones end.
  const auto later = t0 + HeardTransactions::kKeep + milliseconds(15);
  const cluster::TxnHeard forgot = h.heard(1, later);
  EXPECT_EQ(forgot.kind, Kind::kNothing);
  EXPECT_EQ(forgot.complete_for, HeardTransactions::kKeep + milliseconds(15) - milliseconds(10));
  EXPECT_EQ(h.heard(2, later).kind, Kind::kShown);

  h.incomplete();  // copying the shard again
  EXPECT_EQ(h.heard(3, later).kind, Kind::kNotKept);
  h.complete_from(later);
  EXPECT_EQ(h.heard(3, later + milliseconds(5)).complete_for, milliseconds(5));
}

}  // namespace
}  // namespace rdx::replication::primary_backup
