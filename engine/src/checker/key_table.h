#pragma once
// Interns keys as dense ids (open addressing over views of the caller's strings, which must outlive the table).
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "common/hash.h"

namespace rdx::checker::detail {

class KeyTable {
 public:
  static constexpr uint32_t kMissing = UINT32_MAX;

  explicit KeyTable(size_t expected) { rehash(capacity_for(expected)); }

  uint32_t intern(std::string_view key) {
    if ((names_.size() + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
    uint64_t h = hash_key(key);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.data == nullptr) {
        s = {key.data(), static_cast<uint32_t>(key.size()), static_cast<uint32_t>(names_.size()),
             static_cast<uint32_t>(h >> 32)};
        names_.push_back(key);
        return s.id;
      }
      if (s.matches(key, h)) return s.id;
    }
  }

  uint32_t find(std::string_view key) const {
    uint64_t h = hash_key(key);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.data == nullptr) return kMissing;
      if (s.matches(key, h)) return s.id;
    }
  }

  std::string_view name(uint32_t id) const { return names_[id]; }
  size_t size() const { return names_.size(); }

 private:
  // The key's view lives in the slot itself: a hit costs one cache miss for the slot and one for the bytes.
  struct Slot {
    const char* data = nullptr;  // nullptr = empty (the empty key gets a non-null pointer from its string)
    uint32_t size = 0;
    uint32_t id = 0;
    uint32_t hash = 0;  // high bits of the hash (the low ones picked the slot): most mismatches skip the bytes
    bool matches(std::string_view k, uint64_t h) const {
      return hash == static_cast<uint32_t>(h >> 32) && size == k.size() && std::memcmp(data, k.data(), size) == 0;
    }
  };
  static size_t capacity_for(size_t n) {
    size_t c = 16;
    while (c < n * 2) c *= 2;
    return c;
  }
  void rehash(size_t capacity) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    for (const Slot& s : old) {
      if (s.data == nullptr) continue;
      size_t i = hash_key({s.data, s.size}) & mask_;
      while (slots_[i].data != nullptr) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::vector<std::string_view> names_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

}  // namespace rdx::checker::detail
