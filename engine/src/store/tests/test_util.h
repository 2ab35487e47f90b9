#pragma once
// Helpers for the store tests: arenas, tables, self-checking values.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/hash.h"
#include "common/memory.h"
#include "store/hashtable.h"

namespace rdx::store::testing {

// Heavier runs in optimized, uninstrumented builds; sanitizer builds keep the same coverage with fewer iterations.
#if defined(__SANITIZE_THREAD__)
inline constexpr int kScale = 1;
#elif defined(__SANITIZE_ADDRESS__)
inline constexpr int kScale = 2;
#else
inline constexpr int kScale = 8;
#endif

struct TestTable {
  MemoryBlock memory;
  std::unique_ptr<HashTable> table;
  HashTable* operator->() const { return table.get(); }
  std::byte* arena() const { return memory.data(); }
};

inline TestTable make_table(size_t arena_bytes, size_t initial_buckets = 1024, unsigned max_chain = 4,
                            double max_load = 0.75) {
  TestTable t;
  auto mem = MemoryBlock::allocate(arena_bytes, /*prefer_huge=*/false);
  EXPECT_TRUE(mem.is_ok()) << mem.status().to_string();
  t.memory = std::move(mem).value();
  TableConfig cfg;
  cfg.arena = t.memory.span();
  cfg.initial_buckets = initial_buckets;
  cfg.max_chain = max_chain;
  cfg.max_load = max_load;
  auto table = HashTable::create(cfg);
  EXPECT_TRUE(table.is_ok()) << table.status().to_string();
  t.table = std::move(table).value();
  return t;
}

// A value that names its key, its writer and a sequence number, padded to `len` bytes with bytes derived from all
// three and closed by a checksum, so a torn or misplaced value is always detected.
struct ValueId {
  uint32_t writer = 0;
  uint64_t seq = 0;
  bool operator==(const ValueId&) const = default;
};

inline std::string make_value(std::string_view key, ValueId id, size_t len) {
  std::string v = std::string(key) + "|" + std::to_string(id.writer) + "|" + std::to_string(id.seq) + "|";
  const uint64_t seed = hash_bytes(v.data(), v.size());
  while (v.size() + 16 < len) v.push_back(static_cast<char>('a' + (seed + v.size()) % 26));
  char sum[17];
  std::snprintf(sum, sizeof(sum), "%016llx", static_cast<unsigned long long>(hash_bytes(v.data(), v.size())));
  return v + sum;
}

// The id of a value made by make_value for `key`, or nullopt if the value is torn or belongs to another key.
inline std::optional<ValueId> check_value(std::string_view key, std::string_view v) {
  if (v.size() < 16) return std::nullopt;
  const std::string_view body = v.substr(0, v.size() - 16);
  char sum[17];
  std::snprintf(sum, sizeof(sum), "%016llx", static_cast<unsigned long long>(hash_bytes(body.data(), body.size())));
  if (v.substr(v.size() - 16) != sum) return std::nullopt;
  if (body.substr(0, key.size()) != key || body.size() <= key.size() || body[key.size()] != '|') return std::nullopt;
  ValueId id;
  unsigned long long writer = 0, seq = 0;
  const std::string rest(body.substr(key.size() + 1));
  if (std::sscanf(rest.c_str(), "%llu|%llu|", &writer, &seq) != 2) return std::nullopt;
  id.writer = static_cast<uint32_t>(writer);
  id.seq = seq;
  return id;
}

}  // namespace rdx::store::testing
