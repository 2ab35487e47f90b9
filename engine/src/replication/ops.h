#pragma once
// The single-key operations of the replication family. A write is an Rmw: a description of what to do with the
// key's current value, evaluated where the protocol orders the key's writes (primary-backup: at the primary), so a
// read-modify-write (INCR, APPEND, SETNX, GETSET, SET NX|XX|GET, GETDEL) is one operation of the protocol, never a
// read and a later conditional write that a concurrent writer could make fail. apply_rmw is the one definition of
// every operation's meaning; transactions evaluate the same Rmw against their own reads (resp/key_ops.cc).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "rpc/codec.h"

namespace rdx::replication {

struct Rmw {
  enum class Kind : uint8_t {
    kPut = 0,     // value = `value`
    kDelete = 1,  // the key is removed
    kAdd = 2,     // the value, a decimal int64 (absent = 0), plus `delta` (FAA); fails on non-integers and overflow
    kAppend = 3,  // the value (absent = "") followed by `value`
  };
  enum class When : uint8_t {
    kAlways = 0,
    kIfAbsent = 1,   // only if the key does not exist (SETNX, SET NX)
    kIfPresent = 2,  // only if it exists (SET XX)
    kIfEquals = 3,   // only if its value is `expected` (compare-and-set)
  };
  Kind kind = Kind::kPut;
  When when = When::kAlways;
  bool return_old = false;  // the result carries the value before the operation
  int64_t delta = 0;
  std::string value;
  std::string expected;

  static Rmw put(std::string v) { return Rmw{Kind::kPut, When::kAlways, false, 0, std::move(v), {}}; }
  static Rmw remove() { return Rmw{Kind::kDelete, When::kAlways, false, 0, {}, {}}; }
  static Rmw add(int64_t d) { return Rmw{Kind::kAdd, When::kAlways, false, d, {}, {}}; }
  static Rmw append(std::string v) { return Rmw{Kind::kAppend, When::kAlways, false, 0, std::move(v), {}}; }
  // Writes `v` if the value is `expected` (an absent key never is); the result carries the value it found.
  static Rmw compare_and_set(std::string expected, std::string v) {
    return Rmw{Kind::kPut, When::kIfEquals, true, 0, std::move(v), std::move(expected)};
  }
  // A plain overwrite: what a combined run of SETs may replace by its last value (replication/key_turns.h).
  bool is_blind_put() const { return kind == Kind::kPut && when == When::kAlways && !return_old; }
  // A put or a delete that neither depends on nor returns the value it replaces.
  bool is_plain_write() const {
    return is_blind_put() || (kind == Kind::kDelete && when == When::kAlways && !return_old);
  }

  void encode(rpc::Writer& w) const;
  // False for a malformed or out-of-range encoding (unknown kind, value over the size limit, trailing bytes).
  static bool decode(rpc::Reader& r, Rmw* out);
};

// What a write did.
struct WriteResult {
  Code status = Code::kOk;     // kOk; kInvalidArgument: the operation does not apply to the value (nothing written;
                               // `error` says why); kUnsupported: the protocol does not offer the operation (nothing
                               // written); kUnavailable, kResourceExhausted: the cluster could not serve it; kTimeout:
                               // it may or may not have taken effect
  bool existed = false;        // the key existed before
  bool applied = false;        // the operation took place (its condition held)
  bool combined = false;       // a blind put written together with a later put of the key (replication/key_turns.h):
                               // it took effect and was overwritten at once, so no version is its own
  uint64_t prior_version = 0;  // the version the operation saw (0 = absent)
  // Whether prior_version (and existed, old_value) is the version the operation came right after, i.e. what it read
  // (a protocol that orders each key's writes); false: only the newest a quorum reported before it (abd), which a
  // concurrent write may follow. Not on the wire: results are forwarded only by protocols where it holds.
  bool prior_is_predecessor = true;
  uint64_t version = 0;   // the key's version after it: the one it created, or prior_version if it wrote nothing
  int64_t number = 0;     // kAdd: the new value; kAppend: the new length
  std::string old_value;  // with return_old, when the key existed
  std::string error;      // why, when status is not kOk

  static WriteResult failed(Code c, std::string why) {
    WriteResult r;
    r.status = c;
    r.error = std::move(why);
    return r;
  }
  void encode(rpc::Writer& w) const;
  static bool decode(rpc::Reader& r, WriteResult* out);
};

// The effect of `op` on a key whose value is `current` (nullopt: absent).
struct Applied {
  Code status = Code::kOk;  // kInvalidArgument: `error` says why; nothing is written
  std::string error;
  bool write = false;                    // the key changes
  std::optional<std::string> new_value;  // with write: the new value, nullopt = delete
  bool applied = false;
  int64_t number = 0;
};
Applied apply_rmw(const Rmw& op, const std::optional<std::string>& current);
// What the client hears of `op` evaluated (`a`) on `current`, whose version is `current_version`; `written` is the
// version the operation wrote when it writes.
WriteResult result_of(const Rmw& op, const Applied& a, const std::optional<std::string>& current,
                      uint64_t current_version, uint64_t written);

}  // namespace rdx::replication
