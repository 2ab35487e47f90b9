// Concurrent insert/delete/get/put/batch/resize with a checker.
//
// Each worker owns a private key range and keeps an exact model of it: since only it writes those keys, every
// result (status, version, value) must match the model, versions must grow strictly across remove + re-insert, and at
// the end every key must be present or absent exactly as modelled (no lost keys, no phantoms). All workers also
// write a small set of shared keys: every successful write logs (key, version) -> value id; every read must return a
// self-consistent value whose (key, version) was written with exactly that value id (no phantom or torn values,
// no two writes with the same version), and each thread's reads of a key must see non-decreasing versions.
// A reader thread checks values of random keys for integrity and a grower thread forces resizes throughout.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "store/tests/test_util.h"

namespace rdx::store {
namespace {

using testing::check_value;
using testing::make_value;
using testing::ValueId;

constexpr int kWorkers = 4;
constexpr int kPrivateKeys = 300 * testing::kScale;
constexpr int kSharedKeys = 24;
constexpr int kOpsPerWorker = 6000 * testing::kScale;
constexpr int kForcedResizes = 6;

std::string private_key(int worker, int i) { return "p" + std::to_string(worker) + ":" + std::to_string(i); }
std::string shared_key(int i) { return "shared:" + std::to_string(i); }

struct ModelEntry {
  bool present = false;
  uint64_t version = 0;   // current version when present
  uint64_t max_ever = 0;  // highest version the key ever had
  std::string value;
};

struct SharedWrite {
  int key;
  uint64_t version;
  ValueId id;
};

struct WorkerLog {
  std::vector<SharedWrite> writes;
  std::vector<SharedWrite> reads;
  std::vector<std::string> failures;
};

class Worker {
 public:
  Worker(HashTable& t, int id) : t_(t), s_(t.session()), id_(id), rng_(1000 + id), model_(kPrivateKeys) {}

  void run(std::atomic<int>& finished) {
    for (int op = 0; op < kOpsPerWorker && log_.failures.size() < 5; ++op) {
      const int r = static_cast<int>(rng_() % 100);
      if (r < 15) {
        shared_op();
      } else if (r < 25) {
        private_batch();
      } else {
        private_op(static_cast<int>(rng_() % kPrivateKeys));
      }
    }
    finished.fetch_add(1);
  }

  void verify_final(std::vector<std::string>& failures) {
    std::string v;
    uint64_t ver = 0;
    for (int k = 0; k < kPrivateKeys; ++k) {
      const ModelEntry& m = model_[k];
      const OpStatus st = t_.get(s_, private_key(id_, k), &v, &ver);
      if (m.present != (st == OpStatus::kOk) || (m.present && (v != m.value || ver != m.version))) {
        failures.push_back("final state of " + private_key(id_, k) + " differs from the model");
      }
    }
  }

  size_t present() const {
    size_t n = 0;
    for (const auto& m : model_) n += m.present;
    return n;
  }
  WorkerLog& log() { return log_; }

 private:
  void fail(const std::string& what) { log_.failures.push_back("worker " + std::to_string(id_) + ": " + what); }

  std::string next_value(const std::string& key) {
    return make_value(key, {static_cast<uint32_t>(id_), ++seq_}, 20 + rng_() % 400);  // crosses size classes
  }

  // Applies one private request's result to the model, checking it against the expected outcome.
  void check_private(Op op, int k, uint64_t explicit_version, const std::string& value, OpStatus st, uint64_t ver,
                     const std::string& got) {
    ModelEntry& m = model_[k];
    const std::string key = private_key(id_, k);
    auto expect = [&](bool ok, const char* what) {
      if (!ok) fail(std::string(what) + " on " + key + " (status " + op_status_name(st) + ")");
    };
    switch (op) {
      case Op::kGet:
        expect(m.present ? st == OpStatus::kOk && got == m.value && ver == m.version : st == OpStatus::kNotFound,
               "get");
        break;
      case Op::kInsert:
        if (m.present) {
          expect(st == OpStatus::kExists && ver == m.version, "insert of a present key");
        } else {
          expect(st == OpStatus::kOk && ver > m.max_ever, "insert");
          m = {true, ver, ver, value};
        }
        break;
      case Op::kPut:
        if (explicit_version != kAutoVersion && m.present && explicit_version <= m.version) {
          expect(st == OpStatus::kStale && ver == m.version, "stale put");
        } else {
          const bool version_ok = explicit_version != kAutoVersion ? ver == explicit_version
                                  : m.present                      ? ver == m.version + 1
                                                                   : ver > m.max_ever;
          expect(st == OpStatus::kOk && version_ok, "put");
          m = {true, ver, std::max(m.max_ever, ver), value};
        }
        break;
      case Op::kRemove:
        if (!m.present) {
          expect(st == OpStatus::kNotFound, "remove of an absent key");
        } else if (explicit_version != kAutoVersion && explicit_version <= m.version) {
          expect(st == OpStatus::kStale, "stale remove");
        } else {
          expect(st == OpStatus::kOk, "remove");
          m.present = false;
          m.max_ever = std::max(m.max_ever, explicit_version);
        }
        break;
    }
  }

  Op random_op() { return static_cast<Op>(rng_() % 4); }

  uint64_t random_explicit_version(int k) {
    if (rng_() % 8 != 0) return kAutoVersion;
    const ModelEntry& m = model_[k];
    // Mostly newer (applied), sometimes not newer (stale).
    return rng_() % 3 == 0 ? std::max<uint64_t>(1, m.version) : m.max_ever + 1 + rng_() % 3;
  }

  void private_op(int k) {
    const std::string key = private_key(id_, k);
    const Op op = random_op();
    const uint64_t explicit_version = op == Op::kPut || op == Op::kRemove ? random_explicit_version(k) : kAutoVersion;
    const std::string value = next_value(key);
    std::string got;
    uint64_t ver = 0;
    OpStatus st = OpStatus::kOk;
    switch (op) {
      case Op::kGet:
        st = t_.get(s_, key, &got, &ver);
        break;
      case Op::kInsert:
        st = t_.insert(s_, key, value, &ver);
        break;
      case Op::kPut:
        st = t_.put(s_, key, value, explicit_version, &ver);
        break;
      case Op::kRemove:
        st = t_.remove(s_, key, explicit_version);
        break;
    }
    check_private(op, k, explicit_version, value, st, ver, got);
  }

  // A batch of private requests (keys may repeat): results must equal executing them in order.
  void private_batch() {
    const size_t n = 2 + rng_() % 20;
    std::vector<int> ks(n);
    std::vector<std::string> keys(n), values(n), outs(n);
    std::vector<Request> reqs(n);
    for (size_t i = 0; i < n; ++i) {
      ks[i] = static_cast<int>(rng_() % kPrivateKeys);
      keys[i] = private_key(id_, ks[i]);
      values[i] = next_value(keys[i]);
      reqs[i].op = random_op();
      reqs[i].key = keys[i];
      reqs[i].value = values[i];
      reqs[i].value_out = &outs[i];
    }
    t_.execute(s_, reqs);
    for (size_t i = 0; i < n; ++i) {
      check_private(reqs[i].op, ks[i], kAutoVersion, values[i], reqs[i].status, reqs[i].version_out, outs[i]);
    }
  }

  void shared_op() {
    const int k = static_cast<int>(rng_() % kSharedKeys);
    const std::string key = shared_key(k);
    const int r = static_cast<int>(rng_() % 100);
    uint64_t ver = 0;
    if (r < 45) {
      const ValueId id{static_cast<uint32_t>(id_), ++seq_};
      const OpStatus st = t_.put(s_, key, make_value(key, id, 20 + rng_() % 200), kAutoVersion, &ver);
      if (st != OpStatus::kOk) return fail("shared put failed: " + std::string(op_status_name(st)));
      log_.writes.push_back({k, ver, id});
      note_seen(k, ver);
    } else if (r < 48) {
      t_.remove(s_, key);
    } else {
      std::string got;
      const OpStatus st = t_.get(s_, key, &got, &ver);
      if (st == OpStatus::kNotFound) return;
      if (st != OpStatus::kOk) return fail("shared get failed");
      auto id = check_value(key, got);
      if (!id) return fail("torn or foreign value for " + key);
      log_.reads.push_back({k, ver, *id});
      note_seen(k, ver);
    }
  }

  void note_seen(int k, uint64_t ver) {
    uint64_t& last = last_seen_[k];
    if (ver < last) fail("versions of " + shared_key(k) + " went backwards");
    last = ver;
  }

  HashTable& t_;
  Session s_;
  int id_;
  std::mt19937_64 rng_;
  std::vector<ModelEntry> model_;
  std::map<int, uint64_t> last_seen_;
  uint64_t seq_ = 0;
  WorkerLog log_;
};

TEST(HashTableConcurrency, MixedOpsWithForcedResizesMatchTheModel) {
  auto t = testing::make_table(256 << 20, /*initial_buckets=*/8, /*max_chain=*/2);
  std::vector<std::unique_ptr<Worker>> workers;
  for (int w = 0; w < kWorkers; ++w) workers.push_back(std::make_unique<Worker>(*t.table, w));
  std::atomic<int> finished{0};
  std::atomic<uint64_t> integrity_reads{0};
  std::vector<std::string> reader_failures;

  std::vector<std::thread> threads;
  for (auto& w : workers) threads.emplace_back([&, wp = w.get()] { wp->run(finished); });
  // Reader: random keys of every range; any value it sees must be intact and belong to the key.
  threads.emplace_back([&] {
    Session s = t->session();
    std::mt19937_64 rng(99);
    std::string v;
    while (finished.load() < kWorkers && reader_failures.size() < 5) {
      const bool shared = rng() % 4 == 0;
      const std::string key =
          shared ? shared_key(static_cast<int>(rng() % kSharedKeys))
                 : private_key(static_cast<int>(rng() % kWorkers), static_cast<int>(rng() % kPrivateKeys));
      if (t->get(s, key, &v) == OpStatus::kOk) {
        integrity_reads.fetch_add(1, std::memory_order_relaxed);
        if (!check_value(key, v)) reader_failures.push_back("reader saw a torn/foreign value for " + key);
      }
    }
  });
  // Grower: resizes on top of the ones load and chain length trigger.
  int forced = 0;
  threads.emplace_back([&] {
    Session s = t->session();
    while (forced < kForcedResizes && finished.load() < kWorkers) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (t->grow(s)) ++forced;
    }
  });
  for (auto& th : threads) th.join();

  std::vector<std::string> failures = reader_failures;
  size_t expected_keys = 0;
  std::map<std::pair<int, uint64_t>, ValueId> written;
  for (auto& w : workers) {
    failures.insert(failures.end(), w->log().failures.begin(), w->log().failures.end());
    w->verify_final(failures);
    expected_keys += w->present();
    for (const SharedWrite& sw : w->log().writes) {
      if (!written.emplace(std::pair(sw.key, sw.version), sw.id).second) {
        failures.push_back("two writes of " + shared_key(sw.key) + " got version " + std::to_string(sw.version));
      }
    }
  }
  size_t reads = 0;
  for (auto& w : workers) {
    for (const SharedWrite& r : w->log().reads) {
      ++reads;
      auto it = written.find({r.key, r.version});
      if (it == written.end() || !(it->second == r.id)) {
        failures.push_back("read of " + shared_key(r.key) + " v" + std::to_string(r.version) +
                           " returned a value no write produced with that version");
      }
    }
  }
  {
    Session s = t->session();
    for (int k = 0; k < kSharedKeys; ++k) expected_keys += t->get(s, shared_key(k), nullptr) == OpStatus::kOk;
  }
  for (size_t i = 0; i < std::min<size_t>(failures.size(), 10); ++i) ADD_FAILURE() << failures[i];
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures";
  const TableStats st = t->stats();
  EXPECT_EQ(st.keys, expected_keys);
  EXPECT_GE(forced, kForcedResizes / 2) << "the grower could not force resizes";
  EXPECT_GE(st.resizes, static_cast<size_t>(kForcedResizes));
  std::printf(
      "workers=%d ops/worker=%d resizes=%zu (forced %d) buckets=%zu keys=%zu shared writes=%zu reads=%zu "
      "integrity reads=%llu\n",
      kWorkers, kOpsPerWorker, st.resizes, forced, st.buckets, st.keys, written.size(), reads,
      static_cast<unsigned long long>(integrity_reads.load()));
}

}  // namespace
}  // namespace rdx::store
