#include "store/alloc.h"

#include <algorithm>
#include <bit>
#include <cassert>

namespace rdx::store {

namespace {

constexpr std::array<uint32_t, RecordAllocator::kNumClasses> make_classes() {
  std::array<uint32_t, RecordAllocator::kNumClasses> c{};
  size_t n = 0;
  for (uint32_t b = 32; b <= 128; b += 16) c[n++] = b;
  for (uint32_t p = 128; p < RecordAllocator::kLargestClass; p *= 2) {
    for (uint32_t q = 1; q <= 4; ++q) c[n++] = p + p / 4 * q;
  }
  return c;
}
constexpr auto kClasses = make_classes();
static_assert(kClasses.back() == RecordAllocator::kLargestClass);

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// PageAllocator

PageAllocator::PageAllocator(std::span<std::byte> arena) : arena_(arena) {
  const auto addr = reinterpret_cast<uintptr_t>(arena.data());
  first_page_offset_ = (kPageBytes - addr % kPageBytes) % kPageBytes;
  pages_ = arena.size() > first_page_offset_ ? (arena.size() - first_page_offset_) / kPageBytes : 0;
  free_.resize(std::bit_width(std::max<size_t>(pages_, 1)));
  // Page 0 stays reserved; the rest is cut into the largest naturally aligned power-of-two blocks.
  size_t page = 1;
  while (page < pages_) {
    size_t order = std::countr_zero(page);
    while ((size_t{1} << order) > pages_ - page) --order;
    free_[order].insert(page);
    page += size_t{1} << order;
  }
  used_pages_ = pages_ > 0 ? 1 : 0;
}

size_t PageAllocator::block_bytes(size_t bytes) {
  return std::bit_ceil(std::max<size_t>(1, (bytes + kPageBytes - 1) / kPageBytes)) * kPageBytes;
}

std::optional<uint64_t> PageAllocator::allocate(size_t bytes) {
  const size_t want = static_cast<size_t>(std::countr_zero(block_bytes(bytes) / kPageBytes));
  std::lock_guard lock(mu_);
  size_t order = want;
  while (order < free_.size() && free_[order].empty()) ++order;
  if (order >= free_.size()) return std::nullopt;
  const uint64_t page = *free_[order].begin();
  free_[order].erase(free_[order].begin());
  while (order > want) {  // split, keeping the lower half
    --order;
    free_[order].insert(page + (uint64_t{1} << order));
  }
  used_pages_ += size_t{1} << want;
  return first_page_offset_ + page * kPageBytes;
}

void PageAllocator::release(uint64_t offset, size_t bytes) {
  size_t order = static_cast<size_t>(std::countr_zero(block_bytes(bytes) / kPageBytes));
  uint64_t page = (offset - first_page_offset_) / kPageBytes;
  std::lock_guard lock(mu_);
  used_pages_ -= size_t{1} << order;
  while (order + 1 < free_.size()) {  // merge with the free buddy while possible
    const uint64_t buddy = page ^ (uint64_t{1} << order);
    auto it = free_[order].find(buddy);
    if (it == free_[order].end()) break;
    free_[order].erase(it);
    page = std::min(page, buddy);
    ++order;
  }
  free_[order].insert(page);
}

size_t PageAllocator::used_bytes() const {
  std::lock_guard lock(mu_);
  return used_pages_ * kPageBytes;
}

// ---------------------------------------------------------------------------------------------------------------
// RecordAllocator

size_t RecordAllocator::class_index(size_t bytes) {
  assert(bytes <= kLargestClass);
  return static_cast<size_t>(std::lower_bound(kClasses.begin(), kClasses.end(), bytes) - kClasses.begin());
}

size_t RecordAllocator::class_bytes(size_t index) { return kClasses[index]; }

size_t RecordAllocator::capacity_for(size_t bytes) {
  return bytes <= kLargestClass ? class_bytes(class_index(bytes)) : PageAllocator::block_bytes(bytes);
}

size_t RecordAllocator::slab_bytes(size_t class_bytes) {
  return std::max<size_t>(16 * 1024, std::bit_ceil(class_bytes * 8));
}

std::optional<RecordAllocator::Block> RecordAllocator::allocate(Cache& cache, size_t bytes) {
  if (bytes > kLargestClass) {
    auto off = pages_.allocate(bytes);
    if (!off) return std::nullopt;
    return Block{*off, static_cast<uint32_t>(PageAllocator::block_bytes(bytes))};
  }
  const size_t cls = class_index(bytes);
  auto& stock = cache.blocks[cls];
  if (stock.empty() && !refill(cache, cls)) return std::nullopt;
  const uint64_t off = stock.back();
  stock.pop_back();
  return Block{off, static_cast<uint32_t>(kClasses[cls])};
}

bool RecordAllocator::refill(Cache& cache, size_t cls) {
  auto& stock = cache.blocks[cls];
  {
    Shared& sh = shared_[cls];
    std::lock_guard lock(sh.mu);
    const size_t n = std::min(kBatch, sh.free.size());
    stock.insert(stock.end(), sh.free.end() - static_cast<ptrdiff_t>(n), sh.free.end());
    sh.free.resize(sh.free.size() - n);
  }
  if (!stock.empty()) return true;
  // A new slab; its blocks go to this cache (pushed in reverse so they are handed out in address order).
  const size_t block = kClasses[cls], slab = slab_bytes(block);
  auto base = pages_.allocate(slab);
  if (!base) return false;
  for (size_t i = slab / block; i-- > 0;) stock.push_back(*base + i * block);
  return true;
}

void RecordAllocator::release(Cache& cache, uint64_t offset, uint32_t capacity) {
  if (capacity > kLargestClass) {
    pages_.release(offset, capacity);
    return;
  }
  const size_t cls = class_index(capacity);
  auto& stock = cache.blocks[cls];
  stock.push_back(offset);
  if (stock.size() >= 4 * kBatch) {  // keep caches bounded: hand the oldest half back
    Shared& sh = shared_[cls];
    std::lock_guard lock(sh.mu);
    const auto half = static_cast<ptrdiff_t>(stock.size() / 2);
    sh.free.insert(sh.free.end(), stock.begin(), stock.begin() + half);
    stock.erase(stock.begin(), stock.begin() + half);
  }
}

void RecordAllocator::flush(Cache& cache) {
  for (size_t cls = 0; cls < kNumClasses; ++cls) {
    auto& stock = cache.blocks[cls];
    if (stock.empty()) continue;
    Shared& sh = shared_[cls];
    std::lock_guard lock(sh.mu);
    sh.free.insert(sh.free.end(), stock.begin(), stock.end());
    stock.clear();
  }
}

}  // namespace rdx::store
