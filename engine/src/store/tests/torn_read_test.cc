// Remote-reader validation: a reader that copies record bytes the way the tcp transport's emulated one-sided READ
// does (atomic_load_bytes: 8-byte acquire loads in ascending order) while writers update the record must never get
// a torn value accepted by decode_remote_record; local get()s racing with the same writer never return one either.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "common/atomic_copy.h"
#include "store/record.h"
#include "store/tests/test_util.h"

namespace rdx::store {
namespace {

constexpr int kWrites = 20000 * testing::kScale;

// In-place updates of one record: value i is 96 + i % 24 bytes, starts with i and repeats a pattern derived from it.
std::string pattern_value(uint64_t i) {
  std::string v(96 + i % 24, '\0');
  std::memcpy(v.data(), &i, 8);
  for (size_t j = 8; j < v.size(); ++j) v[j] = static_cast<char>((i * 31 + j) & 0xff);
  return v;
}

bool pattern_ok(const std::string& v, uint64_t* i_out) {
  if (v.size() < 96) return false;
  uint64_t i;
  std::memcpy(&i, v.data(), 8);
  if (v.size() != 96 + i % 24) return false;
  for (size_t j = 8; j < v.size(); ++j) {
    if (v[j] != static_cast<char>((i * 31 + j) & 0xff)) return false;
  }
  *i_out = i;
  return true;
}

bool naive_value_ok(const std::vector<std::byte>& image) {
  uint64_t word;
  std::memcpy(&word, image.data() + record::kHeaderOffset, 8);
  auto h = record::decode_header(word);
  if (!h) return false;
  uint64_t i;
  return pattern_ok(
      std::string(reinterpret_cast<const char*>(image.data()) + record::kKeyOffset + h->key_len, h->val_len), &i);
}

TEST(TornRead, RemoteImagesOfARecordUnderInPlaceWritesAreNeverAcceptedTorn) {
  auto t = testing::make_table(8 << 20);
  Session writer_session = t->session();
  uint64_t first_version = 0;
  ASSERT_EQ(t->insert(writer_session, "hot-key!", pattern_value(0), &first_version), OpStatus::kOk);
  Session reader_session = t->session();
  RecordRef ref = t->find(reader_session, "hot-key!");  // the reader's offset, as a lock RPC would return it
  ASSERT_TRUE(ref.valid());
  const uint64_t offset = ref.arena_offset();
  const uint32_t length = ref.length();

  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (uint64_t i = 1; i <= kWrites; ++i) {
      if (t->put(writer_session, "hot-key!", pattern_value(i)) != OpStatus::kOk) {
        ADD_FAILURE() << "put " << i << " failed";
        break;
      }
    }
    done = true;
  });

  Session local_session = t->session();
  uint64_t accepted = 0, busy = 0, naive_torn = 0, last_seen = 0, local_reads = 0;
  std::vector<std::string> failures;
  std::vector<std::byte> image(length);
  std::string v;
  while (!done.load() && failures.size() < 5) {
    atomic_load_bytes(image.data(), t.arena() + offset, length);
    // Control: the same image taken without the version check (how often an unvalidated reader would be fooled).
    if (!naive_value_ok(image)) ++naive_torn;
    uint64_t ver = 0;
    const Status st = HashTable::decode_remote_record(image, "hot-key!", &v, &ver);
    if (st.code() == Code::kBusy) {
      ++busy;
      continue;
    }
    if (!st.is_ok()) {
      failures.push_back("unexpected decode result " + st.to_string());
      continue;
    }
    ++accepted;
    uint64_t i = 0;
    if (!pattern_ok(v, &i)) failures.push_back("accepted a torn value");
    if (ver != first_version + i) failures.push_back("accepted version does not match the value");
    if (i < last_seen) failures.push_back("went back in time");
    last_seen = i;
    // The local lock-free path (seqlock on the same words) against the same writer.
    if (t->get(local_session, "hot-key!", &v, &ver) != OpStatus::kOk || !pattern_ok(v, &i) ||
        ver != first_version + i) {
      failures.push_back("local get returned a torn value");
    }
    ++local_reads;
  }
  writer.join();
  for (const auto& f : failures) ADD_FAILURE() << f;
  EXPECT_GT(accepted, 0u);
  EXPECT_EQ(t->find(reader_session, "hot-key!").arena_offset(), offset) << "updates were expected in place";
  std::printf(
      "writes=%d remote reads: accepted=%llu busy(rejected)=%llu, unvalidated copies that were torn=%llu; "
      "local gets=%llu\n",
      kWrites, static_cast<unsigned long long>(accepted), static_cast<unsigned long long>(busy),
      static_cast<unsigned long long>(naive_torn), static_cast<unsigned long long>(local_reads));
}

// Stale offsets: records move between blocks (size-class changes, remove + insert), blocks are freed and reused
// for other keys with the same versions. A reader that keeps reading an old offset may get kNotFound/kBusy/
// kInvalidArgument, or a consistent (possibly old) value of its key, never a torn or foreign one.
TEST(TornRead, StaleOffsetsNeverYieldTornOrForeignValues) {
  constexpr int kKeys = 16;
  auto t = testing::make_table(16 << 20, 64);
  auto key = [](int k) { return "stale-key-" + std::to_string(k % 10) + std::to_string(k / 10); };  // same length
  {
    Session s = t->session();
    for (int k = 0; k < kKeys; ++k)
      ASSERT_EQ(t->insert(s, key(k), testing::make_value(key(k), {0, 0}, 40)), OpStatus::kOk);
  }
  std::atomic<bool> done{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      Session s = t->session();
      std::mt19937_64 rng(w);
      for (uint64_t i = 1; i <= static_cast<uint64_t>(kWrites / 4); ++i) {
        const int k = static_cast<int>(rng() % kKeys);
        const std::string value = testing::make_value(key(k), {static_cast<uint32_t>(w), i}, 20 + rng() % 120);
        if (rng() % 10 == 0) {
          t->remove(s, key(k));
        } else {
          t->put(s, key(k), value);
        }
      }
    });
  }
  std::thread stopper([&] {
    for (auto& w : writers) w.join();
    done = true;
  });

  Session s = t->session();
  std::mt19937_64 rng(42);
  uint64_t accepted = 0, rejected = 0;
  std::vector<std::string> failures;
  std::vector<std::byte> image;
  std::string v;
  while (!done.load() && failures.size() < 5) {
    const int k = static_cast<int>(rng() % kKeys);
    RecordRef ref = t->find(s, key(k));
    if (!ref.valid()) continue;
    const uint64_t offset = ref.arena_offset();
    image.resize(ref.length());
    t->get(s, "unpin", nullptr);  // a new call ends the RecordRef's protection: the block may now be reused
    for (int r = 0; r < 50; ++r) {
      atomic_load_bytes(image.data(), t.arena() + offset, image.size());
      if (!HashTable::decode_remote_record(image, key(k), &v, nullptr).is_ok()) {
        ++rejected;
        continue;
      }
      ++accepted;
      if (!testing::check_value(key(k), v)) failures.push_back("accepted a torn or foreign value for " + key(k));
    }
  }
  stopper.join();
  for (const auto& f : failures) ADD_FAILURE() << f;
  EXPECT_GT(accepted, 0u);
  std::printf("stale-offset reads: accepted=%llu rejected=%llu\n", static_cast<unsigned long long>(accepted),
              static_cast<unsigned long long>(rejected));
}

// A writer's protocol as replication uses it: a placeholder inserted locked (its version is nobody's write), the
// value written over it in place, then the lock word cleared. A get() that reports the cleared lock word must
// report the value and version written under it, never the placeholder's. The race needs a reader preempted
// between its value and lock-word loads, so readers outnumber the cores.
TEST(TornRead, GetReturnsTheLockWordOfTheStateItRead) {
  constexpr uint64_t kPlaceholder = uint64_t{1} << 62;
  constexpr int kReaders = 4;
  const std::string key = "lockword-key";
  const std::string written(64, 'w');
  auto t = testing::make_table(8 << 20);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    Session s = t->session();
    for (int i = 0; i < kWrites; ++i) {
      uint64_t v = 0;
      // Room for the value, so that it is written in place and keeps the placeholder's lock word.
      if (t->insert(s, key, std::string(written.size(), '\0'), &v, kPlaceholder) != OpStatus::kOk) break;
      t->put(s, key, written, v + 1);
      t->find(s, key).lock_word().store(0, std::memory_order_release);
      for (int spin = 0; spin < 20; ++spin) t->get(s, "other", nullptr);  // the written state lasts a while
      t->remove(s, key);
    }
    done = true;
  });
  std::atomic<uint64_t> clean{0}, locked{0};
  std::mutex mu;
  std::vector<std::string> failures;
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r)
    readers.emplace_back([&] {
      Session s = t->session();
      while (!done.load()) {
        std::string value;
        uint64_t version = 0, lock = 0;
        if (t->get(s, key, &value, &version, &lock) != OpStatus::kOk) continue;
        if (lock != 0) {
          ++locked;
        } else if (++clean; value != written) {
          std::lock_guard<std::mutex> lk(mu);
          failures.push_back(fmt::format("version {} reported unlocked with the placeholder's value", version));
        }
      }
    });
  writer.join();
  for (auto& r : readers) r.join();
  for (size_t i = 0; i < std::min<size_t>(failures.size(), 5); ++i) ADD_FAILURE() << failures[i];
  EXPECT_GT(clean.load(), 0u);
  std::printf("gets: unlocked=%llu locked=%llu wrong=%zu\n", static_cast<unsigned long long>(clean.load()),
              static_cast<unsigned long long>(locked.load()), failures.size());
}

}  // namespace
}  // namespace rdx::store
