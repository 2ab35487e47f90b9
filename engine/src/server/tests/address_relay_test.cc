// The address book's wire format: what a node accepts from a peer (server/address_relay.h).
#include "server/address_relay.h"

#include <gtest/gtest.h>

#include "rpc/codec.h"

namespace rdx::server {
namespace {

std::span<const std::byte> bytes(const std::string& s) { return rpc::as_bytes_of(s); }

TEST(AddressBook, RoundTrips) {
  const std::vector<transport::LearnedAddress> book{{1, "10.0.0.7"}, {2, "192.168.100.254"}};
  auto back = decode_address_book(bytes(encode_address_book(book)));
  ASSERT_TRUE(back.has_value());
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].node, 1);
  EXPECT_EQ((*back)[0].host, "10.0.0.7");
  EXPECT_EQ((*back)[1].node, 2);
  EXPECT_EQ((*back)[1].host, "192.168.100.254");
  auto empty = decode_address_book(bytes(encode_address_book({})));
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->empty());
}

TEST(AddressBook, RefusesMalformedBooks) {
  const std::string good = encode_address_book({{1, "10.0.0.7"}});
  EXPECT_FALSE(decode_address_book(bytes(good + "x")).has_value()) << "trailing bytes";
  EXPECT_FALSE(decode_address_book(bytes(good.substr(0, good.size() - 1))).has_value()) << "truncated";
  EXPECT_FALSE(decode_address_book({}).has_value()) << "empty payload";
  for (const char* host : {"", "n1.example", "10.0.0", "10.0.0.256", "::1", "10.0.0.7 ", "255.255.255.255.1"})
    EXPECT_FALSE(decode_address_book(bytes(encode_address_book({{1, host}}))).has_value()) << "'" << host << "'";
  rpc::Writer w;
  w.put(static_cast<uint16_t>(kMaxAddressBookEntries + 1));
  for (size_t i = 0; i <= kMaxAddressBookEntries; ++i) w.put(static_cast<uint16_t>(1)).bytes("10.0.0.1");
  EXPECT_FALSE(decode_address_book(w.span()).has_value()) << "more entries than the limit";
}

}  // namespace
}  // namespace rdx::server
