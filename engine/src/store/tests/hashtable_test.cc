// Single-thread semantics of every HashTable operation.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "common/atomic_copy.h"
#include "store/tests/test_util.h"

namespace rdx::store {
namespace {

using testing::make_table;

std::string key_of(int i) { return "key-" + std::to_string(i); }

TEST(HashTable, RejectsBadConfig) {
  auto mem = MemoryBlock::allocate(1 << 20, false);
  ASSERT_TRUE(mem.is_ok());
  TableConfig cfg;
  EXPECT_EQ(HashTable::create(cfg).status().code(), Code::kInvalidArgument);  // no arena
  cfg.arena = mem->span();
  for (double bad : {0.0, -1.0, 1.5, std::nan("")}) {
    cfg.max_load = bad;
    EXPECT_EQ(HashTable::create(cfg).status().code(), Code::kInvalidArgument) << bad;
  }
  cfg.max_load = 0.75;
  cfg.max_chain = 0;
  EXPECT_EQ(HashTable::create(cfg).status().code(), Code::kInvalidArgument);
  cfg.max_chain = 4;
  cfg.initial_buckets = 0;
  EXPECT_EQ(HashTable::create(cfg).status().code(), Code::kInvalidArgument);
  cfg.initial_buckets = 1 << 20;  // 64 MB of buckets in a 1 MB arena
  auto r = HashTable::create(cfg);
  EXPECT_EQ(r.status().code(), Code::kResourceExhausted);
  EXPECT_NE(r.status().message().find("arena"), std::string::npos);
}

TEST(HashTable, GetPutInsertRemove) {
  auto t = make_table(4 << 20);
  Session s = t->session();
  std::string v;
  uint64_t ver = 0;
  EXPECT_EQ(t->get(s, "a", &v, &ver), OpStatus::kNotFound);
  EXPECT_EQ(t->remove(s, "a"), OpStatus::kNotFound);
  EXPECT_EQ(t->insert(s, "a", "1", &ver), OpStatus::kOk);
  EXPECT_EQ(ver, 1u);
  EXPECT_EQ(t->insert(s, "a", "other", &ver), OpStatus::kExists);
  EXPECT_EQ(ver, 1u);
  ASSERT_EQ(t->get(s, "a", &v, &ver), OpStatus::kOk);
  EXPECT_EQ(v, "1");
  EXPECT_EQ(t->put(s, "a", "2", kAutoVersion, &ver), OpStatus::kOk);
  EXPECT_EQ(ver, 2u);
  EXPECT_EQ(t->put(s, "b", "x", kAutoVersion, &ver), OpStatus::kOk);  // upsert of a new key
  EXPECT_EQ(ver, 1u);
  EXPECT_EQ(t->size(), 2u);
  ASSERT_EQ(t->get(s, "a", &v, &ver), OpStatus::kOk);
  EXPECT_EQ(v, "2");
  EXPECT_EQ(ver, 2u);
  EXPECT_EQ(t->get(s, "a", nullptr, nullptr), OpStatus::kOk);  // outputs are optional
  EXPECT_EQ(t->remove(s, "a"), OpStatus::kOk);
  EXPECT_EQ(t->get(s, "a", &v, &ver), OpStatus::kNotFound);
  EXPECT_EQ(t->size(), 1u);
  EXPECT_EQ(t->stats().keys, 1u);
}

TEST(HashTable, VersionsNeverRepeatAcrossRemoveAndReinsert) {
  auto t = make_table(4 << 20);
  Session s = t->session();
  uint64_t last = 0, ver = 0;
  for (int round = 0; round < 5; ++round) {
    ASSERT_EQ(t->insert(s, "k", "v", &ver), OpStatus::kOk);
    EXPECT_GT(ver, last);
    last = ver;
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ(t->put(s, "k", "w", kAutoVersion, &ver), OpStatus::kOk);
      EXPECT_EQ(ver, last + 1);
      last = ver;
    }
    ASSERT_EQ(t->remove(s, "k"), OpStatus::kOk);
  }
  ASSERT_EQ(t->put(s, "k", "explicit", 1000, &ver), OpStatus::kOk);  // replication: explicit versions
  ASSERT_EQ(t->remove(s, "k", 2000), OpStatus::kOk);
  ASSERT_EQ(t->put(s, "k", "again", kAutoVersion, &ver), OpStatus::kOk);
  EXPECT_GT(ver, 2000u);
}

TEST(HashTable, ACopyRaisedToTheSourcesRemovedVersionsNeverIssuesThemAgain) {
  auto source = make_table(4 << 20);
  Session s = source->session();
  uint64_t ver = 0;
  for (int i = 0; i < 4; ++i) ASSERT_EQ(source->put(s, "k", "v", kAutoVersion, &ver), OpStatus::kOk);
  ASSERT_EQ(source->remove(s, "k"), OpStatus::kOk);
  EXPECT_EQ(source->removed_version_max(), ver);

  auto copy = make_table(4 << 20);  // a replica that restarted empty and copied what the source still holds
  Session c = copy->session();
  copy->raise_removed_version_max(source->removed_version_max());
  copy->raise_removed_version_max(1);  // never lowers
  uint64_t fresh = 0;
  ASSERT_EQ(copy->insert(c, "k", "again", &fresh), OpStatus::kOk);
  EXPECT_GT(fresh, ver);
}

TEST(HashTable, ExplicitVersionsApplyOnlyWhenNewer) {
  auto t = make_table(4 << 20);
  Session s = t->session();
  uint64_t ver = 0;
  std::string v;
  EXPECT_EQ(t->put(s, "k", "v10", 10, &ver), OpStatus::kOk);
  EXPECT_EQ(ver, 10u);
  EXPECT_EQ(t->put(s, "k", "v9", 9, &ver), OpStatus::kStale);
  EXPECT_EQ(ver, 10u);
  EXPECT_EQ(t->put(s, "k", "v10b", 10, &ver), OpStatus::kStale);
  EXPECT_EQ(t->remove(s, "k", 10), OpStatus::kStale);
  ASSERT_EQ(t->get(s, "k", &v, &ver), OpStatus::kOk);
  EXPECT_EQ(v, "v10");
  EXPECT_EQ(t->put(s, "k", "v12", 12, &ver), OpStatus::kOk);
  EXPECT_EQ(t->put(s, "k", "v13", kAutoVersion, &ver), OpStatus::kOk);
  EXPECT_EQ(ver, 13u);
  EXPECT_EQ(t->remove(s, "k", 14), OpStatus::kOk);
  EXPECT_EQ(t->get(s, "k", &v, &ver), OpStatus::kNotFound);
  EXPECT_EQ(t->put(s, "k", "huge", uint64_t{1} << 50, &ver), OpStatus::kTooLarge);  // versions have 48 bits
}

TEST(HashTable, SizeLimits) {
  auto t = make_table(8 << 20);
  Session s = t->session();
  const std::string max_key(kMaxKeyBytes, 'k'), long_key(kMaxKeyBytes + 1, 'k');
  const std::string max_value(kMaxValueBytes, 'v'), long_value(kMaxValueBytes + 1, 'v');
  std::string v;
  EXPECT_EQ(t->insert(s, long_key, "x"), OpStatus::kTooLarge);
  EXPECT_EQ(t->put(s, long_key, "x"), OpStatus::kTooLarge);
  EXPECT_EQ(t->get(s, long_key, &v), OpStatus::kTooLarge);
  EXPECT_EQ(t->remove(s, long_key), OpStatus::kTooLarge);
  EXPECT_EQ(t->insert(s, "k", long_value), OpStatus::kTooLarge);
  EXPECT_EQ(t->put(s, "k", long_value), OpStatus::kTooLarge);
  EXPECT_EQ(t->size(), 0u);
  ASSERT_EQ(t->insert(s, max_key, max_value), OpStatus::kOk);
  ASSERT_EQ(t->get(s, max_key, &v), OpStatus::kOk);
  EXPECT_EQ(v, max_value);
  ASSERT_EQ(t->insert(s, "", ""), OpStatus::kOk);  // empty key and value are ordinary
  ASSERT_EQ(t->get(s, "", &v), OpStatus::kOk);
  EXPECT_EQ(v, "");
}

TEST(HashTable, UpdatesStayInPlaceWithinASizeClassAndMoveAcrossClasses) {
  auto t = make_table(4 << 20);
  Session s = t->session();
  ASSERT_EQ(t->insert(s, "k", std::string(100, 'a')), OpStatus::kOk);
  const uint64_t first = t->find(s, "k").arena_offset();
  ASSERT_EQ(t->put(s, "k", std::string(110, 'b')), OpStatus::kOk);
  EXPECT_EQ(t->find(s, "k").arena_offset(), first);  // same class: in place
  ASSERT_EQ(t->put(s, "k", std::string(3000, 'c')), OpStatus::kOk);
  const uint64_t moved = t->find(s, "k").arena_offset();
  EXPECT_NE(moved, first);
  std::string v;
  uint64_t ver = 0;
  ASSERT_EQ(t->get(s, "k", &v, &ver), OpStatus::kOk);
  EXPECT_EQ(v, std::string(3000, 'c'));
  EXPECT_EQ(ver, 3u);
  ASSERT_EQ(t->put(s, "k", "tiny"), OpStatus::kOk);  // far smaller: moves back to a small block
  ASSERT_EQ(t->get(s, "k", &v, &ver), OpStatus::kOk);
  EXPECT_EQ(v, "tiny");
  EXPECT_EQ(ver, 4u);
}

TEST(HashTable, GrowsFromOneBucketAndKeepsEveryKey) {
  auto t = make_table(64 << 20, /*initial_buckets=*/1, /*max_chain=*/2);
  Session s = t->session();
  const int n = 5000 * testing::kScale;
  for (int i = 0; i < n; ++i) ASSERT_EQ(t->insert(s, key_of(i), "v" + std::to_string(i)), OpStatus::kOk) << i;
  const TableStats st = t->stats();
  EXPECT_EQ(st.keys, static_cast<size_t>(n));
  EXPECT_GE(st.resizes, 10u);
  EXPECT_GE(static_cast<double>(st.buckets) * 7 * 0.75, static_cast<double>(n) * 0.5);
  std::string v;
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(t->get(s, key_of(i), &v), OpStatus::kOk) << i;
    ASSERT_EQ(v, "v" + std::to_string(i));
  }
  EXPECT_EQ(t->get(s, key_of(n), &v), OpStatus::kNotFound);
}

TEST(HashTable, ExplicitGrowKeepsEverything) {
  auto t = make_table(16 << 20, 16);
  Session s = t->session();
  for (int i = 0; i < 50; ++i) ASSERT_EQ(t->insert(s, key_of(i), key_of(i)), OpStatus::kOk);
  const size_t before = t->stats().buckets;
  for (int g = 0; g < 4; ++g) ASSERT_TRUE(t->grow(s));
  EXPECT_EQ(t->stats().buckets, before << 4);
  EXPECT_EQ(t->stats().resizes, 4u);
  std::string v;
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(t->get(s, key_of(i), &v), OpStatus::kOk);
    EXPECT_EQ(v, key_of(i));
  }
}

TEST(HashTable, RemovesFreeSlotsAndMemory) {
  auto t = make_table(32 << 20, 64);
  Session s = t->session();
  const int n = 2000;
  size_t used_after_first = 0, buckets_after_first = 0;
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < n; ++i) ASSERT_EQ(t->insert(s, key_of(i), std::string(40 + i % 200, 'x')), OpStatus::kOk);
    EXPECT_EQ(t->size(), static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) ASSERT_EQ(t->remove(s, key_of(i)), OpStatus::kOk);
    const TableStats st = t->stats();
    EXPECT_EQ(st.keys, 0u);
    EXPECT_EQ(st.overflow_buckets, 0u) << "empty overflow buckets go back to the pool";
    // Every round stores ~2000 records of 80..280 bytes (> 300 KB). Without reuse the arena would grow by that much
    // per round; with reuse it only varies by a few slabs (blocks waiting out their epoch grace period, per-class
    // cache balance).
    if (round == 0) {
      used_after_first = st.arena_used;
      buckets_after_first = st.buckets;
    } else {
      EXPECT_EQ(st.buckets, buckets_after_first) << "freed slots are reused, the index does not grow";
      EXPECT_LE(st.arena_used, used_after_first + 64 * 1024) << "freed records are reused";
    }
  }
}

TEST(HashTable, TinyArenaReportsNoMemoryAndStaysIntact) {
  auto t = make_table(160 * 1024, /*initial_buckets=*/16);
  Session s = t->session();
  int inserted = 0;
  OpStatus st = OpStatus::kOk;
  while ((st = t->insert(s, key_of(inserted), std::string(180, 'a' + inserted % 26))) == OpStatus::kOk) ++inserted;
  EXPECT_EQ(st, OpStatus::kNoMemory);
  EXPECT_GT(inserted, 100);
  EXPECT_EQ(t->size(), static_cast<size_t>(inserted));
  std::string v;
  auto check_all = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      ASSERT_EQ(t->get(s, key_of(i), &v), OpStatus::kOk) << i;
      ASSERT_EQ(v, std::string(180, 'a' + i % 26));
    }
  };
  check_all(0, inserted);
  // An update that needs a bigger block fails cleanly and keeps the old value.
  EXPECT_EQ(t->put(s, key_of(0), std::string(20000, 'z')), OpStatus::kNoMemory);
  EXPECT_EQ(t->insert(s, "another", std::string(180, 'q')), OpStatus::kNoMemory);
  check_all(0, inserted);
  // Removing frees memory for new records.
  for (int i = 0; i < inserted / 2; ++i) ASSERT_EQ(t->remove(s, key_of(i)), OpStatus::kOk);
  for (int i = 0; i < inserted / 2; ++i) {
    ASSERT_EQ(t->insert(s, "new-" + std::to_string(i), std::string(180, 'n')), OpStatus::kOk) << i;
  }
  check_all(inserted / 2, inserted);
  EXPECT_EQ(t->size(), static_cast<size_t>(inserted - inserted / 2 + inserted / 2));
}

TEST(HashTable, BatchGivesTheSameResultsAsOneByOne) {
  auto batched = make_table(32 << 20, 16);
  auto single = make_table(32 << 20, 16);
  Session sb = batched->session(), ss = single->session();
  std::mt19937_64 rng(7);
  const int rounds = 300 * testing::kScale;
  for (int round = 0; round < rounds; ++round) {
    const size_t n = 1 + rng() % 40;
    std::vector<std::string> keys(n), values(n), out_b(n), out_s(n);
    std::vector<Request> reqs(n);
    for (size_t i = 0; i < n; ++i) {
      keys[i] = key_of(static_cast<int>(rng() % 300));  // repeats inside a batch on purpose
      values[i] = std::string(rng() % 300, static_cast<char>('a' + i % 26));
      reqs[i].op = static_cast<Op>(rng() % 4);
      reqs[i].key = keys[i];
      reqs[i].value = values[i];
      reqs[i].version = rng() % 5 == 0 ? rng() % 50 : kAutoVersion;
      reqs[i].value_out = &out_b[i];
    }
    batched->execute(sb, reqs);
    for (size_t i = 0; i < n; ++i) {
      uint64_t ver = 0;
      OpStatus st;
      switch (reqs[i].op) {
        case Op::kGet:
          st = single->get(ss, keys[i], &out_s[i], &ver);
          break;
        case Op::kPut:
          st = single->put(ss, keys[i], values[i], reqs[i].version, &ver);
          break;
        case Op::kInsert:
          st = single->insert(ss, keys[i], values[i], &ver);
          break;
        case Op::kRemove:
          st = single->remove(ss, keys[i], reqs[i].version);
          break;
      }
      ASSERT_EQ(reqs[i].status, st) << "round " << round << " request " << i;
      if (reqs[i].op != Op::kRemove) {
        EXPECT_EQ(reqs[i].version_out, ver);
      }
      if (reqs[i].op == Op::kGet) {
        EXPECT_EQ(out_b[i], out_s[i]);
      }
    }
  }
  EXPECT_EQ(batched->size(), single->size());
  EXPECT_GT(batched->stats().resizes, 0u);
}

TEST(HashTable, BatchValidatesEveryRequest) {
  auto t = make_table(4 << 20);
  Session s = t->session();
  const std::string long_key(kMaxKeyBytes + 1, 'k');
  std::string out;
  Request reqs[3];
  reqs[0] = {Op::kInsert, "a", "1"};
  reqs[1] = {Op::kPut, long_key, "1"};
  reqs[2] = {Op::kGet, "a", {}, kAutoVersion, &out};
  t->execute(s, reqs);
  EXPECT_EQ(reqs[0].status, OpStatus::kOk);
  EXPECT_EQ(reqs[1].status, OpStatus::kTooLarge);
  EXPECT_EQ(reqs[2].status, OpStatus::kOk);
  EXPECT_EQ(out, "1");
}

TEST(HashTable, RecordRefExposesLockWordVersionAndRemoteImage) {
  auto t = make_table(4 << 20);
  Session s = t->session();
  ASSERT_EQ(t->put(s, "acct:1", "balance=100", 41), OpStatus::kOk);
  EXPECT_FALSE(t->find(s, "missing").valid());
  RecordRef ref = t->find(s, "acct:1");
  ASSERT_TRUE(ref.valid());
  EXPECT_EQ(ref.version(), 41u);
  EXPECT_EQ(ref.arena_offset() % 8, 0u);
  uint64_t expected = 0;
  EXPECT_TRUE(ref.lock_word().compare_exchange_strong(expected, 0xabc));  // a protocol lock, as a peer would CAS

  std::vector<std::byte> image(ref.length());
  atomic_load_bytes(image.data(), t.arena() + ref.arena_offset(), image.size());  // what a one-sided READ returns
  std::string v;
  uint64_t ver = 0;
  ASSERT_TRUE(HashTable::decode_remote_record(image, "acct:1", &v, &ver).is_ok());
  EXPECT_EQ(v, "balance=100");
  EXPECT_EQ(ver, 41u);
  EXPECT_EQ(HashTable::decode_remote_record(image, "acct:2", &v, &ver).code(), Code::kNotFound);
  const uint64_t offset = ref.arena_offset();
  const uint32_t length = ref.length();

  // The lock word survives in-place value updates.
  ASSERT_EQ(t->put(s, "acct:1", "balance=90"), OpStatus::kOk);
  RecordRef again = t->find(s, "acct:1");
  EXPECT_EQ(again.arena_offset(), offset);
  EXPECT_EQ(again.lock_word().load(), 0xabcu);
  EXPECT_EQ(again.version(), 42u);
  // An update into a bigger block carries the lock over; the old block's lock word refuses further CASes.
  ASSERT_EQ(t->put(s, "acct:1", std::string(500, 'b')), OpStatus::kOk);
  RecordRef relocated = t->find(s, "acct:1");
  EXPECT_NE(relocated.arena_offset(), offset);
  EXPECT_EQ(relocated.lock_word().load(), 0xabcu);
  uint64_t stale_expected = 0xabc;
  EXPECT_FALSE(reinterpret_cast<std::atomic<uint64_t>*>(t.arena() + offset)
                   ->compare_exchange_strong(stale_expected, 0));  // a peer's unlock on the stale record fails
  EXPECT_EQ(stale_expected, kRetiredLockWord);
  atomic_load_bytes(image.data(), t.arena() + offset, length);
  EXPECT_EQ(HashTable::decode_remote_record(image, "acct:1", &v, &ver).code(), Code::kNotFound);

  const uint64_t relocated_offset = relocated.arena_offset();
  image.resize(relocated.length());  // before the next call ends the reference's protection
  ASSERT_EQ(t->remove(s, "acct:1"), OpStatus::kOk);
  atomic_load_bytes(image.data(), t.arena() + relocated_offset, image.size());
  EXPECT_EQ(HashTable::decode_remote_record(image, "acct:1", &v, &ver).code(), Code::kNotFound);
}

TEST(HashTable, SessionsMoveAndManyCoexist) {
  auto t = make_table(4 << 20);
  std::vector<Session> sessions;
  for (int i = 0; i < 8; ++i) sessions.push_back(t->session());
  Session moved = std::move(sessions[3]);
  EXPECT_EQ(t->put(moved, "k", "v"), OpStatus::kOk);
  std::string v;
  EXPECT_EQ(t->get(sessions[5], "k", &v), OpStatus::kOk);
  EXPECT_EQ(v, "v");
}

TEST(HashTable, StatusNames) {
  EXPECT_STREQ(op_status_name(OpStatus::kOk), "ok");
  EXPECT_STREQ(op_status_name(OpStatus::kNoMemory), "no_memory");
  EXPECT_STREQ(op_status_name(OpStatus::kStale), "stale");
}

}  // namespace
}  // namespace rdx::store
