#pragma once
// rdx's hashtable (after Dandelion's DLHT): an index of 64-byte buckets with bounded cache-line chaining, records of
// variable-size keys and values in a pre-allocated arena (so one-sided READs can reach them), lock-free reads,
// per-record lock and version words laid out for remote validation, a batch API that prefetches the whole batch
// before executing it, deletes that free slots and memory, and growth that never stops readers.
//
// Threads: any number of threads use the table at once, each through its own Session (epoch-based reclamation).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace rdx::store {

enum class OpStatus : uint8_t {
  kOk,
  kNotFound,
  kExists,    // insert of a present key
  kStale,     // put/remove with an explicit version not newer than the stored one: ignored
  kTooLarge,  // key or value over the limits below
  kNoMemory,  // arena exhausted (the table never corrupts itself on this path)
};
const char* op_status_name(OpStatus s);

inline constexpr size_t kMaxKeyBytes = 1024;
inline constexpr size_t kMaxValueBytes = 1 << 20;
// Version argument meaning "the table picks the next version" (current + 1, or a fresh version for new keys).
inline constexpr uint64_t kAutoVersion = 0;
// Versions are 48-bit (the record's version word also carries a write-in-progress bit and a block incarnation).
inline constexpr uint64_t kMaxVersion = (uint64_t{1} << 48) - 1;
// Lock word of a record the store retired (removed, or moved to another block by an update). The store swaps it in
// atomically and carries the previous value over to the new block, so a protocol lock survives relocation and a
// peer's CAS on a stale record (expecting unlocked or its own lock value) fails instead of being lost.
inline constexpr uint64_t kRetiredLockWord = ~uint64_t{0};

struct TableConfig {
  std::span<std::byte> arena;     // all memory the table may use (index + records), e.g. a registered MemoryBlock
  size_t initial_buckets = 1024;  // rounded up to a power of two
  unsigned max_chain = 4;         // buckets per chain (the primary bucket included) before the index grows
  double max_load = 0.75;         // slots used / slots in primary buckets before the index grows
};

enum class Op : uint8_t { kGet, kPut, kInsert, kRemove };

// One request of a batch. Inputs: op, key, value (put/insert), version (put/remove: kAutoVersion or explicit).
// Outputs: status, version_out (the record's version after the op, or the version read), value_out (get).
struct Request {
  Op op = Op::kGet;
  std::string_view key;
  std::string_view value;
  uint64_t version = kAutoVersion;
  std::string* value_out = nullptr;
  uint64_t new_lock_word = 0;  // put/insert: the lock word of a record this request creates
  OpStatus status = OpStatus::kOk;
  uint64_t version_out = 0;
  uint64_t lock_word_out = 0;  // get: the record's lock word, read after the value (see HashTable::get)
};

class HashTable;

// Per-thread handle (epoch-based reclamation, thread-local allocation caches). Not thread-safe; one per thread.
class Session {
 public:
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) = delete;
  Session(const Session&) = delete;

 private:
  friend class HashTable;
  explicit Session(HashTable* t, void* state) : table_(t), state_(state) {}
  HashTable* table_;
  void* state_;
};

// A record as protocols see it. Valid while the Session that produced it does not call any other table method
// (epoch protection); re-find after that.
class RecordRef {
 public:
  RecordRef() = default;
  bool valid() const { return rec_ != nullptr; }
  // The protocol's lock word: the store never interprets it (0 = unlocked by convention). Remote peers CAS it.
  std::atomic<uint64_t>& lock_word() const;
  // Version of the stable value (seqlock-consistent).
  uint64_t version() const;
  // Byte offset of the record inside the arena (RemotePtr offset for one-sided access) and its total length.
  uint64_t arena_offset() const;
  uint32_t length() const;

 private:
  friend class HashTable;
  explicit RecordRef(void* rec, const HashTable* t) : rec_(rec), table_(t) {}
  void* rec_ = nullptr;
  const HashTable* table_ = nullptr;
};

// One record returned by HashTable::scan.
struct ScanItem {
  std::string key;
  std::string value;
  uint64_t version = 0;
  uint64_t lock_word = 0;
};

struct TableStats {
  size_t keys = 0;
  size_t buckets = 0;  // primary buckets of the current index
  size_t overflow_buckets = 0;
  size_t resizes = 0;
  size_t arena_used = 0, arena_size = 0;
};

class HashTable {
 public:
  static Result<std::unique_ptr<HashTable>> create(const TableConfig& cfg);
  ~HashTable();

  Session session();

  // With lock_word_out: also the record's lock word, loaded after the value was read consistently. A protocol that
  // finds it unlocked knows the value was committed no later than that load (a reader that loaded the lock word
  // first could pair a stale "unlocked" with a value written under a lock). kRetiredLockWord: the record was
  // replaced meanwhile; read again.
  OpStatus get(Session& s, std::string_view key, std::string* value_out, uint64_t* version_out = nullptr,
               uint64_t* lock_word_out = nullptr);
  // Upsert. version == kAutoVersion: new version = current + 1 (fresh keys get a version never used for this key
  // before in this table, so delete + re-insert cannot repeat a version). Explicit version: applied only if newer than
  // the stored version (else kStale); used by replication, where the primary assigns versions. Versions above
  // kMaxVersion give kTooLarge.
  // A record the put creates (new key) starts with lock word `new_lock_word`; an existing record keeps its own.
  OpStatus put(Session& s, std::string_view key, std::string_view value, uint64_t version = kAutoVersion,
               uint64_t* version_out = nullptr, uint64_t new_lock_word = 0);
  OpStatus insert(Session& s, std::string_view key, std::string_view value, uint64_t* version_out = nullptr,
                  uint64_t new_lock_word = 0);
  // Removes the key, freeing its slot (memory is reclaimed once no reader can hold it). Explicit version: removes only
  // if the stored version is older.
  OpStatus remove(Session& s, std::string_view key, uint64_t version = kAutoVersion);

  // Batch: issues a software prefetch for every request's bucket, then for every record, then executes the requests
  // in order (same results as executing them one by one).
  void execute(Session& s, std::span<Request> batch);

  RecordRef find(Session& s, std::string_view key);

  // Copies records in index order, chain by chain (each chain under its writers' lock, so every record is read
  // whole): up to about `max_items` from `cursor` (0 = the start) into `out`. Returns the cursor to continue from,
  // 0 when done. Every key present during the whole scan is returned at least once; a resize between two calls
  // restarts the scan (duplicates are possible, omissions are not).
  uint64_t scan(Session& s, uint64_t cursor, size_t max_items, std::vector<ScanItem>* out);

  // Doubles the index now (e.g. before a bulk load; tests use it to force resizes under load). Readers and writers
  // keep running. False if the arena cannot hold the larger index.
  bool grow(Session& s);

  TableStats stats() const;
  size_t size() const;
  // The largest version any removed record had (fresh keys start above it). A copy of this table made elsewhere (a
  // replica that joins) raises its own to the source's, so the copy never issues a version of a deleted key again.
  uint64_t removed_version_max() const;
  void raise_removed_version_max(uint64_t version);

  // Validation of a record image fetched by a one-sided READ of RecordRef::length() bytes at arena_offset():
  // returns kOk and the value/version if the image is consistent (not torn, not mid-write); kBusy if torn or being
  // written (retry); kNotFound if the record was deleted or its block now holds another key or size (look the key
  // up again); kInvalidArgument if the bytes are not a record. Layout: store/record.h.
  static Status decode_remote_record(std::span<const std::byte> image, std::string_view expected_key,
                                     std::string* value_out, uint64_t* version_out);

 private:
  struct Impl;
  explicit HashTable(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  friend class Session;
  friend class RecordRef;
};

}  // namespace rdx::store
