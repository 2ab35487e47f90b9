#pragma once
// Classic Paxos per key (Odyssey's CP, after Gavrielatos et al., "Extending Classic Paxos for High-performance
// Read-Modify-Write Registers"): leaderless, any data node coordinates any key's operation, every write is decided by
// consensus on the key's next slot, so every read-modify-write (INCR, SETNX, CAS, GETSET, APPEND...) is one
// operation, evaluated on the value it comes right after.
//  - Slots: a key's writes are slots 1, 2, ...; slot s's value commits with a tag of timestamp s (quorum_register.h),
//    so replicas keep the newest committed slot and reads are the register's (ABD reads, as the seed's CP does).
//  - A write (propose): the proposer knows the key's newest committed value (its copy, or what the answers taught
//    it), slot s - 1. Phase 1: prepare(s, ballot) to every member, carrying that value (each acceptor installs it
//    first: it takes part in slot s only once it committed s - 1, acceptor.h). A majority of promises makes the
//    proposer the slot's leader for its ballot. If one of them accepted a value in slot s, that value may be decided:
//    the proposer proposes it (helping its operation) and tries its own in the next slot. Else it evaluates its Rmw
//    on slot s - 1's value. Phase 2: accept(s, ballot, value); a majority decides it. Phase 3: commit (the register's
//    store) at a majority, then the client hears. Three broadcast rounds, as in the seed.
//  - Conflicts: a higher promised ballot (nack) makes the proposer back off (a random wait, growing with the
//    conflicts, in units of its own round time) and try again with a higher ballot; an answer that slot s is
//    committed teaches it the newer value and it moves on to the next slot at once. A node's operations on one key
//    take turns (KeyTurns), so only the nodes compete for a slot; a run of plain SETs queued behind a write is
//    written once with the last value (key_turns.h). Fairness: a ballot carries, as its priority, how many slots its
//    operation lost already, so an operation that keeps losing (a node that is slower, or learns of commits last,
//    would lose every race for a hot key's next slot) soon preempts the fresh ones; a proposer nacked by a higher
//    priority lets that one finish (it waits two rounds) and climbs one priority, so a proposer that died holding a
//    high one only delays the key.
//  - Whether a value that another proposer completed was this operation's (it may have adopted it): every value
//    carries its operation's RmwId; committing it registers the id (acceptor.h). Prepares ask whether the proposer's
//    id is registered; a majority that does not have it, once the key's slot has moved past the one this operation
//    proposed in, proves it was not decided there (see the invariant in acceptor.h).
//  - An Rmw that writes nothing on the slot's base (a condition that fails, a refused INCR, a DEL of an absent key)
//    cannot answer from phase 1 alone (a higher ballot may be deciding the slot meanwhile): it reads through the
//    register and answers from what the read returned, or proposes again when that value makes it write.
//  - Deadlines: a round (prepare, accept, commit, read) that has not gathered its majority kOpDeadline after it
//    began counts nothing it gathered (a restarted member's recovery waits that long, quorum_register.h); the
//    operation goes on with another round until kOpBudget, then gives up (a contended key may take many rounds).
//  - Survives any minority of a shard's members down, with no election and no pause (every round needs only a
//    majority). A restarted member copies the records and then every other member's open slots (the higher promise
//    and the highest accepted value of each) and registrations, after waiting out every operation that may count its
//    previous life's answers (quorum_recovery.cc).
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "replication/key_turns.h"
#include "replication/paxos/acceptor.h"
#include "replication/quorum_register.h"

namespace rdx::replication::paxos {

std::unique_ptr<ReplicationNode> make_node(const NodeEnv& env);

enum Msg : uint16_t {
  // request: bytes key, u64 slot, u64 ballot, u64 base tag (0: none, slot 1), bytes base value, u64 lane, u64 seq
  //   -> kOk: a reply (below); kUnavailable while the receiver is not in sync
  kPrepare = kFirstProtocolMsg,
  // request: bytes key, u64 slot, u64 ballot, u64 tag, bytes value -> kOk: a reply; kUnavailable as above
  kAccept,
  // request (recovery): u32 first stripe -> u32 next stripe (Acceptor::kStripes: done), u32 count, count x (bytes
  //   key, u64 slot, u64 promised, u64 accepted ballot, u64 accepted tag, bytes accepted value), u32 count, count x
  //   (u64 lane, u64 seq); kUnavailable while the receiver is not in sync
  kOpenSlots,
};
// A reply: u8 verdict, then kPromised: u64 accepted ballot [u64 tag, bytes value: ballot != 0]; kNack: u64 promised
// ballot; kCommitted: u64 tag, bytes value; kAccepted, kRegistered, kBehind: nothing.

// The lanes of one worker's operations (acceptor.h, RmwId).
class Lanes {
 public:
  static constexpr size_t kMaxLanes = 1 << 16;
  Lanes(uint16_t node, uint16_t worker) : base_(uint64_t{node} << 32 | uint64_t{worker} << 16) {}
  // The next id on a free lane; none when kMaxLanes operations run.
  std::optional<RmwId> take();
  void give_back(RmwId id) { free_.push_back(static_cast<uint32_t>(id.lane & 0xffff)); }

 private:
  uint64_t base_;
  std::vector<uint64_t> next_seq_;  // by lane index
  std::vector<uint32_t> free_;
};

// How long a write may take in all (its rounds are bounded by kOpDeadline each) before it gives up.
inline constexpr auto kOpBudget = std::chrono::seconds(5);

class PaxosNode final : public QuorumNode {
 public:
  explicit PaxosNode(const NodeEnv& env) : QuorumNode(env, "paxos") {}
  std::unique_ptr<ReplicationProtocol> make_worker(cluster::WorkerContext& ctx) override;
  Acceptor& acceptor() { return acceptor_; }
  KeyTickets& key_tickets() { return key_tickets_; }

 private:
  Acceptor acceptor_;
  KeyTickets key_tickets_;
};

class PaxosWorker final : public QuorumWorker {
 public:
  PaxosWorker(PaxosNode& node, cluster::WorkerContext& ctx);
  rpc::Task<WriteResult> write(std::string key, Rmw op) override;

 private:
  // The newest committed value of a key this proposer knows (tag 0: none).
  struct Known {
    uint64_t tag = 0;
    std::string blob;
  };
  // This operation's value, sent in an accept of `slot`: the only slot it may be decided in, and the result the
  // client hears then.
  struct Proposed {
    uint64_t slot = 0;
    Accepted value;  // (its tag and blob)
    WriteResult result;
  };
  // What the answers of one round said (this node's own acceptor's included).
  struct Round {
    size_t replies = 0;
    size_t promises = 0;
    size_t accepts = 0;
    bool registered = false;
    Accepted adopt;             // prepare: the accepted value with the highest ballot among the promises
    Known newest;               // the newest committed value an answer reported
    uint64_t highest_nack = 0;  // the highest ballot promised to another proposer
    void tally(const AcceptorReply& a);
  };

  // Runs Paxos for the operation until it is decided and committed at a majority, or fails.
  rpc::Task<WriteResult> propose(const std::string& key, const Rmw& op);
  rpc::Task<Round> prepare_round(const std::string& key, const Members& m, uint64_t slot, uint64_t ballot,
                                 const Known& base, RmwId id);
  rpc::Task<Round> accept_round(const std::string& key, const Members& m, uint64_t slot, uint64_t ballot,
                                const Accepted& value);
  rpc::Task<Round> ask(const Members& m, Msg msg, std::string payload, std::optional<AcceptorReply> own);
  // An Rmw that writes nothing on the slot's base: answered from a read (nullopt: the read's value makes it write;
  // `known` then holds that value).
  rpc::Task<std::optional<WriteResult>> answer_without_writing(const std::string& key, const Rmw& op, Known* known);
  // Takes a newer committed value the answers reported (installed here when this node is a member).
  bool learn(const std::string& key, const Members& m, Round& r, Known* known);
  // The operation's value is decided: committed at a majority (a commit round within kOpDeadline), then answered.
  rpc::Task<WriteResult> commit_mine(const std::string& key, const Members& m, Proposed mine,
                                     std::chrono::steady_clock::time_point begun);
  rpc::Task<void> lost_to(uint64_t nacked, uint64_t* priority, int conflicts,
                          std::chrono::steady_clock::duration round);
  rpc::Task<void> back_off(int conflicts, std::chrono::steady_clock::duration round);

  Code install(const std::string& key, uint64_t tag, std::string_view value) override;
  std::string_view client_value(std::string_view stored) const override { return blob_value(stored); }
  bool valid_blob(uint64_t tag, std::string_view stored) const override;
  Status start_protocol() override;
  rpc::Task<bool> copy_extra(uint16_t source) override;  // recovery.cc

  void serve_prepare(const rpc::Incoming& in);
  void serve_accept(const rpc::Incoming& in);
  void serve_open_slots(const rpc::Incoming& in);  // recovery.cc

  PaxosNode& paxos_;
  KeyTurns turns_;
  Lanes lanes_;
  uint64_t round_ = 0;  // the highest ballot round this worker used or saw
  std::mt19937_64 rng_;
};

}  // namespace rdx::replication::paxos
