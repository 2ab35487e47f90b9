#pragma once
// CRAQ (Terrace and Freedman, USENIX ATC'09), as Odyssey runs it: chain replication with apportioned queries.
//  - A shard's members form a chain in topology order: the head (first) orders every write of the shard's keys, the
//    tail (last) commits them. Each member holds per key the quorum register's (tag, value) record, marked dirty
//    while a write of it is not known committed (marked_register.h).
//  - Write (every Rmw), at the head (forwarded there from any node): the head's writes of a key take turns
//    (KeyTurns); a dirty copy is first pushed down the chain again (below); the Rmw is evaluated on the clean value;
//    the new tag (ts(base) + 1, head) is installed dirty and propagated: each member installs it dirty and passes it
//    to its successor; the tail installs it clean (committed) and answers; each member on the way back marks it
//    clean before it answers its predecessor; the head answers the client once its successor did.
//  - Read, at any member: a clean copy is the newest committed one (a newer write reaches every member dirty before
//    the tail can commit it), so it is answered locally, through the worker's batched local reads. A dirty copy asks
//    the tail which tag it committed (the apportioned query, kVersion): the same tag gives the local value, clean
//    here from then on; another the tail's value, which it sends along. The tail's copy is committed: it answers it.
//  - A member whose successor did not answer keeps the write dirty, and its client hears "may or may not have taken
//    effect"; the head's next write of the key pushes it again first. Installs are idempotent by tag (an equal or
//    older tag changes nothing), so a write commits once however often it is pushed.
//  - Survives no member's loss: the chain needs every member (chain repair, which drops a lost member from the chain
//    and lets its neighbours close the gap, is not implemented), so while a member is down its shard's writes fail
//    (kTimeout) and reads of dirty keys fail where they need the tail. A restarted member recovers as the quorum
//    register's members do (quorum_recovery.cc: after every operation of its previous life has finished), copying
//    from one neighbour only: its predecessor, which holds every write any member after it holds (the head: its
//    successor, which holds every write that may have committed). Copies arrive dirty, except at the tail: there
//    they are committed, every member before it holding them too.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "replication/marked_register.h"

namespace rdx::replication::craq {

std::unique_ptr<ReplicationNode> make_node(const NodeEnv& env);

enum Msg : uint16_t {
  // request, from the predecessor in the chain: bytes key, u64 tag, bytes value -> kOk once committed: u64 tag the
  // receiver holds, [bytes value: when that is not the tag sent] (newer: the sender takes it); kUnavailable while not
  // in sync; a failure when the chain after the receiver did not answer
  kPropagate = kFirstProtocolMsg,
  // request, at the tail: bytes key, u64 tag (the asker's dirty one) -> kOk: u64 committed tag (0: none), [bytes
  // value: when it is not the tag asked]; kUnavailable while not in sync
  kVersion,
  kForwarded,  // and the next: operations on keys of other shards (marked_register.h)
};

class CraqNode final : public MarkedNode {
 public:
  explicit CraqNode(const NodeEnv& env) : MarkedNode(env, "craq") {}
  std::unique_ptr<ReplicationProtocol> make_worker(cluster::WorkerContext& ctx) override;
};

class CraqWorker final : public MarkedWorker {
 public:
  CraqWorker(CraqNode& node, cluster::WorkerContext& ctx) : MarkedWorker(node, ctx, kForwarded) { make_chains(); }
  rpc::Task<cluster::KvResult> get(std::string key) override;
  rpc::Task<WriteResult> write(std::string key, Rmw op) override;
  void on_topology_change() override { make_chains(); }

 private:
  // The chain of a shard: its data members in topology order.
  struct Chain {
    std::vector<uint16_t> nodes;
    size_t self = SIZE_MAX;  // this node's position (SIZE_MAX: not a member)
    uint16_t head() const { return nodes.front(); }
    uint16_t tail() const { return nodes.back(); }
    bool member() const { return self != SIZE_MAX; }
    bool is_head() const { return self == 0; }
    bool is_tail() const { return self + 1 == nodes.size(); }
  };
  // The chains of every shard, from the topology (at start, and when an epoch changes it): no work per operation.
  void make_chains();
  // (A reference into chains_: read it before the next co_await, which may see a new epoch.)
  const Chain& chain_of(std::string_view key) const { return chains_[ctx_.topology().shard_of_key(key)]; }

  rpc::Task<WriteResult> write_at_head(const std::string& key, const Rmw& op);
  // Pushes (tag, value), which this node holds, down the key's chain until the tail committed it (then it is clean
  // here), or `deadline`. A successor holding a newer tag hands it back: installed here (dirty), and pushed in turn.
  rpc::Task<Code> push(const std::string& key, uint64_t tag, std::string value,
                       std::chrono::steady_clock::time_point deadline, std::string* why);
  // A dirty copy: the committed (tag, value) of `tail`, the tail of its chain.
  rpc::Task<cluster::KvResult> ask_tail(const std::string& key, const Copy& dirty, uint16_t tail);
  static void encode_held(rpc::Writer& w, uint64_t sent, const Copy& held);

  Code install(const std::string& key, uint64_t tag, std::string_view value) override;
  std::vector<uint16_t> copy_sources(std::vector<uint16_t> others) const override;
  Status start_marked() override;
  void serve_propagate(const rpc::Incoming& in);
  void serve_version(const rpc::Incoming& in);

  std::vector<Chain> chains_;  // by shard
};

}  // namespace rdx::replication::craq
