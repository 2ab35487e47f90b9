#include <gtest/gtest.h>

#include "workload/exec.h"
#include "workload/kv.h"
#include "workload/smallbank.h"
#include "workload/tatp_schema.h"

namespace rdx::workload {
namespace {

TEST(BalanceEncoding, RoundTripsAndRejectsAnythingNonCanonical) {
  for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{12345}, int64_t{-500}, kMaxBalance, -kMaxBalance}) {
    auto back = decode_balance(encode_balance(v));
    ASSERT_TRUE(back.has_value()) << v;
    EXPECT_EQ(*back, v);
  }
  EXPECT_EQ(encode_balance(-42), "-42");
  for (const char* bad : {"", "-", "-0", "01", "-01", "+5", " 5", "5 ", "1e3", "12a", "0x10", "9223372036854775808",
                          "1000000000000000001", "-1000000000000000001", "123456789012345678901"}) {
    EXPECT_FALSE(decode_balance(bad).has_value()) << bad;
  }
  EXPECT_FALSE(decode_balance(std::string("12\0", 3)).has_value());
}

TEST(TatpEncoding, RowsRoundTripWithFixedSizes) {
  Rng rng(3);
  for (int i = 0; i < 1000; ++i) {
    tatp::Population pop = tatp::populate(rng(), 1 + rng.below(1000000));
    std::string s = tatp::encode(pop.subscriber);
    EXPECT_EQ(s.size(), 26u);
    EXPECT_EQ(tatp::decode_subscriber(s), pop.subscriber);
    for (size_t t = 0; t < 4; ++t) {
      if (pop.access_info[t]) {
        std::string a = tatp::encode(*pop.access_info[t]);
        EXPECT_EQ(a.size(), 11u);
        EXPECT_EQ(tatp::decode_access_info(a), pop.access_info[t]);
      }
      if (pop.special_facility[t]) {
        std::string f = tatp::encode(*pop.special_facility[t]);
        EXPECT_EQ(f.size(), 9u);
        EXPECT_EQ(tatp::decode_special_facility(f), pop.special_facility[t]);
      }
      for (const auto& cf : pop.call_forwarding[t]) {
        if (!cf) continue;
        std::string c = tatp::encode(*cf);
        EXPECT_EQ(c.size(), 17u);
        EXPECT_EQ(tatp::decode_call_forwarding(c), cf);
      }
    }
  }
}

TEST(TatpEncoding, CorruptRowsAreRejected) {
  tatp::Subscriber sub;
  sub.bits = 1023;
  std::string s = tatp::encode(sub);
  EXPECT_TRUE(tatp::decode_subscriber(s).has_value());
  EXPECT_FALSE(tatp::decode_subscriber(s.substr(1)).has_value());  // wrong size
  std::string wrong_tag = s;
  wrong_tag[0] = 'A';
  EXPECT_FALSE(tatp::decode_subscriber(wrong_tag).has_value());
  std::string high_bits = s;
  high_bits[2] = 0x04;  // bit 10 set: only bit_1..bit_10 exist
  EXPECT_FALSE(tatp::decode_subscriber(high_bits).has_value());

  tatp::SpecialFacility sf;
  sf.data_b = {'A', 'B', 'C', 'D', 'E'};
  std::string f = tatp::encode(sf);
  ASSERT_TRUE(tatp::decode_special_facility(f).has_value());
  f[1] = 2;  // is_active is 0 or 1
  EXPECT_FALSE(tatp::decode_special_facility(f).has_value());
  f[1] = 1;
  f[5] = 'b';  // data_b is upper case
  EXPECT_FALSE(tatp::decode_special_facility(f).has_value());

  tatp::CallForwarding cf;
  cf.end_time = 24;
  cf.numberx.fill('7');
  std::string c = tatp::encode(cf);
  ASSERT_TRUE(tatp::decode_call_forwarding(c).has_value());
  c[1] = 25;
  EXPECT_FALSE(tatp::decode_call_forwarding(c).has_value());
  c[1] = 3;
  c[16] = 'x';
  EXPECT_FALSE(tatp::decode_call_forwarding(c).has_value());

  tatp::AccessInfo ai;
  ai.data3.fill('Q');
  ai.data4.fill('Z');
  std::string a = tatp::encode(ai);
  ASSERT_TRUE(tatp::decode_access_info(a).has_value());
  a[4] = '1';
  EXPECT_FALSE(tatp::decode_access_info(a).has_value());
}

TEST(TatpEncoding, KeysAreDocumentedAndDistinct) {
  EXPECT_EQ(tatp::subscriber_key(7), "tp:s:7");
  EXPECT_EQ(tatp::access_info_key(7, 2), "tp:a:7:2");
  EXPECT_EQ(tatp::special_facility_key(7, 4), "tp:f:7:4");
  EXPECT_EQ(tatp::call_forwarding_key(7, 4, 16), "tp:c:7:4:16");
  EXPECT_EQ(tatp::sub_nbr(42), "000000000000042");
  EXPECT_NE(tatp::access_info_key(1, 12), tatp::access_info_key(11, 2));  // separators keep fields apart
}

TEST(ValueText, DescribeEscapesAndBounds) {
  EXPECT_EQ(describe_value("abc"), "\"abc\"");
  EXPECT_EQ(describe_value(std::string("a\0\"\xff", 4)), "\"a\\x00\\x22\\xff\"");
  std::string long_value(100, 'x');
  EXPECT_EQ(describe_value(long_value), "\"" + std::string(32, 'x') + "\"... (100 bytes)");
}

TEST(KeySpaceValues, OnlyGeneratedValuesAreValid) {
  auto w = make_workload("ogp:keys=10,value_size=16");
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  const auto& kv = dynamic_cast<const KeySpaceWorkload&>(**w);
  Rng rng(1);
  std::string v;
  random_value(rng, 16, v);
  EXPECT_TRUE(kv.valid_value(v));
  EXPECT_FALSE(kv.valid_value(v.substr(1)));
  v[3] = 'A';
  EXPECT_FALSE(kv.valid_value(v));
  EXPECT_EQ(kv.key(7), "og:7");
}

}  // namespace
}  // namespace rdx::workload
