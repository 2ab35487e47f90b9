#include "store/index.h"

#include <gtest/gtest.h>

#include <vector>

#include "common/memory.h"

namespace rdx::store {
namespace {

// Buckets of the chain after the head, in order.
std::vector<Bucket*> overflow_chain(const LockedChain& c) {
  std::vector<Bucket*> out;
  for (Bucket* b = c.index->overflow_bucket(meta::link(c.meta)); b != nullptr;
       b = c.index->overflow_bucket(meta::link(bucket_word(b, 0).load()))) {
    out.push_back(b);
    if (out.size() > kMaxChainWalk) break;
  }
  return out;
}

// A chain of head + 2 overflow buckets whose middle bucket empties first: when the tail empties too, both go back to
// the pool (the old code recycled only the tail and left the empty middle bucket linked, so the table kept an overflow
// bucket with no key in it; seen as a 1-in-100 failure of HashTable.RemovesFreeSlotsAndMemory, whose hash seed is
// random), and recycled buckets come back without a stale link.
TEST(Index, EmptyOverflowBucketsAtTheTailAllGoBackToThePool) {
  auto mem = MemoryBlock::allocate(1 << 20, false);
  ASSERT_TRUE(mem.is_ok());
  PageAllocator pages(mem->span());
  Index* index = Index::create(pages, 1);
  ASSERT_NE(index, nullptr);
  LockedChain c = lock_chain(index, 0);
  constexpr int kSlots = 3 * kSlotsPerBucket;
  for (int i = 0; i < kSlots; ++i) ASSERT_TRUE(place_slot(c, make_slot(1, uint64_t(i + 1) * 8), 0, false)) << i;
  std::vector<Bucket*> chain = overflow_chain(c);
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(index->overflow_in_use.load(), 2u);

  for (int s = 1; s <= kSlotsPerBucket; ++s) clear_slot(c, {chain[0], s});  // the middle bucket empties first
  EXPECT_EQ(overflow_chain(c).size(), 2u) << "an empty bucket before a non-empty one stays linked";
  EXPECT_EQ(index->overflow_in_use.load(), 2u);
  for (int s = 1; s <= kSlotsPerBucket; ++s) clear_slot(c, {chain[1], s});
  EXPECT_EQ(overflow_chain(c).size(), 0u);
  EXPECT_EQ(meta::link(c.meta), 0u);
  EXPECT_EQ(index->overflow_in_use.load(), 0u) << "every empty overflow bucket goes back to the pool";

  // Refill the chain from the recycled buckets: it must end after the second overflow bucket again.
  for (int i = kSlotsPerBucket; i < kSlots; ++i)
    ASSERT_TRUE(place_slot(c, make_slot(2, uint64_t(i + 1) * 8), 0, false));
  EXPECT_EQ(overflow_chain(c).size(), 2u);
  EXPECT_EQ(index->overflow_in_use.load(), 2u);
  unlock_chain(c);
  Index::destroy(index, pages);
}

}  // namespace
}  // namespace rdx::store
