// Hashtable microbenchmarks: batched (prefetching) GET vs one-at-a-time GET on a table far larger than the L3 cache,
// plus PUT (in-place update) and INSERT numbers. 8-byte keys and values. At the end it prints the batched/single
// throughput ratios measured in this run. Rates are per CPU second (Google Benchmark's default), which stays
// meaningful on a shared, oversubscribed machine; real times are printed alongside.
//
// Environment: RDX_BENCH_KEYS (default 6,000,000 keys: ~450 MB of table), RDX_BENCH_ARENA_MB (default 2048),
// RDX_BENCH_THP (default 1: ask for transparent huge pages on the arena, as production uses 2 MB pages).
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "common/memory.h"
#include "store/hashtable.h"

namespace rdx::store {
namespace {

size_t env_size(const char* name, size_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (end == v || *end != '\0') {
    std::fprintf(stderr, "%s=%s is not a number\n", name, v);
    std::exit(2);
  }
  return static_cast<size_t>(n);
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// 8-byte keys: the key number's bytes.
struct Key8 {
  char bytes[8];
  explicit Key8(uint64_t n) { std::memcpy(bytes, &n, 8); }
  std::string_view view() const { return {bytes, 8}; }
};

struct BenchTable {
  MemoryBlock memory;
  std::unique_ptr<HashTable> table;
  size_t keys = 0;
  uint64_t next_fresh_key = 0;  // insert benchmarks use keys from here on

  static BenchTable& get() {
    static BenchTable* t = create();
    return *t;
  }

  static BenchTable* create() {
    auto* b = new BenchTable;
    b->keys = env_size("RDX_BENCH_KEYS", 6'000'000);
    const size_t arena = env_size("RDX_BENCH_ARENA_MB", 2048) << 20;
    auto mem = MemoryBlock::allocate(arena, /*prefer_huge=*/true);
    if (!mem.is_ok()) {
      std::fprintf(stderr, "arena: %s\n", mem.status().to_string().c_str());
      std::exit(1);
    }
    b->memory = std::move(mem).value();
    if (!b->memory.huge() && env_size("RDX_BENCH_THP", 1) != 0) {
      madvise(b->memory.data(), b->memory.size(), MADV_HUGEPAGE);  // best effort
    }
    TableConfig cfg;
    cfg.arena = b->memory.span();
    auto t = HashTable::create(cfg);
    if (!t.is_ok()) {
      std::fprintf(stderr, "table: %s\n", t.status().to_string().c_str());
      std::exit(1);
    }
    b->table = std::move(t).value();
    Session s = b->table->session();
    for (uint64_t i = 0; i < b->keys; ++i) {
      if (b->table->insert(s, Key8(i).view(), Key8(i * 7).view()) != OpStatus::kOk) {
        std::fprintf(stderr, "loading key %llu failed\n", static_cast<unsigned long long>(i));
        std::exit(1);
      }
    }
    b->next_fresh_key = b->keys;
    const TableStats st = b->table->stats();
    std::fprintf(stderr,
                 "table: %zu keys, %zu primary buckets (%zu MB of index), %zu overflow buckets, %zu resizes while "
                 "loading, arena used %zu MB of %zu MB (%s pages)\n",
                 st.keys, st.buckets, st.buckets * 64 >> 20, st.overflow_buckets, st.resizes, st.arena_used >> 20,
                 st.arena_size >> 20, b->memory.huge() ? "2 MB hugetlb" : "4 KB/THP");
    return b;
  }

  // A uniformly random existing key.
  uint64_t random_key(uint64_t& rng) const {
    return static_cast<uint64_t>((static_cast<__uint128_t>(splitmix64(rng)) * keys) >> 64);
  }
};

void BM_GetOneAtATime(benchmark::State& state) {
  BenchTable& b = BenchTable::get();
  Session s = b.table->session();
  uint64_t rng = 1;
  std::string value;
  for (auto _ : state) {
    const Key8 key(b.random_key(rng));
    if (b.table->get(s, key.view(), &value) != OpStatus::kOk) state.SkipWithError("missing key");
    benchmark::DoNotOptimize(value.data());
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_GetBatched(benchmark::State& state) {
  BenchTable& b = BenchTable::get();
  Session s = b.table->session();
  const size_t n = static_cast<size_t>(state.range(0));
  uint64_t rng = 1;
  std::vector<Key8> keys(n, Key8(0));
  std::vector<std::string> values(n);
  std::vector<Request> batch(n);
  for (auto _ : state) {
    for (size_t i = 0; i < n; ++i) {
      keys[i] = Key8(b.random_key(rng));
      batch[i].op = Op::kGet;
      batch[i].key = keys[i].view();
      batch[i].value_out = &values[i];
    }
    b.table->execute(s, batch);
    for (const Request& r : batch) {
      if (r.status != OpStatus::kOk) state.SkipWithError("missing key");
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}

void BM_PutOneAtATime(benchmark::State& state) {
  BenchTable& b = BenchTable::get();
  Session s = b.table->session();
  uint64_t rng = 2;
  for (auto _ : state) {
    const uint64_t k = b.random_key(rng);
    if (b.table->put(s, Key8(k).view(), Key8(k + 1).view()) != OpStatus::kOk) state.SkipWithError("put failed");
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_PutBatched(benchmark::State& state) {
  BenchTable& b = BenchTable::get();
  Session s = b.table->session();
  const size_t n = static_cast<size_t>(state.range(0));
  uint64_t rng = 2;
  std::vector<Key8> keys(n, Key8(0)), values(n, Key8(0));
  std::vector<Request> batch(n);
  for (auto _ : state) {
    for (size_t i = 0; i < n; ++i) {
      const uint64_t k = b.random_key(rng);
      keys[i] = Key8(k);
      values[i] = Key8(k + 1);
      batch[i].op = Op::kPut;
      batch[i].key = keys[i].view();
      batch[i].value = values[i].view();
    }
    b.table->execute(s, batch);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}

// Inserts 1M fresh keys (fixed work, so the table stays under max_load and no resize lands in one variant only),
// then removes them again outside the timed loop.
void BM_Insert(benchmark::State& state) {
  BenchTable& b = BenchTable::get();
  Session s = b.table->session();
  const size_t n = static_cast<size_t>(state.range(0));  // 1 = one at a time
  const uint64_t first = b.next_fresh_key;
  uint64_t next = first;
  std::vector<Key8> keys(n, Key8(0));
  std::vector<Request> batch(n);
  for (auto _ : state) {
    if (n == 1) {
      const Key8 key(next++);
      if (b.table->insert(s, key.view(), key.view()) != OpStatus::kOk) state.SkipWithError("insert failed");
      continue;
    }
    for (size_t i = 0; i < n; ++i) {
      keys[i] = Key8(next++);
      batch[i].op = Op::kInsert;
      batch[i].key = keys[i].view();
      batch[i].value = keys[i].view();
    }
    b.table->execute(s, batch);
  }
  state.SetItemsProcessed(static_cast<int64_t>(next - first));
  for (uint64_t k = first; k < next; ++k) b.table->remove(s, Key8(k).view());
  b.next_fresh_key = next;  // never reuse keys: versions and placement stay realistic
}

BENCHMARK(BM_GetOneAtATime);
BENCHMARK(BM_GetBatched)->Arg(8)->Arg(16)->Arg(32);
BENCHMARK(BM_PutOneAtATime);
BENCHMARK(BM_PutBatched)->Arg(16);
constexpr int64_t kInsertsPerRun = 1 << 20;
BENCHMARK(BM_Insert)->Arg(1)->Iterations(kInsertsPerRun);
BENCHMARK(BM_Insert)->Arg(16)->Iterations(kInsertsPerRun / 16);

// Console output as usual, plus the items/s of every run for the ratio summary.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      auto it = r.counters.find("items_per_second");
      if (!r.error_occurred && it != r.counters.end()) rates_[r.benchmark_name()] = it->second.value;
    }
  }
  void print_ratio(const std::string& label, const std::string& fast, const std::string& slow) const {
    auto f = rates_.find(fast), s = rates_.find(slow);
    if (f == rates_.end() || s == rates_.end() || s->second <= 0) return;
    std::printf("%-34s %6.2f Mops/s vs %6.2f Mops/s = %.2fx\n", label.c_str(), f->second / 1e6, s->second / 1e6,
                f->second / s->second);
  }

 private:
  std::map<std::string, double> rates_;
};

}  // namespace
}  // namespace rdx::store

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  rdx::store::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\nratios measured in this run (batched / one at a time):\n");
  reporter.print_ratio("GET batch 8", "BM_GetBatched/8", "BM_GetOneAtATime");
  reporter.print_ratio("GET batch 16", "BM_GetBatched/16", "BM_GetOneAtATime");
  reporter.print_ratio("GET batch 32", "BM_GetBatched/32", "BM_GetOneAtATime");
  reporter.print_ratio("PUT batch 16", "BM_PutBatched/16", "BM_PutOneAtATime");
  reporter.print_ratio("INSERT batch 16", "BM_Insert/16/iterations:" + std::to_string(rdx::store::kInsertsPerRun / 16),
                       "BM_Insert/1/iterations:" + std::to_string(rdx::store::kInsertsPerRun));
  benchmark::Shutdown();
  return 0;
}
