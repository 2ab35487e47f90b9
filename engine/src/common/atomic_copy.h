#pragma once
// Word-wise atomic copies for memory that other threads (or the tcp transport's emulated one-sided ops) read or
// write concurrently. Words are copied in ascending address order: loads with acquire, stores with release. That
// order is what lets a reader detect a concurrent writer with a header/trailer version pair (see store/record.h):
// a reader that sees any word of a newer write also sees every store the writer made before it.
// Bytes outside whole aligned words are copied with byte atomics (no atomicity across them).
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace rdx {

inline void atomic_load_bytes(void* dst, const void* src, size_t len) {
  auto* d = static_cast<std::byte*>(dst);
  auto* s = static_cast<std::byte*>(const_cast<void*>(src));
  while (len > 0 && (reinterpret_cast<uintptr_t>(s) & 7) != 0) {
    *d++ = std::atomic_ref<std::byte>(*s++).load(std::memory_order_acquire);
    --len;
  }
  for (; len >= 8; len -= 8, s += 8, d += 8) {
    uint64_t w = std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(s)).load(std::memory_order_acquire);
    __builtin_memcpy(d, &w, 8);
  }
  while (len-- > 0) *d++ = std::atomic_ref<std::byte>(*s++).load(std::memory_order_acquire);
}

inline void atomic_store_bytes(void* dst, const void* src, size_t len) {
  auto* d = static_cast<std::byte*>(dst);
  auto* s = static_cast<const std::byte*>(src);
  while (len > 0 && (reinterpret_cast<uintptr_t>(d) & 7) != 0) {
    std::atomic_ref<std::byte>(*d++).store(*s++, std::memory_order_release);
    --len;
  }
  for (; len >= 8; len -= 8, s += 8, d += 8) {
    uint64_t w;
    __builtin_memcpy(&w, s, 8);
    std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(d)).store(w, std::memory_order_release);
  }
  while (len-- > 0) std::atomic_ref<std::byte>(*d++).store(*s++, std::memory_order_release);
}

}  // namespace rdx
