#pragma once
// TATP's four tables in the key-value model: keys, fixed-size binary row encodings, and the standard population.
//
// Keys (decimal fields; s_id in 1..subscribers, types 1..4, start_time 0/8/16):
//   tp:s:<s_id>                          Subscriber
//   tp:a:<s_id>:<ai_type>                Access_Info
//   tp:f:<s_id>:<sf_type>                Special_Facility
//   tp:c:<s_id>:<sf_type>:<start_time>   Call_Forwarding
// sub_nbr is the 15-digit zero-padded s_id, so lookups by sub_nbr resolve to s_id without an index table.
//
// Values: a table tag byte, then the columns, little-endian, fixed size. decode_*() checks the size, the tag and
// every column's domain, so corruption is reported rather than used.
//   Subscriber       'S' bits:u16 (bit_1..bit_10; upper 6 bits 0) hex:5 bytes (hex_1..hex_10, one nibble each)
//                    byte2:10 bytes msc_location:u32 vlr_location:u32                                  = 26 bytes
//   Access_Info      'A' data1:u8 data2:u8 data3:3 'A'-'Z' data4:5 'A'-'Z'                                = 11 bytes
//   Special_Facility 'F' is_active:0|1 error_cntrl:u8 data_a:u8 data_b:5 'A'-'Z'                            =  9 bytes
//   Call_Forwarding  'C' end_time:u8 (1..24) numberx:15 '0'-'9'                                            = 17 bytes
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rdx::workload::tatp {

struct Subscriber {
  uint16_t bits = 0;
  std::array<uint8_t, 10> hex{};  // 0..15
  std::array<uint8_t, 10> byte2{};
  uint32_t msc_location = 0, vlr_location = 0;
  bool operator==(const Subscriber&) const = default;
};

struct AccessInfo {
  uint8_t data1 = 0, data2 = 0;
  std::array<char, 3> data3{};
  std::array<char, 5> data4{};
  bool operator==(const AccessInfo&) const = default;
};

struct SpecialFacility {
  bool is_active = false;
  uint8_t error_cntrl = 0, data_a = 0;
  std::array<char, 5> data_b{};
  bool operator==(const SpecialFacility&) const = default;
};

struct CallForwarding {
  uint8_t end_time = 0;  // 1..24
  std::array<char, 15> numberx{};
  bool operator==(const CallForwarding&) const = default;
};

inline constexpr std::array<uint8_t, 3> kStartTimes{0, 8, 16};
int start_time_index(uint8_t start_time);  // 0..2, or -1

std::string subscriber_key(uint64_t s_id);
std::string access_info_key(uint64_t s_id, unsigned ai_type);
std::string special_facility_key(uint64_t s_id, unsigned sf_type);
std::string call_forwarding_key(uint64_t s_id, unsigned sf_type, unsigned start_time);
std::string sub_nbr(uint64_t s_id);  // 15 digits

std::string encode(const Subscriber& s);
std::string encode(const AccessInfo& a);
std::string encode(const SpecialFacility& f);
std::string encode(const CallForwarding& c);
std::optional<Subscriber> decode_subscriber(std::string_view v);
std::optional<AccessInfo> decode_access_info(std::string_view v);
std::optional<SpecialFacility> decode_special_facility(std::string_view v);
std::optional<CallForwarding> decode_call_forwarding(std::string_view v);

// The initial rows of one subscriber (TATP population rules: 1-4 access-info and 1-4 special-facility rows of
// distinct types, 0-3 call-forwarding rows per special facility, is_active 85%), a function of (seed, s_id).
struct Population {
  Subscriber subscriber;
  std::array<std::optional<AccessInfo>, 4> access_info;                         // index ai_type - 1
  std::array<std::optional<SpecialFacility>, 4> special_facility;               // index sf_type - 1
  std::array<std::array<std::optional<CallForwarding>, 3>, 4> call_forwarding;  // [sf_type - 1][start index]
};
Population populate(uint64_t seed, uint64_t s_id);

// Random column values, shared by the population and the transactions.
template <size_t N, typename Rng>
std::array<char, N> random_chars(Rng& rng, char first, unsigned range) {
  std::array<char, N> out{};
  for (auto& c : out) c = static_cast<char>(first + static_cast<char>(rng.below(range)));
  return out;
}

}  // namespace rdx::workload::tatp
