#pragma once
// Page-backed memory blocks for registered regions: 2 MB huge pages when the kernel has them, normal pages otherwise.
#include <cstddef>
#include <span>

#include "common/status.h"

namespace rdx {

class MemoryBlock {
 public:
  MemoryBlock() = default;
  // Allocates `size` bytes (rounded up to the page size used), zeroed. With prefer_huge, tries MAP_HUGETLB first.
  static Result<MemoryBlock> allocate(size_t size, bool prefer_huge);
  ~MemoryBlock();
  MemoryBlock(MemoryBlock&& o) noexcept;
  MemoryBlock& operator=(MemoryBlock&& o) noexcept;
  MemoryBlock(const MemoryBlock&) = delete;
  MemoryBlock& operator=(const MemoryBlock&) = delete;

  std::byte* data() const { return base_; }
  size_t size() const { return size_; }
  bool huge() const { return huge_; }
  std::span<std::byte> span() const { return {base_, size_}; }

 private:
  MemoryBlock(std::byte* base, size_t size, bool huge) : base_(base), size_(size), huge_(huge) {}
  std::byte* base_ = nullptr;
  size_t size_ = 0;
  bool huge_ = false;
};

}  // namespace rdx
