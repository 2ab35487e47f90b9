#include "store/record.h"

#include <algorithm>
#include <cstring>

#include "common/atomic_copy.h"
#include "store/cpu.h"
#include "store/hashtable.h"

namespace rdx::store::record {

namespace {

// Header word: key_len (11 bits) | val_len (21) | capacity/8 (26) | deleted (1) | marker (5).
constexpr uint64_t kMarker = 0x15;
constexpr int kValShift = 11, kCapShift = 32, kDeletedShift = 58, kMarkerShift = 59;
static_assert(kMaxKeyBytes < (1u << 11) && kMaxValueBytes < (1u << 21));

// Writes header || key || value || zero padding at rec + kHeaderOffset as whole aligned words, staged through a
// small buffer so every store is one 8-byte atomic (remote readers copy words, never bytes).
void write_body(std::byte* rec, uint64_t header_word, std::string_view key, std::string_view value) {
  const size_t total = round_up8(8 + key.size() + value.size());
  alignas(8) std::byte stage[512];
  size_t pos = 0;  // position in the logical stream header || key || value || padding
  while (pos < total) {
    const size_t n = std::min(sizeof(stage), total - pos);
    size_t filled = 0;
    auto take = [&](const void* src, size_t src_begin, size_t src_len) {
      // Copies the part of [src_begin, src_begin + src_len) of the stream that falls into [pos, pos + n).
      size_t from = std::max(pos, src_begin), to = std::min(pos + n, src_begin + src_len);
      if (from >= to) return;
      std::memcpy(stage + (from - pos), static_cast<const std::byte*>(src) + (from - src_begin), to - from);
      filled = std::max(filled, to - pos);
    };
    take(&header_word, 0, 8);
    take(key.data(), 8, key.size());
    take(value.data(), 8 + key.size(), value.size());
    std::memset(stage + filled, 0, n - filled);
    atomic_store_bytes(rec + kHeaderOffset + pos, stage, n);
    pos += n;
  }
}

uint64_t header_for(uint32_t capacity, std::string_view key, std::string_view value) {
  return encode_header({static_cast<uint32_t>(key.size()), static_cast<uint32_t>(value.size()), capacity, false});
}

// The seqlock write protocol shared by create and overwrite.
void publish(std::byte* rec, uint32_t capacity, uint64_t busy_word, uint64_t new_word, std::string_view key,
             std::string_view value) {
  word_at(rec, kVersionOffset).store(busy_word | 1, std::memory_order_release);
  word_at(rec, capacity - 8).store(busy_word | 1, std::memory_order_release);
  write_body(rec, header_for(capacity, key, value), key, value);
  word_at(rec, capacity - 8).store(new_word, std::memory_order_release);
  word_at(rec, kVersionOffset).store(new_word, std::memory_order_release);
}

uint64_t load_word(std::span<const std::byte> image, size_t offset) {
  uint64_t w;
  std::memcpy(&w, image.data() + offset, 8);
  return w;
}

}  // namespace

uint64_t encode_header(const Header& h) {
  return uint64_t{h.key_len} | (uint64_t{h.val_len} << kValShift) | (uint64_t{h.capacity / 8} << kCapShift) |
         (uint64_t{h.deleted} << kDeletedShift) | (kMarker << kMarkerShift);
}

std::optional<Header> decode_header(uint64_t word) {
  if ((word >> kMarkerShift) != kMarker) return std::nullopt;
  Header h;
  h.key_len = static_cast<uint32_t>(word & ((1u << 11) - 1));
  h.val_len = static_cast<uint32_t>((word >> kValShift) & ((1u << 21) - 1));
  h.capacity = static_cast<uint32_t>(((word >> kCapShift) & ((uint64_t{1} << 26) - 1)) * 8);
  h.deleted = ((word >> kDeletedShift) & 1) != 0;
  if (h.key_len > kMaxKeyBytes || h.val_len > kMaxValueBytes) return std::nullopt;
  if (h.capacity < bytes_needed(h.key_len, h.val_len)) return std::nullopt;
  return h;
}

void create(std::byte* rec, uint32_t capacity, std::string_view key, std::string_view value, uint64_t version,
            uint64_t lock_word) {
  // Whatever the block held before (an older record, or nothing), the next incarnation differs from it.
  const uint64_t previous = word_at(rec, kVersionOffset).load(std::memory_order_relaxed);
  const uint64_t word = version_word(version, incarnation_of(previous) + 1);
  word_at(rec, kLockOffset).store(lock_word, std::memory_order_release);
  publish(rec, capacity, previous, word, key, value);
}

void overwrite(std::byte* rec, std::string_view key, std::string_view value, uint64_t version) {
  const uint64_t previous = word_at(rec, kVersionOffset).load(std::memory_order_relaxed);
  publish(rec, header(rec).capacity, previous, version_word(version, incarnation_of(previous)), key, value);
}

uint64_t retire(std::byte* rec) {
  Header h = header(rec);
  h.deleted = true;
  word_at(rec, kHeaderOffset).store(encode_header(h), std::memory_order_release);
  return word_at(rec, kLockOffset).exchange(kRetiredLockWord, std::memory_order_acq_rel);
}

Header header(std::byte* rec) {
  // Reachable records always carry a valid header (it is written before the block is published).
  return *decode_header(word_at(rec, kHeaderOffset).load(std::memory_order_acquire));
}

bool key_equals(std::byte* rec, std::string_view key) {
  if (header(rec).key_len != key.size()) return false;
  // Keys never change while a block holds a record, so no version check is needed here.
  for (size_t i = 0; i < key.size(); i += 8) {
    const uint64_t w = word_at(rec, kKeyOffset + i).load(std::memory_order_acquire);
    if (std::memcmp(&w, key.data() + i, std::min<size_t>(8, key.size() - i)) != 0) return false;
  }
  return true;
}

uint64_t stable_version(std::byte* rec) {
  for (;;) {
    const uint64_t w = word_at(rec, kVersionOffset).load(std::memory_order_acquire);
    if (!write_in_progress(w)) return version_of(w);
    cpu_relax();
  }
}

ReadResult read(std::byte* rec, std::string* value_out, uint64_t* version_out) {
  for (;;) {
    const uint64_t before = word_at(rec, kVersionOffset).load(std::memory_order_acquire);
    if (write_in_progress(before)) {
      cpu_relax();
      continue;
    }
    const Header h = header(rec);
    if (h.deleted) return ReadResult::kDeleted;
    if (value_out != nullptr) {
      value_out->resize(h.val_len);
      atomic_load_bytes(value_out->data(), rec + kKeyOffset + h.key_len, h.val_len);
    }
    // Acquire loads above keep this load after them: a changed word means a writer overlapped the copy.
    if (word_at(rec, kVersionOffset).load(std::memory_order_acquire) == before) {
      if (version_out != nullptr) *version_out = version_of(before);
      return ReadResult::kOk;
    }
  }
}

Status decode_image(std::span<const std::byte> image, std::string_view expected_key, std::string* value_out,
                    uint64_t* version_out) {
  if (image.size() < kOverheadBytes || image.size() % 8 != 0) {
    return error(Code::kInvalidArgument, "record image of {} bytes (needs >= {} and a multiple of 8)", image.size(),
                 kOverheadBytes);
  }
  const uint64_t version = load_word(image, kVersionOffset);
  if (write_in_progress(version)) return error(Code::kBusy, "record is being written");
  const std::optional<Header> h = decode_header(load_word(image, kHeaderOffset));
  if (!h) return error(Code::kInvalidArgument, "image does not hold a record header");
  if (h->capacity > image.size()) {
    return error(Code::kNotFound, "record of {} bytes does not fit the {}-byte image (block reused)", h->capacity,
                 image.size());
  }
  if (load_word(image, h->capacity - 8) != version) return error(Code::kBusy, "torn record image");
  if (h->deleted) return error(Code::kNotFound, "record deleted");
  if (h->key_len != expected_key.size() ||
      (!expected_key.empty() &&
       std::memcmp(image.data() + kKeyOffset, expected_key.data(), expected_key.size()) != 0)) {
    return error(Code::kNotFound, "record holds another key");
  }
  if (value_out != nullptr) {
    value_out->assign(reinterpret_cast<const char*>(image.data()) + kKeyOffset + h->key_len, h->val_len);
  }
  if (version_out != nullptr) *version_out = version_of(version);
  return Status::ok();
}

}  // namespace rdx::store::record
