#include "store/alloc.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "common/memory.h"

namespace rdx::store {
namespace {

constexpr size_t kPage = PageAllocator::kPageBytes;

TEST(PageAllocator, BlocksAreAlignedDisjointAndNeverAtTheReservedFirstPage) {
  auto mem = MemoryBlock::allocate(1 << 20, false);
  ASSERT_TRUE(mem.is_ok());
  PageAllocator pages(mem->span());
  std::vector<std::pair<uint64_t, size_t>> blocks;
  std::set<uint64_t> seen_pages;
  for (size_t bytes : {1ul, 4096ul, 5000ul, 16384ul, 100ul, 65536ul}) {
    auto off = pages.allocate(bytes);
    ASSERT_TRUE(off.has_value());
    const size_t block = PageAllocator::block_bytes(bytes);
    EXPECT_GE(block, bytes);
    EXPECT_NE(*off, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pages.base() + *off) % kPage, 0u);
    for (uint64_t p = *off; p < *off + block; p += kPage) EXPECT_TRUE(seen_pages.insert(p).second) << "overlap";
    blocks.emplace_back(*off, bytes);
  }
  for (auto [off, bytes] : blocks) pages.release(off, bytes);
  EXPECT_EQ(pages.used_bytes(), kPage);  // only the reserved page
}

TEST(PageAllocator, ExhaustsAndMergesBuddiesBack) {
  auto mem = MemoryBlock::allocate(64 * kPage, false);
  ASSERT_TRUE(mem.is_ok());
  PageAllocator pages(mem->span());
  std::vector<uint64_t> all;
  while (auto off = pages.allocate(kPage)) all.push_back(*off);
  EXPECT_EQ(all.size(), 63u);  // 64 pages minus the reserved one
  EXPECT_FALSE(pages.allocate(1).has_value());
  for (uint64_t off : all) pages.release(off, kPage);
  // After merging, the upper half of the arena is one block again.
  auto big = pages.allocate(32 * kPage);
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(*big, 32 * kPage);
}

TEST(PageAllocator, HandlesUnalignedArenas) {
  auto mem = MemoryBlock::allocate(64 * kPage, false);
  ASSERT_TRUE(mem.is_ok());
  PageAllocator pages(mem->span().subspan(24, 40 * kPage));
  auto off = pages.allocate(kPage);
  ASSERT_TRUE(off.has_value());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pages.base() + *off) % kPage, 0u);
  EXPECT_LE(*off + kPage, 40 * kPage);
}

TEST(RecordAllocator, ClassesGrowByAtMostAQuarter) {
  for (size_t i = 1; i < RecordAllocator::kNumClasses; ++i) {
    const size_t prev = RecordAllocator::class_bytes(i - 1), cur = RecordAllocator::class_bytes(i);
    EXPECT_GT(cur, prev);
    EXPECT_EQ(cur % 8, 0u);
    EXPECT_LE(cur - prev, std::max<size_t>(16, prev / 4));
  }
  EXPECT_EQ(RecordAllocator::capacity_for(33), 48u);
  EXPECT_EQ(RecordAllocator::capacity_for(48), 48u);
  EXPECT_EQ(RecordAllocator::capacity_for(RecordAllocator::kLargestClass + 1), 2 * RecordAllocator::kLargestClass);
}

TEST(RecordAllocator, ReusesReleasedBlocksAndReportsExhaustion) {
  auto mem = MemoryBlock::allocate(256 * 1024, false);
  ASSERT_TRUE(mem.is_ok());
  PageAllocator pages(mem->span());
  RecordAllocator records(pages);
  RecordAllocator::Cache cache;
  std::vector<RecordAllocator::Block> blocks;
  while (auto b = records.allocate(cache, 200)) {
    EXPECT_EQ(b->capacity, 224u);
    EXPECT_EQ((b->offset) % 8, 0u);
    blocks.push_back(*b);
  }
  EXPECT_GT(blocks.size(), 900u);  // 256 KB minus the reserved page, in 224-byte blocks
  std::set<uint64_t> offsets;
  for (auto& b : blocks) EXPECT_TRUE(offsets.insert(b.offset).second);
  const size_t used = pages.used_bytes();
  for (auto& b : blocks) records.release(cache, b.offset, b.capacity);
  for (size_t i = 0; i < blocks.size(); ++i) ASSERT_TRUE(records.allocate(cache, 210).has_value());
  EXPECT_EQ(pages.used_bytes(), used);  // served from freed blocks, no new slab
  records.flush(cache);
}

}  // namespace
}  // namespace rdx::store
