// Record locks and the lock-word convention every family shares (cluster/lockword.h, cluster/record_locks.h), on a
// real table.
#include "cluster/record_locks.h"

#include <gtest/gtest.h>

#include "cluster/local_reads.h"
#include "cluster/lockword.h"
#include "common/memory.h"

namespace rdx::cluster {
namespace {

using namespace lockword;

struct Table {
  MemoryBlock memory;
  std::unique_ptr<store::HashTable> table;
  std::optional<store::Session> session;
  Table() {
    memory = MemoryBlock::allocate(16 << 20, false).value();
    store::TableConfig cfg;
    cfg.arena = memory.span();
    table = store::HashTable::create(cfg).value();
    session.emplace(table->session());
  }
  uint64_t word(std::string_view key) {
    store::RecordRef ref = table->find(*session, key);
    return ref.valid() ? ref.lock_word().load() : 0;
  }
  Read read(std::string_view key, ReadMode mode) {
    std::string value;
    uint64_t version = 0, lock = 0;
    store::OpStatus s = table->get(*session, key, &value, &version, &lock);
    return LocalReads::interpret(s, std::move(value), version, lock, mode);
  }
};

TEST(RecordLocks, AnAbsentKeyIsLockedThroughAPlaceholderThatGoesWithTheLock) {
  Table t;
  LockResult r = try_lock(*t.table, *t.session, "k", 0x1234);
  ASSERT_EQ(r.status, LockStatus::kLocked);
  EXPECT_FALSE(r.existed);
  EXPECT_TRUE(locked(t.word("k")));
  EXPECT_TRUE(absent(t.word("k")));
  EXPECT_EQ(t.read("k", ReadMode::kLatest).status, Code::kNotFound);  // a placeholder is absent to readers
  EXPECT_EQ(t.read("k", ReadMode::kCommitted).status, Code::kBusy);   // ...and held for committed reads
  EXPECT_EQ(try_lock(*t.table, *t.session, "k", 0x5678).status, LockStatus::kHeld);
  EXPECT_FALSE(release_lock(*t.table, *t.session, "k", 0x5678));  // not the holder
  EXPECT_TRUE(release_lock(*t.table, *t.session, "k", 0x1234));
  EXPECT_FALSE(t.table->find(*t.session, "k").valid());
}

TEST(RecordLocks, VersionChecksAndRelease) {
  Table t;
  ASSERT_EQ(t.table->put(*t.session, "k", "v1"), store::OpStatus::kOk);
  uint64_t v = 0;
  std::string value;
  ASSERT_EQ(t.table->get(*t.session, "k", &value, &v), store::OpStatus::kOk);
  LockResult changed = try_lock(*t.table, *t.session, "k", 7, v + 1);
  EXPECT_EQ(changed.status, LockStatus::kChanged);
  EXPECT_EQ(changed.version, v);
  LockResult r = try_lock(*t.table, *t.session, "k", 7, v);
  ASSERT_EQ(r.status, LockStatus::kLocked);
  EXPECT_TRUE(r.existed);
  EXPECT_EQ(r.version, v);
  EXPECT_EQ(t.read("k", ReadMode::kLatest).value, "v1");  // optimistic readers see the value under the lock
  EXPECT_EQ(t.read("k", ReadMode::kCommitted).status, Code::kBusy);
  EXPECT_TRUE(release_lock(*t.table, *t.session, "k", 7));
  EXPECT_EQ(t.word("k"), 0u);
  EXPECT_EQ(t.read("k", ReadMode::kCommitted).value, "v1");
}

TEST(RecordLocks, AnAbsentRecordGoesWhenItsLockIsReleased) {
  // A committed delete leaves an absent record under the lock (ReplicaLog::apply_at_primary); the release removes it.
  Table t;
  ASSERT_EQ(t.table->put(*t.session, "k", "v1"), store::OpStatus::kOk);
  ASSERT_EQ(try_lock(*t.table, *t.session, "k", 9).status, LockStatus::kLocked);
  ASSERT_TRUE(set_lock_bits(*t.table, *t.session, "k", kAbsent));
  EXPECT_EQ(t.read("k", ReadMode::kLatest).status, Code::kNotFound);
  EXPECT_TRUE(release_lock(*t.table, *t.session, "k", 9));
  EXPECT_FALSE(t.table->find(*t.session, "k").valid());
}

TEST(LockWord, HeldWritesMakeAKeyUnreadable) {
  Table t;
  ASSERT_EQ(t.table->put(*t.session, "k", "v1"), store::OpStatus::kOk);
  ASSERT_TRUE(set_lock_bits(*t.table, *t.session, "k", kHoldOne));
  EXPECT_EQ(holds(t.word("k")), 1u);
  EXPECT_FALSE(readable(t.word("k")));
  EXPECT_EQ(t.read("k", ReadMode::kCommitted).status, Code::kBusy);
  EXPECT_EQ(t.read("k", ReadMode::kLatest).value, "v1");
  ASSERT_TRUE(clear_lock_bits(*t.table, *t.session, "k", kHoldMask));
  EXPECT_TRUE(readable(t.word("k")));
  EXPECT_FALSE(retired(kLocked | kNotReadable | kAbsent | kHoldMask | kOwnerMask));
}

}  // namespace
}  // namespace rdx::cluster
