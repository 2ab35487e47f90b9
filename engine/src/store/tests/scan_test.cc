// HashTable::scan: complete (every key present throughout is returned), consistent records, survives resizes,
// and the lock-word API additions (get with lock word, new records with a lock word).
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "store/tests/test_util.h"

namespace rdx::store::testing {
namespace {

TEST(HashTableScan, ReturnsEveryKeyWithItsValueVersionAndLockWord) {
  TestTable t = make_table(64 << 20, 64);
  Session s = t->session();
  constexpr int kKeys = 5000;
  for (int i = 0; i < kKeys; ++i)
    ASSERT_EQ(t->put(s, "k" + std::to_string(i), "v" + std::to_string(i), 100 + i, nullptr, i % 7 == 0 ? 0x42 : 0),
              OpStatus::kOk);
  std::vector<ScanItem> items;
  uint64_t cursor = 0;
  int pages = 0;
  do {
    cursor = t->scan(s, cursor, 97, &items);
    ++pages;
  } while (cursor != 0);
  EXPECT_GT(pages, 10);
  std::set<std::string> seen;
  for (const ScanItem& it : items) {
    int i = std::stoi(it.key.substr(1));
    EXPECT_EQ(it.value, "v" + std::to_string(i));
    EXPECT_EQ(it.version, 100u + i);
    EXPECT_EQ(it.lock_word, i % 7 == 0 ? 0x42u : 0u);
    seen.insert(it.key);
  }
  EXPECT_EQ(seen.size(), size_t{kKeys});
}

TEST(HashTableScan, CompleteWhileWritersInsertDeleteAndTheIndexGrows) {
  TestTable t = make_table(256 << 20, 16, 2);
  Session s = t->session();
  constexpr int kStable = 4000;
  for (int i = 0; i < kStable; ++i) ASSERT_EQ(t->put(s, "stable" + std::to_string(i), "x"), OpStatus::kOk);
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    Session w = t->session();
    for (int i = 0; !stop.load(); ++i) {
      (void)t->put(w, "churn" + std::to_string(i % 20000), std::string(i % 50, 'c'));
      if (i % 3 == 0) (void)t->remove(w, "churn" + std::to_string((i / 3) % 20000));
      if (i % 5000 == 0) t->grow(w);
    }
  });
  for (int round = 0; round < 3 * kScale; ++round) {
    std::vector<ScanItem> items;
    uint64_t cursor = 0;
    do cursor = t->scan(s, cursor, 50, &items);
    while (cursor != 0);
    std::set<std::string> seen;
    for (const ScanItem& it : items)
      if (it.key.rfind("stable", 0) == 0) seen.insert(it.key);
    ASSERT_EQ(seen.size(), size_t{kStable}) << "round " << round;
  }
  stop.store(true);
  churn.join();
}

TEST(HashTableLockWords, GetReturnsTheLockWordAndNewRecordsStartWithTheGivenOne) {
  TestTable t = make_table(16 << 20);
  Session s = t->session();
  uint64_t v = 0, lock = 7;
  ASSERT_EQ(t->insert(s, "a", "1", &v, 0x8000000000000001ull), OpStatus::kOk);
  std::string value;
  ASSERT_EQ(t->get(s, "a", &value, &v, &lock), OpStatus::kOk);
  EXPECT_EQ(lock, 0x8000000000000001ull);
  // An existing record keeps its lock word across puts, in place or moved to a bigger block.
  ASSERT_EQ(t->put(s, "a", std::string(5000, 'z'), kAutoVersion, nullptr, 0x1234), OpStatus::kOk);
  ASSERT_EQ(t->get(s, "a", &value, &v, &lock), OpStatus::kOk);
  EXPECT_EQ(lock, 0x8000000000000001ull);
  EXPECT_EQ(value.size(), 5000u);
  ASSERT_EQ(t->put(s, "b", "2", kAutoVersion, nullptr, 0x4000000000000000ull), OpStatus::kOk);
  ASSERT_EQ(t->get(s, "b", &value, &v, &lock), OpStatus::kOk);
  EXPECT_EQ(lock, 0x4000000000000000ull);
  // The batch API reports lock words too and creates records with the requested one.
  std::string out;
  Request reqs[2];
  reqs[0].op = Op::kGet;
  reqs[0].key = "b";
  reqs[0].value_out = &out;
  reqs[1].op = Op::kPut;
  reqs[1].key = "c";
  reqs[1].value = "3";
  reqs[1].new_lock_word = 0x99;
  t->execute(s, reqs);
  EXPECT_EQ(reqs[0].lock_word_out, 0x4000000000000000ull);
  ASSERT_EQ(t->get(s, "c", &value, &v, &lock), OpStatus::kOk);
  EXPECT_EQ(lock, 0x99u);
}

}  // namespace
}  // namespace rdx::store::testing
