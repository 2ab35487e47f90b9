#pragma once
// The participant side of the commit protocols: what a primary or backup does with its local records when a
// coordinator asks it to read, lock, validate, replicate, unlock or make a write readable. The same functions serve
// RPCs from remote coordinators and direct calls from coordinators on this node (no message to ourselves).
//
// Per record (txn/lockword.h): kLocked + owner while a transaction commits (no-wait: a second locker fails),
// kNotReadable at a backup between a replicated write and the notification that it committed (GetOne skips it),
// kAbsent for placeholders that hold a lock on a key that does not exist, or a delete not yet final.
// Backups keep an undo log of replicated writes until they are known committed.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "server/protocol.h"
#include "txn/messages.h"
#include "txn/txn.h"

namespace rdx::txn {

struct ParticipantStats {
  uint64_t locks = 0, lock_conflicts = 0, validations = 0, validation_failures = 0;
  uint64_t replicated = 0, undo_entries = 0, readable_raised = 0;
  uint64_t bad_messages = 0;
};

class Participant {
 public:
  explicit Participant(server::WorkerContext& ctx) : ctx_(ctx) {}
  void register_handlers();

  // Execution-phase read: the current value even if locked (commit-time validation catches conflicts).
  Read read(std::string_view key);
  // GetOne: the value only if no transaction holds it (primary: unlocked; backup: readable); else kBusy.
  Read read_one(std::string_view key);
  // Interprets a record image read by one hashtable batch (see TxnServiceImpl's batched reads).
  static Read interpret(store::OpStatus s, std::string&& value, uint64_t version, uint64_t lock, bool require_readable);

  std::vector<ItemResult> lock(const Batch& b);
  std::vector<ItemResult> validate(const Batch& b);
  std::vector<ItemResult> replicate(const Batch& b, bool at_backup);
  void unlock(const Batch& b);
  void make_readable(const Batch& b);

  const ParticipantStats& stats() const { return stats_; }

 private:
  struct Undo {
    std::string key;
    bool existed = false;
    std::string value;
    uint64_t version = 0;
  };
  ItemResult lock_one(uint64_t txid, const Item& it);
  ItemResult validate_one(uint64_t txid, const Item& it);
  ItemResult apply_write(const Item& it, uint64_t set_bits);
  void unlock_one(uint64_t txid, const Item& it, bool commit);
  // Sets `bits` in the record's lock word; false if the key has no record.
  bool set_bits(std::string_view key, uint64_t bits);

  server::WorkerContext& ctx_;
  std::unordered_map<uint64_t, std::vector<Item>> log_;   // writes logged with their lock (dnl1), by transaction
  std::unordered_map<uint64_t, std::vector<Undo>> undo_;  // backups: values before replicated writes, by transaction
  ParticipantStats stats_;
};

}  // namespace rdx::txn
