// Dandelion's participant (txn/dandelion/participant.h) on a real table, without a cluster: what its unlock releases
// and what it refuses. The context and the replica log are stand-ins: the calls tested use only the table, and the
// log records the writes applied at the primary.
#include "txn/dandelion/participant.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "cluster/lockword.h"
#include "store/tests/test_util.h"

namespace rdx::txn::dandelion {
namespace {

using namespace cluster::lockword;

class TableContext final : public cluster::WorkerContext {
 public:
  TableContext() : table_(store::testing::make_table(16 << 20)) { session_.emplace(table_->session()); }
  store::HashTable& table() override { return *table_.table; }
  store::Session& session() override { return *session_; }
  // (Not used by the calls tested.)
  rpc::Rpc& rpc() override { std::abort(); }
  rpc::Scheduler& sched() override { std::abort(); }
  const cluster::Topology& topology() const override { std::abort(); }
  uint16_t self() const override { return 0; }
  uint16_t worker_index() const override { return 0; }
  std::optional<transport::ConnId> peer(uint16_t /*node*/) const override { return std::nullopt; }
  cluster::Membership& membership() override { std::abort(); }
  cluster::LocalReads& local_reads() override { std::abort(); }
  uint64_t next_writer_id() override { return ++ids_; }

  // The lock word of `key` (0 when it has no record).
  uint64_t word(std::string_view key) {
    store::RecordRef ref = table_->find(*session_, key);
    return ref.valid() ? ref.lock_word().load() : 0;
  }

 private:
  store::testing::TestTable table_;
  std::optional<store::Session> session_;
  uint64_t ids_ = 0;
};

class RecordingLog final : public cluster::ReplicaLog {
 public:
  Scope begin() override { return Scope(this, 1); }
  rpc::Task<Code> replicate(const Scope& /*scope*/, uint64_t /*txid*/, const std::vector<cluster::LogWrite>& /*writes*/,
                            cluster::LogMode /*mode*/) override {
    co_return Code::kOk;
  }
  rpc::Task<void> resolve(const Scope& /*scope*/, uint64_t /*txid*/, std::vector<cluster::LogWrite> /*writes*/,
                          cluster::LogMode /*mode*/, bool /*committed*/) override {
    co_return;
  }
  void apply_at_primary(const cluster::LogWrite& w) override { applied.push_back(w); }
  rpc::Task<cluster::Read> read_committed(std::string /*key*/) override { co_return cluster::Read{}; }

  std::vector<cluster::LogWrite> applied;

 protected:
  void end(uint64_t /*gen*/) override {}
};

// A transaction of coordinator node 1 with a participant here and one at node 2.
constexpr uint64_t kTxid = (uint64_t{1} << 38) | 7;

struct ParticipantTest : ::testing::Test {
  TableContext ctx;
  RecordingLog log;
  Participant participant{ctx, log};

  // Locks `items` for kTxid as the commit's lock step does; every item must lock.
  void lock(std::vector<Item> items) {
    Batch b;
    b.txid = kTxid;
    b.participants = {0, 2};
    b.items = std::move(items);
    for (const ItemResult& r : participant.lock(b)) ASSERT_EQ(r.status, ItemStatus::kOk);
  }
  static Item write(std::string key, std::string value) {
    return Item{std::move(key), kWrite | kHasValue, 0, std::move(value)};
  }
  static Item read(std::string key) { return Item{std::move(key), 0, 0, {}}; }
  // The commit's unlock item for `it` (the coordinator's: release_of, kCommit, and the new version of a write).
  static Item commit_of(const Item& it, uint8_t more = 0) {
    Item u = release_of(it);
    u.flags |= kCommit | more;
    if ((u.flags & kWrite) != 0) u.version = 1;
    return u;
  }
  bool unlock(std::vector<Item> items) {
    Batch b;
    b.txid = kTxid;
    b.items = std::move(items);
    return participant.unlock(b);
  }
  bool locked_by_txn(std::string_view key) {
    const uint64_t w = ctx.word(key);
    return locked(w) && (w & kOwnerMask) == owner_bits(kTxid);
  }
};

// dnl2: the writes are applied in a step of their own, and the commit's unlock only releases them. Without that
// apply here, the unlock must not release a lock whose committed write is missing: it is refused (nothing released),
// and the transaction is left to a recovery (fenced), which finds it locked, not applied.
TEST_F(ParticipantTest, ACommitUnlockOfAWriteNotAppliedHereIsRefusedAndLeftToARecovery) {
  const Item w = write("w", "v"), r = read("r");
  lock({w, r});
  EXPECT_FALSE(unlock({commit_of(w), commit_of(r)}));
  EXPECT_TRUE(locked_by_txn("w"));
  EXPECT_TRUE(locked_by_txn("r"));
  EXPECT_TRUE(log.applied.empty());
  ASSERT_EQ(participant.pending().count(kTxid), 1u);
  EXPECT_TRUE(participant.pending().at(kTxid).fenced);
  EXPECT_EQ(participant.query(kTxid), TxnState::kLocked);
  // The coordinator's next message is refused too: the recovery decides.
  EXPECT_FALSE(unlock({commit_of(w), commit_of(r)}));
  EXPECT_TRUE(locked_by_txn("w"));
}

TEST_F(ParticipantTest, ACommitUnlockAfterTheApplyReleases) {
  const Item w = write("w", "v"), r = read("r");
  lock({w, r});
  Batch apply;
  apply.txid = kTxid;
  apply.items = {Item{"w", kWrite, 1, {}}};
  ASSERT_TRUE(participant.apply(apply));
  ASSERT_EQ(log.applied.size(), 1u);
  EXPECT_EQ(log.applied[0].value, "v");
  EXPECT_TRUE(unlock({commit_of(w), commit_of(r)}));
  EXPECT_FALSE(locked(ctx.word("w")));
  EXPECT_FALSE(locked(ctx.word("r")));
  EXPECT_EQ(participant.pending().count(kTxid), 0u);
  EXPECT_EQ(participant.query(kTxid), TxnState::kCommitted);  // (remembered: it has several participants)
  EXPECT_EQ(log.applied.size(), 1u);
}

// An apply of a transaction that holds no locks here (taken at a predecessor primary, or dropped when this node was
// deposed) writes nothing and is refused: the coordinator must not count the writes applied.
TEST_F(ParticipantTest, AnApplyOfATransactionWithNoLocksHereIsRefusedAndWritesNothing) {
  Batch apply;
  apply.txid = kTxid;
  apply.items = {Item{"w", kWrite, 1, {}}, Item{"d", kWrite | kDelete, 1, {}}};
  EXPECT_FALSE(participant.apply(apply));
  EXPECT_TRUE(log.applied.empty());
  EXPECT_EQ(ctx.word("w"), 0u);
  EXPECT_EQ(ctx.word("d"), 0u);
}

// A participant that holds only reads of the transaction gets no apply: its commit unlock releases.
TEST_F(ParticipantTest, ACommitUnlockOfReadsOnlyReleases) {
  const Item r = read("r"), s = read("s");
  lock({r, s});
  EXPECT_TRUE(unlock({commit_of(r), commit_of(s)}));
  EXPECT_FALSE(locked(ctx.word("r")));
  EXPECT_FALSE(locked(ctx.word("s")));
  EXPECT_EQ(participant.pending().count(kTxid), 0u);
}

// dnl4 and dnl1 apply at the unlock (kApplyAtUnlock): nothing was applied before, and the unlock applies and releases.
TEST_F(ParticipantTest, ACommitUnlockThatAppliesReleases) {
  const Item w = write("w", "v"), r = read("r");
  lock({w, r});
  EXPECT_TRUE(unlock({commit_of(w, kApplyAtUnlock), commit_of(r)}));
  ASSERT_EQ(log.applied.size(), 1u);
  EXPECT_EQ(log.applied[0].key, "w");
  EXPECT_EQ(log.applied[0].value, "v");
  EXPECT_EQ(log.applied[0].version, 1u);
  EXPECT_FALSE(locked(ctx.word("w")));
  EXPECT_FALSE(locked(ctx.word("r")));
}

// An abort releases an unapplied write.
TEST_F(ParticipantTest, AnAbortUnlockReleasesAWriteNotApplied) {
  const Item w = write("w", "v");
  lock({w});
  EXPECT_TRUE(unlock({release_of(w)}));
  EXPECT_FALSE(locked(ctx.word("w")));
  EXPECT_TRUE(log.applied.empty());
  EXPECT_EQ(participant.pending().count(kTxid), 0u);
}

}  // namespace
}  // namespace rdx::txn::dandelion
