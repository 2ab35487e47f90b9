#include "common/memory.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace rdx {

namespace {
constexpr size_t kHugePage = 2u << 20;
constexpr size_t kPage = 4096;
size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }
}  // namespace

Result<MemoryBlock> MemoryBlock::allocate(size_t size, bool prefer_huge) {
  if (size == 0) return error(Code::kInvalidArgument, "memory block of size 0");
  if (prefer_huge) {
    size_t len = round_up(size, kHugePage);
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    if (p != MAP_FAILED) return MemoryBlock(static_cast<std::byte*>(p), len, true);
  }
  size_t len = round_up(size, kPage);
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return error(Code::kResourceExhausted, "mmap {} bytes: {}", len, strerror(errno));
  return MemoryBlock(static_cast<std::byte*>(p), len, false);
}

MemoryBlock::~MemoryBlock() {
  if (base_ != nullptr) munmap(base_, size_);
}

MemoryBlock::MemoryBlock(MemoryBlock&& o) noexcept
    : base_(std::exchange(o.base_, nullptr)), size_(std::exchange(o.size_, 0)), huge_(o.huge_) {}

MemoryBlock& MemoryBlock::operator=(MemoryBlock&& o) noexcept {
  if (this != &o) {
    if (base_ != nullptr) munmap(base_, size_);
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
    huge_ = o.huge_;
  }
  return *this;
}

}  // namespace rdx
