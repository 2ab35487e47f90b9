#pragma once
// Classic Paxos's acceptor side, one per node (its workers share it): for every key this node replicates, the
// committed (tag, value) in the store, the state of the key's open slot, and the registry of committed operations.
//
// A key's writes are a sequence of slots, each decided by one instance of Classic Paxos; the tag of slot s's value
// has timestamp s (quorum_register.h), so the store keeps the newest committed slot of each key. The invariant the
// protocol rests on (paxos.h explains the rest): an acceptor takes part in slot s only once it committed slot s - 1.
// Prepares carry the proposer's committed value of s - 1 (installed first); an accept for s at an acceptor that has
// not committed s - 1 is refused (kBehind). So every acceptor of the majority that decides slot s + 1 installed
// slot s's value, and registered the operation that decided it.
//
// The registry: a committed value carries the RmwId of the operation it came from (stored in front of the client's
// value). Installing it registers the id: lane -> highest sequence number committed. A proposer whose accepted value
// may have been decided by another proposer (Paxos makes later proposers adopt it) learns it from the registry.
//
// Every step that reads or changes a key's committed record, open slot or registration runs under the key's stripe
// lock: a prepare that finds no commit of slot s must not miss one installed together with the drop of the slot's
// accepted value.
#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "store/hashtable.h"

namespace rdx::replication::paxos {

// Which client operation a value belongs to: the lane it ran on (node << 32 | worker << 16 | index) and its sequence
// number there. A lane runs one operation at a time; its sequence numbers only grow (they start at the wall-clock
// time in ns when the lane is made, so a restarted node never reuses one while its clock does not go back).
struct RmwId {
  uint64_t lane = 0;
  uint64_t seq = 0;
  bool operator==(const RmwId&) const = default;
};
inline constexpr size_t kRmwIdBytes = 16;
// Largest client value: a stored value is the RmwId and the client's value.
inline constexpr size_t kMaxClientValue = store::kMaxValueBytes - kRmwIdBytes;

std::string make_blob(RmwId id, std::string_view value);
// Only for blobs of at least kRmwIdBytes.
RmwId blob_id(std::string_view blob);
inline std::string_view blob_value(std::string_view blob) { return blob.substr(kRmwIdBytes); }

// A ballot: priority (8 bits) | round (40 bits) | proposer node (16 bits); 0 is none. A higher priority wins, then
// a higher round, and the node breaks ties. The priority is how many slots the proposer's operation lost already
// (paxos.h: an operation that keeps losing preempts the fresh ones).
inline constexpr uint64_t kMaxPriority = 255;
inline constexpr uint64_t kMaxRound = (uint64_t{1} << 40) - 1;
inline constexpr uint64_t make_ballot(uint64_t priority, uint64_t round, uint16_t node) {
  return priority << 56 | (round & kMaxRound) << 16 | node;
}
inline constexpr uint64_t ballot_priority(uint64_t ballot) { return ballot >> 56; }
inline constexpr uint64_t ballot_round(uint64_t ballot) { return (ballot >> 16) & kMaxRound; }

// A value an acceptor accepted for its open slot.
struct Accepted {
  uint64_t ballot = 0;  // 0: none
  uint64_t tag = 0;     // the tag it commits with (timestamp = the slot)
  std::string blob;
};

// The open slot of a key at one acceptor.
struct SlotState {
  uint64_t slot = 0;
  uint64_t promised = 0;
  Accepted accepted;
};

enum class Verdict : uint8_t {
  kPromised = 0,    // prepare: promised; `accepted` is what this acceptor accepted in the slot (ballot 0: nothing)
  kAccepted = 1,    // accept: accepted
  kNack = 2,        // a higher ballot was promised (`ballot`)
  kCommitted = 3,   // the slot is committed here: (`tag`, `blob`) is the newest committed value
  kRegistered = 4,  // prepare: the asking operation is committed (registered here)
  kBehind = 5,      // accept: this acceptor has not committed the slot before (it missed the prepare)
};

struct AcceptorReply {
  Verdict verdict = Verdict::kNack;
  uint64_t ballot = 0;  // kNack: the promised ballot
  Accepted accepted;    // kPromised
  uint64_t tag = 0;     // kCommitted
  std::string blob;     // kCommitted
};

class Acceptor {
 public:
  static constexpr size_t kStripes = 256;

  // Installs a committed value: the record if it is newer, the operation registered, the open slot dropped once
  // committed. kOk unless the store refuses (kResourceExhausted: full).
  Code commit(store::HashTable& t, store::Session& s, const std::string& key, uint64_t tag, std::string_view blob);
  // Phase 1 for `slot` of `key` with `ballot`, after installing (base_tag, base_blob), the proposer's value of
  // slot - 1 (base_tag 0 for slot 1). `asking`: the proposer's operation (kRegistered when committed).
  AcceptorReply prepare(store::HashTable& t, store::Session& s, const std::string& key, uint64_t slot, uint64_t ballot,
                        uint64_t base_tag, std::string_view base_blob, RmwId asking);
  // Phase 2: accepts (tag, blob) for `slot` with `ballot` unless a higher ballot was promised.
  AcceptorReply accept(store::HashTable& t, store::Session& s, const std::string& key, uint64_t slot, uint64_t ballot,
                       uint64_t tag, std::string_view blob);
  bool registered(RmwId id) const;

  // Recovery (a member whose memory is new copies every other member's): the open slots and registrations of one
  // stripe, and their merge here. A merged slot that is committed here already is dropped; of two states of one
  // slot, the higher promise and the accepted value with the higher ballot are kept.
  struct OpenSlot {
    std::string key;
    SlotState state;
  };
  void export_stripe(size_t stripe, std::vector<OpenSlot>* slots, std::vector<RmwId>* registrations) const;
  void merge(store::HashTable& t, store::Session& s, const OpenSlot& open);
  void merge_registration(RmwId id);

  size_t open_slots() const;  // tests, metrics

 private:
  struct KeyStripe {
    std::mutex mu;
    std::unordered_map<std::string, SlotState> open;
  };
  struct LaneStripe {  // locked after a KeyStripe, never before one
    mutable std::mutex mu;
    std::unordered_map<uint64_t, uint64_t> registered;  // by lane: the highest sequence number committed
  };
  KeyStripe& stripe_of(std::string_view key);
  LaneStripe& lanes_of(uint64_t lane) { return lanes_[lane % kStripes]; }
  const LaneStripe& lanes_of(uint64_t lane) const { return lanes_[lane % kStripes]; }
  // Under the key's stripe lock. The key's open state for `slot`; null with `refusal` set when this acceptor takes no
  // part in it (the slot is committed here, or the one before is not).
  SlotState* enter_slot(KeyStripe& st, store::HashTable& t, store::Session& s, const std::string& key, uint64_t slot,
                        AcceptorReply* refusal);
  Code commit_locked(KeyStripe& st, store::HashTable& t, store::Session& s, const std::string& key, uint64_t tag,
                     std::string_view blob);
  void note(RmwId id);

  mutable std::array<KeyStripe, kStripes> keys_;
  std::array<LaneStripe, kStripes> lanes_;
};

}  // namespace rdx::replication::paxos
