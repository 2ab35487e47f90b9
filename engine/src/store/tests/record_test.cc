#include "store/record.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/atomic_copy.h"
#include "store/hashtable.h"

namespace rdx::store::record {
namespace {

struct Block {
  explicit Block(size_t capacity) : words(capacity / 8), capacity(static_cast<uint32_t>(capacity)) {}
  std::byte* data() { return reinterpret_cast<std::byte*>(words.data()); }
  std::vector<std::byte> image() {
    std::vector<std::byte> img(capacity);
    atomic_load_bytes(img.data(), data(), capacity);
    return img;
  }
  std::vector<uint64_t> words;
  uint32_t capacity;
};

void set_word(std::vector<std::byte>& img, size_t off, uint64_t w) { std::memcpy(img.data() + off, &w, 8); }

TEST(Record, HeaderRoundTripsAndRejectsGarbage) {
  const Header h{1024, static_cast<uint32_t>(kMaxValueBytes), 2 << 20, true};
  auto d = decode_header(encode_header(h));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->key_len, 1024u);
  EXPECT_EQ(d->val_len, kMaxValueBytes);
  EXPECT_EQ(d->capacity, 2u << 20);
  EXPECT_TRUE(d->deleted);
  EXPECT_FALSE(decode_header(0).has_value());
  EXPECT_FALSE(decode_header(encode_header({8, 100, 64, false})).has_value());  // capacity too small
}

TEST(Record, CreateReadOverwriteAndDelete) {
  Block b(128);
  create(b.data(), b.capacity, "key-1", "value-one", 7, /*lock_word=*/5);
  EXPECT_EQ(word_at(b.data(), kLockOffset).load(), 5u);
  create(b.data(), b.capacity, "key-1", "value-one", 7);
  EXPECT_TRUE(key_equals(b.data(), "key-1"));
  EXPECT_FALSE(key_equals(b.data(), "key-2"));
  EXPECT_FALSE(key_equals(b.data(), "key-10"));
  std::string v;
  uint64_t ver = 0;
  ASSERT_EQ(read(b.data(), &v, &ver), ReadResult::kOk);
  EXPECT_EQ(v, "value-one");
  EXPECT_EQ(ver, 7u);
  EXPECT_EQ(word_at(b.data(), kLockOffset).load(), 0u);

  word_at(b.data(), kLockOffset).store(9);
  overwrite(b.data(), "key-1", "a longer second value", 8);
  ASSERT_EQ(read(b.data(), &v, &ver), ReadResult::kOk);
  EXPECT_EQ(v, "a longer second value");
  EXPECT_EQ(ver, 8u);
  EXPECT_EQ(stable_version(b.data()), 8u);
  EXPECT_EQ(word_at(b.data(), kLockOffset).load(), 9u) << "in-place writes leave the lock word alone";

  word_at(b.data(), kLockOffset).store(77);  // a protocol lock
  EXPECT_EQ(retire(b.data()), 77u);          // handed back so an update can carry it to the new block
  EXPECT_EQ(word_at(b.data(), kLockOffset).load(), kRetiredLockWord);
  EXPECT_EQ(read(b.data(), &v, &ver), ReadResult::kDeleted);
}

TEST(Record, ReusingABlockChangesItsIncarnation) {
  Block b(64);
  create(b.data(), b.capacity, "k", "v", 5);
  const uint64_t first = word_at(b.data(), kVersionOffset).load();
  create(b.data(), b.capacity, "k", "v", 5);  // same key, value and version in the same block
  const uint64_t second = word_at(b.data(), kVersionOffset).load();
  EXPECT_NE(first, second);
  EXPECT_EQ(version_of(first), version_of(second));
  EXPECT_EQ(incarnation_of(second), incarnation_of(first) + 1);
}

TEST(Record, DecodeImageClassifiesEveryCase) {
  Block b(96);
  create(b.data(), b.capacity, "user:42", "hello world", 3);
  std::string v;
  uint64_t ver = 0;

  auto img = b.image();
  ASSERT_TRUE(decode_image(img, "user:42", &v, &ver).is_ok());
  EXPECT_EQ(v, "hello world");
  EXPECT_EQ(ver, 3u);

  EXPECT_EQ(decode_image(img, "user:43", &v, &ver).code(), Code::kNotFound);
  EXPECT_EQ(decode_image(std::span(img).first(24), "user:42", &v, &ver).code(), Code::kInvalidArgument);
  EXPECT_EQ(decode_image(std::span(img).first(60), "user:42", &v, &ver).code(), Code::kInvalidArgument);
  EXPECT_EQ(decode_image(std::span(img).first(64), "user:42", &v, &ver).code(), Code::kNotFound);  // too short

  auto busy = img;
  set_word(busy, kVersionOffset, version_word(3, 1) | 1);
  EXPECT_EQ(decode_image(busy, "user:42", &v, &ver).code(), Code::kBusy);
  auto torn = img;
  set_word(torn, b.capacity - 8, version_word(4, 1));
  EXPECT_EQ(decode_image(torn, "user:42", &v, &ver).code(), Code::kBusy);

  std::vector<std::byte> zeros(96);
  EXPECT_EQ(decode_image(zeros, "user:42", &v, &ver).code(), Code::kInvalidArgument);

  retire(b.data());
  EXPECT_EQ(decode_image(b.image(), "user:42", &v, &ver).code(), Code::kNotFound);
}

TEST(Record, LockWordIsNotPartOfValidation) {
  Block b(64);
  create(b.data(), b.capacity, "k", "v", 1);
  word_at(b.data(), kLockOffset).store(0xdead);
  std::string v;
  EXPECT_TRUE(decode_image(b.image(), "k", &v, nullptr).is_ok());
  EXPECT_EQ(v, "v");
}

}  // namespace
}  // namespace rdx::store::record
