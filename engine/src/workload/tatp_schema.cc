#include "workload/tatp_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "workload/exec.h"

namespace rdx::workload::tatp {
namespace {

bool all_in(const char* p, size_t n, char lo, char hi) {
  return std::all_of(p, p + n, [&](char c) { return c >= lo && c <= hi; });
}

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

}  // namespace

int start_time_index(uint8_t start_time) {
  for (size_t i = 0; i < kStartTimes.size(); ++i) {
    if (kStartTimes[i] == start_time) return static_cast<int>(i);
  }
  return -1;
}

std::string subscriber_key(uint64_t s_id) { return fmt::format("tp:s:{}", s_id); }
std::string access_info_key(uint64_t s_id, unsigned ai_type) { return fmt::format("tp:a:{}:{}", s_id, ai_type); }
std::string special_facility_key(uint64_t s_id, unsigned sf_type) { return fmt::format("tp:f:{}:{}", s_id, sf_type); }
std::string call_forwarding_key(uint64_t s_id, unsigned sf_type, unsigned start_time) {
  return fmt::format("tp:c:{}:{}:{}", s_id, sf_type, start_time);
}
std::string sub_nbr(uint64_t s_id) { return fmt::format("{:015}", s_id); }

std::string encode(const Subscriber& s) {
  std::string out;
  out.reserve(26);
  out += 'S';
  out += static_cast<char>(s.bits & 0xff);
  out += static_cast<char>(s.bits >> 8);
  for (size_t i = 0; i < 10; i += 2) out += static_cast<char>((s.hex[i] & 0x0f) | (s.hex[i + 1] << 4));
  for (uint8_t b : s.byte2) out += static_cast<char>(b);
  put_u32(out, s.msc_location);
  put_u32(out, s.vlr_location);
  return out;
}

std::optional<Subscriber> decode_subscriber(std::string_view v) {
  if (v.size() != 26 || v[0] != 'S') return std::nullopt;
  Subscriber s;
  s.bits = static_cast<uint16_t>(static_cast<uint8_t>(v[1]) | (static_cast<uint8_t>(v[2]) << 8));
  if (s.bits >> 10) return std::nullopt;
  for (size_t i = 0; i < 5; ++i) {
    auto b = static_cast<uint8_t>(v[3 + i]);
    s.hex[2 * i] = b & 0x0f;
    s.hex[2 * i + 1] = b >> 4;
  }
  for (size_t i = 0; i < 10; ++i) s.byte2[i] = static_cast<uint8_t>(v[8 + i]);
  s.msc_location = get_u32(v.data() + 18);
  s.vlr_location = get_u32(v.data() + 22);
  return s;
}

std::string encode(const AccessInfo& a) {
  std::string out{'A', static_cast<char>(a.data1), static_cast<char>(a.data2)};
  out.append(a.data3.data(), a.data3.size());
  out.append(a.data4.data(), a.data4.size());
  return out;
}

std::optional<AccessInfo> decode_access_info(std::string_view v) {
  if (v.size() != 11 || v[0] != 'A' || !all_in(v.data() + 3, 8, 'A', 'Z')) return std::nullopt;
  AccessInfo a;
  a.data1 = static_cast<uint8_t>(v[1]);
  a.data2 = static_cast<uint8_t>(v[2]);
  std::memcpy(a.data3.data(), v.data() + 3, 3);
  std::memcpy(a.data4.data(), v.data() + 6, 5);
  return a;
}

std::string encode(const SpecialFacility& f) {
  std::string out{'F', static_cast<char>(f.is_active ? 1 : 0), static_cast<char>(f.error_cntrl),
                  static_cast<char>(f.data_a)};
  out.append(f.data_b.data(), f.data_b.size());
  return out;
}

std::optional<SpecialFacility> decode_special_facility(std::string_view v) {
  if (v.size() != 9 || v[0] != 'F' || (v[1] != 0 && v[1] != 1) || !all_in(v.data() + 4, 5, 'A', 'Z')) {
    return std::nullopt;
  }
  SpecialFacility f;
  f.is_active = v[1] == 1;
  f.error_cntrl = static_cast<uint8_t>(v[2]);
  f.data_a = static_cast<uint8_t>(v[3]);
  std::memcpy(f.data_b.data(), v.data() + 4, 5);
  return f;
}

std::string encode(const CallForwarding& c) {
  std::string out{'C', static_cast<char>(c.end_time)};
  out.append(c.numberx.data(), c.numberx.size());
  return out;
}

std::optional<CallForwarding> decode_call_forwarding(std::string_view v) {
  if (v.size() != 17 || v[0] != 'C' || v[1] < 1 || v[1] > 24 || !all_in(v.data() + 2, 15, '0', '9')) {
    return std::nullopt;
  }
  CallForwarding c;
  c.end_time = static_cast<uint8_t>(v[1]);
  std::memcpy(c.numberx.data(), v.data() + 2, 15);
  return c;
}

Population populate(uint64_t seed, uint64_t s_id) {
  Rng rng = unit_rng(seed, s_id);
  Population p;
  Subscriber& s = p.subscriber;
  s.bits = static_cast<uint16_t>(rng.below(1024));
  for (auto& h : s.hex) h = static_cast<uint8_t>(rng.below(16));
  for (auto& b : s.byte2) b = static_cast<uint8_t>(rng.below(256));
  s.msc_location = static_cast<uint32_t>(rng.between(1, UINT32_MAX));
  s.vlr_location = static_cast<uint32_t>(rng.between(1, UINT32_MAX));
  // k distinct types of 1..4: the first k of a shuffled {0, 1, 2, 3}.
  auto distinct_types = [&rng](size_t k) {
    std::array<size_t, 4> t{0, 1, 2, 3};
    for (size_t i = 3; i > 0; --i) std::swap(t[i], t[rng.below(i + 1)]);
    return std::pair{t, k};
  };
  auto [ai_types, ai_count] = distinct_types(1 + rng.below(4));
  for (size_t i = 0; i < ai_count; ++i) {
    AccessInfo a;
    a.data1 = static_cast<uint8_t>(rng.below(256));
    a.data2 = static_cast<uint8_t>(rng.below(256));
    a.data3 = random_chars<3>(rng, 'A', 26);
    a.data4 = random_chars<5>(rng, 'A', 26);
    p.access_info[ai_types[i]] = a;
  }
  auto [sf_types, sf_count] = distinct_types(1 + rng.below(4));
  for (size_t i = 0; i < sf_count; ++i) {
    SpecialFacility f;
    f.is_active = rng.below(100) < 85;
    f.error_cntrl = static_cast<uint8_t>(rng.below(256));
    f.data_a = static_cast<uint8_t>(rng.below(256));
    f.data_b = random_chars<5>(rng, 'A', 26);
    p.special_facility[sf_types[i]] = f;
    // 0-3 call forwardings with distinct start times.
    std::array<size_t, 3> starts{0, 1, 2};
    for (size_t j = 2; j > 0; --j) std::swap(starts[j], starts[rng.below(j + 1)]);
    size_t cf_count = rng.below(4);
    for (size_t j = 0; j < cf_count; ++j) {
      CallForwarding c;
      c.end_time = static_cast<uint8_t>(kStartTimes[starts[j]] + rng.between(1, 8));
      c.numberx = random_chars<15>(rng, '0', 10);
      p.call_forwarding[sf_types[i]][starts[j]] = c;
    }
  }
  return p;
}

}  // namespace rdx::workload::tatp
