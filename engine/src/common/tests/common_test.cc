#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "common/atomic_copy.h"
#include "common/hash.h"
#include "common/memory.h"
#include "common/status.h"

namespace rdx {

TEST(Status, CarriesCodeAndMessage) {
  Status s = error(Code::kInvalidArgument, "field {} must be {}", "port", "1..65535");
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.to_string(), "INVALID_ARGUMENT: field port must be 1..65535");
  Result<int> r = s;
  EXPECT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  Result<int> ok = 7;
  ASSERT_TRUE(ok.is_ok());
  EXPECT_EQ(*ok, 7);
}

TEST(Memory, AllocatesZeroedAndFallsBackWithoutHugePages) {
  auto blk = MemoryBlock::allocate(3 << 20, /*prefer_huge=*/true);
  ASSERT_TRUE(blk.is_ok()) << blk.status().to_string();
  EXPECT_GE(blk->size(), size_t{3 << 20});
  for (size_t i = 0; i < blk->size(); i += 4096) ASSERT_EQ(blk->data()[i], std::byte{0});
  MemoryBlock moved = std::move(blk.value());
  EXPECT_NE(moved.data(), nullptr);
  EXPECT_FALSE(MemoryBlock::allocate(0, false).is_ok());
}

TEST(Hash, SpreadsAndDependsOnEveryByte) {
  EXPECT_NE(hash_key("a"), hash_key("b"));
  EXPECT_NE(hash_key("key-0000000001"), hash_key("key-0000000002"));
  EXPECT_NE(hash_key(std::string(100, 'x')), hash_key(std::string(100, 'x') + "y"));
  EXPECT_EQ(hash_key("same"), hash_key("same"));
}

TEST(AtomicCopy, CopiesUnalignedEdges) {
  alignas(8) std::byte src[40], dst[40] = {};
  for (int i = 0; i < 40; ++i) src[i] = std::byte(i);
  atomic_load_bytes(dst + 3, src + 3, 30);
  for (int i = 3; i < 33; ++i) EXPECT_EQ(dst[i], std::byte(i));
  EXPECT_EQ(dst[2], std::byte{0});
  EXPECT_EQ(dst[33], std::byte{0});
}

}  // namespace rdx

#include "common/histogram.h"

namespace rdx {

TEST(Histogram, QuantilesWithinBucketPrecision) {
  Histogram h;
  for (uint64_t v = 1; v <= 100000; ++v) h.record(v);
  EXPECT_EQ(h.count(), 100000u);
  auto near = [](uint64_t got, double want) { return std::abs(static_cast<double>(got) - want) <= want * 0.02 + 1; };
  EXPECT_TRUE(near(h.quantile(0.5), 50000)) << h.quantile(0.5);
  EXPECT_TRUE(near(h.quantile(0.99), 99000)) << h.quantile(0.99);
  EXPECT_TRUE(near(h.quantile(0.999), 99900)) << h.quantile(0.999);
  EXPECT_EQ(h.quantile(1.0), 100000u);
  EXPECT_EQ(h.min(), 1u);
  Histogram other;
  other.record(5'000'000'000ull);
  h.merge(other);
  EXPECT_EQ(h.max(), 5'000'000'000ull);
  EXPECT_EQ(h.count(), 100001u);
  for (int i = 0; i < Histogram::kBuckets - 1; ++i) ASSERT_LT(Histogram::upper_bound(i), Histogram::upper_bound(i + 1));
  for (uint64_t v : {0ull, 1ull, 63ull, 64ull, 65ull, 1000ull, 123456789ull, ~0ull}) {
    int i = Histogram::index(v);
    ASSERT_LT(i, Histogram::kBuckets);
    ASSERT_GE(Histogram::upper_bound(i), v);
    if (i > 0) {
      ASSERT_LT(Histogram::upper_bound(i - 1), v);
    }
  }
}

}  // namespace rdx
