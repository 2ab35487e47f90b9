#pragma once
// Messages between Dandelion's coordinators and participants. Every step carries a batch of items for one node, so
// a transaction sends one message per node per step and the RPC layer batches messages of many transactions into one
// packet. Decoding validates every field (rpc::Reader); a malformed message is answered with kInvalidArgument.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rpc/codec.h"
#include "rpc/rpc.h"

namespace rdx::txn::dandelion {

// Offsets in the protocol's message range (its registry line). Every message goes to a key's primary: what reaches
// the backups travels through the cluster's replica log.
enum Msg : uint16_t {
  kLock = 0,      // request: Batch -> per-item ItemResult
  kValidate = 1,  // request: Batch -> per-item ItemResult
  kApply = 2,     // ackable (dnl2): apply the writes (values logged with the locks) under the locks
  kUnlock = 3,    // ackable: commit (apply the logged values) or abort, and release
  kQuery = 4,     // request (coordinator recovery, recovery.cc): txid -> Answer (u8 TxnState; kUntouched: + u32 ms)
  kLockRead = 5,  // request (2PL: execution reads lock): LockRead -> LockReadResult, one round trip
};

// A transaction at one participant (a primary it locked at), as coordinator recovery sees it (recovery.cc).
enum class TxnState : uint8_t {
  kUnknown = 0,    // never locked here (or forgotten): from now on it never will be
  kLocked = 1,     // every item this participant was asked to lock is locked
  kPartial = 2,    // some items failed to lock: the coordinator cannot have decided commit
  kApplied = 3,    // dnl2: applied under its locks (the coordinator had decided commit)
  kCommitted = 4,  // committed here (by its coordinator or by a recovery)
  kAborted = 5,    // aborted here by a recovery
  kHidden = 6,     // inherited by a new primary: its backup held the writes hidden, nobody decided them here
  // Unknown here, and none of its writes was replicated to this node as a backup of its shard within the time the
  // answer carries (cluster::TxnHeard::kNothing): a new primary's answer for its predecessor.
  kUntouched = 7,
};

// A participant's answer to a recovery's question.
struct Answer {
  TxnState state = TxnState::kUnknown;
  std::chrono::milliseconds complete_for{0};  // kUntouched: how far back a write of it would have been heard
};

enum class ItemStatus : uint8_t {
  kOk = 0,
  kLocked = 1,   // held by another transaction
  kChanged = 2,  // version differs from the one read
  kNoMemory = 3,
  kInvalid = 4,
};

enum ItemFlags : uint8_t {
  kWrite = 1,           // a write (else a read lock / read validation)
  kDelete = 2,          // the write deletes the key
  kCheckVersion = 4,    // lock only if the version is still `version`
  kHasValue = 8,        // value present (a write in a lock batch: logged for its apply, unlock or recovery)
  kCommit = 16,         // unlock: commit (else abort)
  kApplyAtUnlock = 32,  // unlock with kCommit: apply the write now (its value travels with it or was logged)
  kAbsentAtLock = 64,   // a participant's own note on a locked item (never sent): the key was absent when locked
};

struct Item {
  std::string key;
  uint8_t flags = 0;
  uint64_t version = 0;  // lock/validate: the version read (0 = absent); apply/unlock: the new version
  std::string value;

  void encode(rpc::Writer& w) const { w.bytes(key).put(flags).put(version).bytes(value); }
  static Item decode(rpc::Reader& r) {
    Item it;
    it.key = std::string(r.bytes(1024));
    it.flags = r.get<uint8_t>();
    it.version = r.get<uint64_t>();
    it.value = std::string(r.bytes(1 << 20));
    return it;
  }
};

struct Batch {
  uint64_t txid = 0;
  // Lock batches only: every node the transaction locks at (coordinator recovery asks them all), and the
  // coordinator worker's watermark: each of its transactions below it has finished at every participant, so their
  // remembered outcomes can go.
  std::vector<uint16_t> participants;
  uint64_t watermark = 0;
  // Lock batches of a timestamp-ordered protocol (MVCC): the transaction's timestamp (its start, CLOCK_REALTIME ns;
  // txid breaks ties), which the primary checks the written keys' read and write timestamps against. 0: no check.
  int64_t ts = 0;
  std::vector<Item> items;

  std::string encode() const {
    rpc::Writer w;
    w.put(txid).put(watermark).put(ts).put(static_cast<uint16_t>(participants.size()));
    for (uint16_t p : participants) w.put(p);
    w.put(static_cast<uint32_t>(items.size()));
    for (const Item& it : items) it.encode(w);
    return w.data();
  }
  static std::optional<Batch> decode(std::span<const std::byte> payload) {
    rpc::Reader r(payload);
    Batch b;
    b.txid = r.get<uint64_t>();
    b.watermark = r.get<uint64_t>();
    b.ts = r.get<int64_t>();
    auto np = r.get<uint16_t>();
    if (!r.ok() || np > 1024) return std::nullopt;
    for (uint16_t i = 0; i < np && r.ok(); ++i) b.participants.push_back(r.get<uint16_t>());
    auto n = r.get<uint32_t>();
    if (!r.ok() || n > 4096) return std::nullopt;
    b.items.reserve(n);
    for (uint32_t i = 0; i < n && r.ok(); ++i) b.items.push_back(Item::decode(r));
    if (!r.done()) return std::nullopt;
    return b;
  }
};

// Per-item results of lock / validate / replicate: a status and a version (lock: the version at lock time).
// The item that releases `it`'s lock (abort, or the commit's flags added by the caller).
inline Item release_of(const Item& it) {
  return Item{it.key, static_cast<uint8_t>(it.flags & (kWrite | kDelete)), 0, {}};
}

struct ItemResult {
  ItemStatus status = ItemStatus::kOk;
  uint64_t version = 0;
};

inline std::string encode_results(const std::vector<ItemResult>& rs) {
  rpc::Writer w;
  w.put(static_cast<uint32_t>(rs.size()));
  for (const ItemResult& r : rs) w.put(static_cast<uint8_t>(r.status)).put(r.version);
  return w.data();
}

inline std::optional<std::vector<ItemResult>> decode_results(std::string_view payload, size_t expect) {
  rpc::Reader r(payload);
  auto n = r.get<uint32_t>();
  if (!r.ok() || n != expect) return std::nullopt;
  std::vector<ItemResult> rs(n);
  for (auto& x : rs) {
    auto s = r.get<uint8_t>();
    x.version = r.get<uint64_t>();
    if (s > static_cast<uint8_t>(ItemStatus::kInvalid)) return std::nullopt;
    x.status = static_cast<ItemStatus>(s);
  }
  if (!r.done()) return std::nullopt;
  return rs;
}

// 2PL's execution read (NOWAIT, WAITDIE): lock the key at its primary and return the record with the lock status.
struct LockRead {
  uint64_t txid = 0;
  uint64_t priority = 0;  // WAITDIE's timestamp (smaller: older); kept with the lock, returned to a later requester
  std::string key;

  std::string encode() const {
    rpc::Writer w;
    w.put(txid).put(priority).bytes(key);
    return w.data();
  }
  static std::optional<LockRead> decode(std::span<const std::byte> payload) {
    rpc::Reader r(payload);
    LockRead l;
    l.txid = r.get<uint64_t>();
    l.priority = r.get<uint64_t>();
    l.key = std::string(r.bytes(1024));
    if (!r.done() || l.key.empty()) return std::nullopt;
    return l;
  }
};

struct LockReadResult {
  ItemStatus status = ItemStatus::kOk;  // kOk: locked (and read); kLocked: another transaction holds it
  bool present = false;                 // kOk: the key exists (else the lock holds an absent key)
  uint64_t version = 0;                 // kOk and present: its version
  uint64_t holder_priority = 0;         // kLocked: the holder's priority (0: unknown, e.g. a single-key write)
  std::string value;

  std::string encode() const {
    rpc::Writer w;
    w.put(static_cast<uint8_t>(status)).put(static_cast<uint8_t>(present)).put(version).put(holder_priority);
    w.bytes(value);
    return w.data();
  }
  static std::optional<LockReadResult> decode(std::string_view payload) {
    rpc::Reader r(payload);
    LockReadResult l;
    const auto s = r.get<uint8_t>();
    const auto present = r.get<uint8_t>();
    l.version = r.get<uint64_t>();
    l.holder_priority = r.get<uint64_t>();
    l.value = std::string(r.bytes(1 << 20));
    if (!r.done() || s > static_cast<uint8_t>(ItemStatus::kInvalid) || present > 1) return std::nullopt;
    l.status = static_cast<ItemStatus>(s);
    l.present = present == 1;
    return l;
  }
};

}  // namespace rdx::txn::dandelion
