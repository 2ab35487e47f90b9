#pragma once
// Redis' string2ll rules for integers: optional '-', no '+', no leading zeros or spaces, no overflow. Used for every
// integer a client sends (lengths, INCRBY amounts) and every stored counter, so "01" or " 1" is never a number,
// exactly as in Redis.
#include <cstdint>
#include <limits>
#include <string_view>

namespace rdx {

inline bool parse_int64(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  if (s.size() == 1 && s[0] == '0') {
    *out = 0;
    return true;
  }
  size_t p = 0;
  bool negative = false;
  if (s[0] == '-') {
    negative = true;
    p = 1;
    if (p == s.size()) return false;
  }
  if (s[p] < '1' || s[p] > '9') return false;
  uint64_t v = 0;
  for (; p < s.size(); ++p) {
    if (s[p] < '0' || s[p] > '9') return false;
    uint64_t d = static_cast<uint64_t>(s[p] - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  constexpr uint64_t kMaxPositive = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (negative) {
    if (v > kMaxPositive + 1) return false;
    *out = v == kMaxPositive + 1 ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(v);
  } else {
    if (v > kMaxPositive) return false;
    *out = static_cast<int64_t>(v);
  }
  return true;
}

}  // namespace rdx
