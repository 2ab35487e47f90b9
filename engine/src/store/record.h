#pragma once
// Record layout in the arena, shared by local readers/writers and by peers that fetch records with one-sided READs.
// A record occupies one allocator block of `capacity` bytes (a multiple of 8, 8-byte aligned):
//
//   [0]             lock word     owned by protocols (remote peers CAS it); the store only initializes it and
//                                 swaps in kRetiredLockWord when the record is retired
//   [8]             version word  bit 0: write in progress; bits 1..15: block incarnation; bits 16..63: version
//   [16]            header word   key_len | val_len | capacity/8 | deleted flag | marker (see encode_header)
//   [24]            key bytes, then value bytes, then padding
//   [capacity - 8]  trailer       a copy of the version word
//
// Every byte is written and read with 8-byte atomics in ascending address order (common/atomic_copy.h), the same
// order a one-sided READ copies in. A writer stores: version := odd, trailer := odd, header/key/value, trailer :=
// new even word, version := new even word (release stores). A reader that copied [0, capacity) in ascending order
// with acquire loads holds a consistent record iff version word == trailer and it is even.
//
// The trailer sits at the end of the block, not after the value, so its position never moves while a block lives
// (in-place updates change val_len). The incarnation bits change every time a block is reused for a new record, so
// an image that mixes two records that once lived in the same block never passes the check, even when both records
// carry the same version.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"
#include "store/hashtable.h"

namespace rdx::store::record {

inline constexpr size_t kLockOffset = 0;
inline constexpr size_t kVersionOffset = 8;
inline constexpr size_t kHeaderOffset = 16;
inline constexpr size_t kKeyOffset = 24;
inline constexpr size_t kOverheadBytes = kKeyOffset + 8;  // lock, version, header words + trailer
inline constexpr uint64_t kMaxCapacity = (uint64_t{1} << 26) * 8;

inline constexpr size_t round_up8(size_t n) { return (n + 7) & ~size_t{7}; }
// Block bytes a record of this key and value needs.
inline constexpr size_t bytes_needed(size_t key_len, size_t val_len) {
  return round_up8(kOverheadBytes + key_len + val_len);
}

struct Header {
  uint32_t key_len = 0;
  uint32_t val_len = 0;
  uint32_t capacity = 0;
  bool deleted = false;
};
uint64_t encode_header(const Header& h);
// nullopt when the word cannot be the header of a record (bad marker, lengths over the limits or the capacity).
std::optional<Header> decode_header(uint64_t word);

inline constexpr uint64_t version_word(uint64_t version, uint32_t incarnation) {
  return (version << 16) | (uint64_t{incarnation & 0x7fff} << 1);
}
inline constexpr uint64_t version_of(uint64_t word) { return word >> 16; }
inline constexpr uint32_t incarnation_of(uint64_t word) { return static_cast<uint32_t>(word >> 1) & 0x7fff; }
inline constexpr bool write_in_progress(uint64_t word) { return (word & 1) != 0; }

inline std::atomic_ref<uint64_t> word_at(std::byte* rec, size_t offset) {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(rec + offset));
}

// --- writers (the caller holds the record's bucket lock, or the block is not yet reachable) ---

// Builds a new record in a freshly allocated block of `capacity` bytes, bumping the block's incarnation.
void create(std::byte* rec, uint32_t capacity, std::string_view key, std::string_view value, uint64_t version,
            uint64_t lock_word = 0);
// Replaces the value in place (same key, bytes_needed(key, value) <= capacity) and sets a new version.
void overwrite(std::byte* rec, std::string_view key, std::string_view value, uint64_t version);
// Flags a record that is no longer reachable from the index (removed or replaced by a newer block). Readers that
// reach it through a stale slot look the key up again; remote readers get kNotFound. Swaps kRetiredLockWord into
// the lock word and returns the lock word it held (to carry over to a replacement block).
uint64_t retire(std::byte* rec);

// --- local readers (lock-free; the caller's epoch keeps the block alive) ---

Header header(std::byte* rec);
bool key_equals(std::byte* rec, std::string_view key);
// Version of the stable value (waits out a write in progress).
uint64_t stable_version(std::byte* rec);

enum class ReadResult : uint8_t { kOk, kDeleted };
// Seqlock read of value and version. value_out/version_out may be null.
ReadResult read(std::byte* rec, std::string* value_out, uint64_t* version_out);

// --- remote readers ---

// See HashTable::decode_remote_record: kOk, kBusy (torn / being written: read again), kNotFound (deleted or the block
// now holds another key: look the key up again), kInvalidArgument (the bytes are not a record).
Status decode_image(std::span<const std::byte> image, std::string_view expected_key, std::string* value_out,
                    uint64_t* version_out);

}  // namespace rdx::store::record
