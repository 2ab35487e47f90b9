#pragma once
// 64-bit hashing of keys (wyhash-style mixing; fast, good avalanche). Shard placement and the hashtable both use it,
// from different bits, so they stay independent.
#include <cstdint>
#include <cstring>
#include <string_view>

namespace rdx {

inline uint64_t mix64(uint64_t a, uint64_t b) {
  __uint128_t r = static_cast<__uint128_t>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

inline uint64_t hash_bytes(const void* data, size_t len, uint64_t seed = 0x9E3779B97F4A7C15ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  constexpr uint64_t k0 = 0xa0761d6478bd642full, k1 = 0xe7037ed1a0b428dbull, k2 = 0x8ebc6af09c88c6e3ull;
  uint64_t h = seed ^ mix64(seed ^ k0, len ^ k1);
  while (len >= 16) {
    uint64_t a, b;
    std::memcpy(&a, p, 8);
    std::memcpy(&b, p + 8, 8);
    h = mix64(a ^ k1, b ^ h);
    p += 16;
    len -= 16;
  }
  uint64_t a = 0, b = 0;
  if (len >= 8) {
    std::memcpy(&a, p, 8);
    std::memcpy(&b, p + len - 8, 8);
  } else if (len > 0) {
    for (size_t i = 0; i < len; ++i) a |= static_cast<uint64_t>(p[i]) << (8 * i);
  }
  return mix64(k2 ^ len, mix64(a ^ k1, b ^ h));
}

inline uint64_t hash_key(std::string_view key) { return hash_bytes(key.data(), key.size()); }

}  // namespace rdx
