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
