#pragma once
// Arena allocation for the hashtable. Every byte the table uses (index buckets and records) comes from the arena, so
// peers can reach records by arena offset. Two layers:
//  - PageAllocator: a buddy allocator of 4 KB pages (power-of-two blocks). Used for index arrays, record slabs and
//    records too large for a size class. Rarely called; one mutex.
//  - RecordAllocator: size classes (<= 25% internal waste) carved from slabs; per-session caches so the common path
//    takes no lock; a shared free list per class refills and drains the caches in batches.
// Bookkeeping (free lists) lives on the heap: peers never need it. Offsets are arena offsets; 0 is never returned
// (the first page is reserved so a zero slot word can mean "empty").
#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <vector>

namespace rdx::store {

class PageAllocator {
 public:
  static constexpr size_t kPageBytes = 4096;

  explicit PageAllocator(std::span<std::byte> arena);
  PageAllocator(const PageAllocator&) = delete;
  PageAllocator& operator=(const PageAllocator&) = delete;

  // A block of block_bytes(bytes) bytes, 4 KB aligned (in memory, not only in offset). nullopt when exhausted.
  std::optional<uint64_t> allocate(size_t bytes);
  void release(uint64_t offset, size_t bytes);
  // Power-of-two number of pages covering `bytes`.
  static size_t block_bytes(size_t bytes);

  std::byte* base() const { return arena_.data(); }
  size_t arena_bytes() const { return arena_.size(); }
  size_t used_bytes() const;

 private:
  std::span<std::byte> arena_;
  uint64_t first_page_offset_ = 0;  // arena offset of the first 4 KB-aligned page
  size_t pages_ = 0;
  mutable std::mutex mu_;
  std::vector<std::set<uint64_t>> free_;  // per order: page numbers of free blocks
  size_t used_pages_ = 0;
};

class RecordAllocator {
 public:
  // Size classes: 32..128 in steps of 16, then four steps per doubling up to kLargestClass.
  static constexpr size_t kNumClasses = 39;
  static constexpr size_t kLargestClass = 32768;
  static size_t class_index(size_t bytes);  // bytes <= kLargestClass
  static size_t class_bytes(size_t index);
  // Capacity a record of `bytes` gets: its class size, or a buddy block above kLargestClass.
  static size_t capacity_for(size_t bytes);

  // A session's private stock of free blocks per class.
  struct Cache {
    std::array<std::vector<uint64_t>, kNumClasses> blocks;
  };
  struct Block {
    uint64_t offset;
    uint32_t capacity;
  };

  explicit RecordAllocator(PageAllocator& pages) : pages_(pages) {}

  // nullopt when the arena cannot supply the block.
  std::optional<Block> allocate(Cache& cache, size_t bytes);
  // Returns a block whose record no reader can still reach (after the epoch grace period).
  void release(Cache& cache, uint64_t offset, uint32_t capacity);
  // Hands a cache's blocks back to the shared lists (session end).
  void flush(Cache& cache);

 private:
  static constexpr size_t kBatch = 32;  // blocks moved between a cache and the shared list at once
  static size_t slab_bytes(size_t class_bytes);
  bool refill(Cache& cache, size_t cls);

  struct alignas(64) Shared {
    std::mutex mu;
    std::vector<uint64_t> free;
  };
  PageAllocator& pages_;
  std::array<Shared, kNumClasses> shared_;
};

}  // namespace rdx::store
