#pragma once
// Small CPU helpers for the store's spin loops and prefetching.
namespace rdx::store {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Software prefetch of the cache line at p (for_write: the line will be written).
inline void prefetch(const void* p, bool for_write) {
  if (for_write) {
    __builtin_prefetch(p, 1, 3);
  } else {
    __builtin_prefetch(p, 0, 3);
  }
}

}  // namespace rdx::store
