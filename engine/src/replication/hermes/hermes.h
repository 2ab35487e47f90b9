#pragma once
// Hermes (Katsarou et al., ASPLOS'20), as Odyssey runs it: invalidation-based replication where every member
// coordinates updates of any key and reads are local.
//  - A member holds per key (tag, value) in the store, the tag in the record's version word as the quorum register
//    keeps it (timestamp | node | deleted, quorum_register.h), and a state in the lock word: Valid (readable) or
//    Invalid (kNotReadable: an update of the key was announced here and is not known to have reached every member).
//  - Update (every Rmw, plain SET included), at a member in sync whose copy of the key is Valid: the node's
//    operations on the key take turns (KeyTurns); the Rmw is evaluated on the Valid value (its base); the new tag is
//    (ts(base) + 1 + lost, this node), `lost` counting the operation's aborts so far (a starving update climbs above
//    fresh ones). It is installed here Invalid and sent to every other member (INV). A member whose tag is older
//    installs it Invalid and acknowledges; an equal tag is acknowledged; a newer one refuses, answering with its tag
//    and value. Acknowledged by every member, the update is committed: Valid here (unless a newer tag arrived
//    meanwhile) and VAL to the others, each of which makes it Valid if its tag is still that one.
//    Refused, or overtaken here by a newer tag before every member acknowledged: aborted. Nothing of it can become
//    readable (a member holds a newer tag for good and refuses it), so it runs again on the newer value.
//    Deviation from the paper: there, plain writes never abort (ts + 2, acknowledged whatever the member holds) and
//    only RMWs do (ts + 1). Two writes W1 < W2 of one base can then both commit (W2's coordinator acknowledges W1
//    without taking it), and an RMW evaluated on W1 at a member W2 had not reached yet commits above both: W2 was
//    acknowledged between W1 and the RMW, which did not see it (a lost update). TestFaults::unconditional_writes
//    runs the paper's writes, and the conformance suite's Hermes test shows the checker finding exactly these cycles
//    (G-single: an add that read W1 = (381, n0) committed as (382, n1) after W2 = (381, n2)). Here every update is
//    conditional on its base; plain SETs pay for it by retrying under contention (combined runs of SETs, KeyTurns,
//    help).
//  - Read: local while the key is Valid. A committed update was acknowledged by every member, so afterwards no member
//    holds an older tag Valid; a tag turns Valid only once committed. While Invalid the read waits; a key Invalid at
//    the same tag for longer than kReplayAfter is replayed: this node sends INV with that (tag, value) to every
//    member, and commits it when all acknowledge (Valid here, VAL); a refusal carries a newer tag and value, which
//    this node installs (Invalid) and replays in turn when it stays. Replays finish updates whose coordinator failed
//    or timed out, and show what a lost VAL would have.
//    Before that, after kAskAfter, it asks the other members for their copy: a member holding the tag Valid shows it
//    committed (a tag turns Valid only once committed), and this node makes it Valid too; a newer tag is installed.
//    A replay must not commit an update its coordinator may still abort and run again (its effect would apply
//    twice): a coordinator retries only within kOpDeadline after it took the tag, and a replay waits longer than
//    that after this node saw the tag Invalid, which is after the coordinator took it.
//  - Survives no member's loss: an update needs every member's acknowledgment (the paper's membership updates,
//    which would drop a failed member, are not implemented), so while a member is down its shard's updates fail
//    (kTimeout) and its keys' updates in flight stay Invalid until it is back. A restarted member recovers as the
//    quorum register's members do (quorum_recovery.cc: it copies every other member); what it copies arrives
//    Invalid, and its first read asks the others (above).
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>

#include "replication/marked_register.h"

namespace rdx::replication::hermes {

std::unique_ptr<ReplicationNode> make_node(const NodeEnv& env);

// A key Invalid at one tag this long is asked about at the other members: one that holds the tag Valid shows it
// committed (what a lost VAL, or a copy made while recovering, would not tell this node).
inline constexpr auto kAskAfter = std::chrono::milliseconds(2);
// A key Invalid at one tag this long is replayed: above the coordinator's retry window (kOpDeadline).
inline constexpr auto kReplayAfter = kOpDeadline + std::chrono::milliseconds(200);
// How long an update may take in all (each attempt's retry window is kOpDeadline) before it gives up.
inline constexpr auto kUpdateBudget = std::chrono::seconds(5);

enum Msg : uint16_t {
  // request: bytes key, u64 tag, u8 unconditional, bytes value -> kOk (installed, or held already); kAborted: u64
  // tag, bytes value (the receiver's newer ones; never for an unconditional INV); kUnavailable while not in sync
  kInv = kFirstProtocolMsg,
  kVal,        // one-way: bytes key, u64 tag
  kState,      // request: bytes key -> kOk: u64 tag (0: none), u8 valid, bytes value; kUnavailable while not in sync
  kForwarded,  // and the next: operations on keys of other shards (marked_register.h)
};

class HermesNode final : public MarkedNode {
 public:
  explicit HermesNode(const NodeEnv& env) : MarkedNode(env, "hermes") {}
  std::unique_ptr<ReplicationProtocol> make_worker(cluster::WorkerContext& ctx) override;
};

// A key's copy is Valid when unmarked, Invalid when marked (marked_register.h).
class HermesWorker final : public MarkedWorker {
 public:
  HermesWorker(HermesNode& node, cluster::WorkerContext& ctx) : MarkedWorker(node, ctx, kForwarded) {}
  rpc::Task<cluster::KvResult> get(std::string key) override;
  rpc::Task<WriteResult> write(std::string key, Rmw op) override;

 private:
  // How an INV to every other member ended.
  enum class Spread { kCommitted, kRefused, kUnanswered };

  // Installs (tag, value) Invalid unless this node holds a newer tag (reported); an equal tag stays as it is. With
  // `only_over`, only if the key holds that tag (0: absent) Valid: a coordinator's base.
  Installed install_invalid(const std::string& key, uint64_t tag, std::string_view value,
                            std::optional<uint64_t> only_over = std::nullopt) {
    return install_copy(key, tag, value, false, only_over);
  }
  // Makes `tag` Valid here if the key still holds it.
  void validate(const std::string& key, uint64_t tag) { unmark(key, tag); }
  // Waits until the key is Valid here (replaying it when it stays Invalid); kOk with its copy, or why not.
  rpc::Task<Code> wait_valid(const std::string& key, std::chrono::steady_clock::time_point deadline, Copy* out,
                             std::string* why);
  // INV to every other member until each acknowledged, one refused (the newest refusal in *newer), or `deadline`.
  // `unconditional`: the paper's writes (TestFaults::unconditional_writes), acknowledged whatever a member holds.
  rpc::Task<Spread> spread(const std::string& key, uint64_t tag, const std::string& value,
                           std::chrono::steady_clock::time_point deadline, Newer* newer, bool unconditional = false);
  void send_val(const std::string& key, uint64_t tag);
  rpc::Task<void> replay(std::string key, uint64_t tag, std::string value);
  rpc::Task<void> ask(std::string key, uint64_t tag);
  void serve_state(const rpc::Incoming& in);
  rpc::Task<WriteResult> update(const std::string& key, const Rmw& op);

  Code install(const std::string& key, uint64_t tag, std::string_view value) override {
    return install_invalid(key, tag, value).status;
  }
  Status start_marked() override;
  void serve_inv(const rpc::Incoming& in);
  void serve_val(const rpc::Incoming& in);

  std::unordered_set<std::string> replaying_;  // keys this worker replays now
  std::unordered_set<std::string> asking_;     // keys this worker asks the other members about now
};

}  // namespace rdx::replication::hermes
