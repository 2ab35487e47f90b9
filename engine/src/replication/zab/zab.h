#pragma once
// ZAB (Junqueira, Reed and Serafini, DSN'11) as Odyssey runs it: a leader orders every write of its shard and
// commits it once a majority of the members holds it; every member reads its own copy (sequentially consistent,
// not linearizable).
//  - The leader is the primary of the shard's view in cluster::Membership (view 0: its first member; while that is no
//    data member of the shard any more, the first one that is), learned from the election's announcement or from
//    heartbeats. Writes (every Rmw) are forwarded to it from any
//    node. Its writes of a key take turns (KeyTurns) and are evaluated on its committed value; the new (tag, value)
//    (tag: ts(base) + 1) is installed marked (not committed) at the leader and proposed to every other member (the
//    quorum register's store, stamped with the view: PROPOSE; each installs it marked and acknowledges); once a
//    majority holds it the leader unmarks it (commits), answers, and sends COMMIT to every other member, which
//    unmarks it. A follower's loss therefore costs no pause: a majority still acknowledges.
//  - A member takes proposals and COMMITs only of the view it runs, and none of a view older than one it voted in:
//    a leader of an older view (paused, or cut off) gets no majority, so it commits nothing once the members moved
//    on.
//  - When the members lose the leader, a majority of them elects another in a newer view (election.cc), which
//    establishes the view before it serves: it gathers a majority's copies, so it holds every committed write (what
//    they left marked it commits lazily, at the key's next read or write); its first write of each key then takes a
//    timestamp above every proposal an old leader left uncommitted anywhere (its tag floor). Each leader, view 0's
//    too, establishes so.
//  - Reads at any member: an unmarked copy is committed and answered locally through the worker's batched local
//    reads. A member's copy can lag the leader's (a proposal on its way, or not yet acknowledged), so reads are
//    sequentially consistent: a session sees its own writes and never goes back in a key's write order, but another
//    node may still read an older value. For that, a write forwarded by a follower is reported only once the
//    follower holds the version it created (and the one it saw), which the proposal ahead of the reply on the same
//    connection normally guarantees; otherwise the follower resolves the key at the leader first.
//  - A marked copy (a proposal whose COMMIT has not arrived, or a copy from recovery) is resolved at the leader
//    (RESOLVE): the leader, in the key's turn, commits its copy if it is still marked (proposes it again to a
//    majority) and answers its committed (tag, value), which the asker installs unmarked.
//  - A proposal the leader could not get a majority for stays marked at the leader; its client hears "may or may
//    not have taken effect", and the leader's next write or read of the key commits it first (it may have been
//    acknowledged by a majority that the leader did not hear from).
//  - Survives the loss of any minority of the members (Survives::kMinority): a follower's costs no pause; the
//    leader's stops the shard's writes (and reads of marked keys) until a new leader is established: with the
//    failure detector's timeout T, a lost connection or T of silence, then up to 2T per member ahead in the order
//    of candidates, one round of votes and the copies of a majority.
//  - A follower whose link to the leader broke (a lost connection, or a leader its failure detector suspected) may
//    have missed proposals, which nobody sends again: without more, it would read its old copy of those keys until
//    they are written again. Once the leader answers again, it catches up: it copies the leader's records (newer
//    tags install marked, so the next read of each resolves at the leader), and until that copy is done, a read of
//    a key it does not hold asks the leader too (the key may have been created meanwhile).
//  - The leader's own link to a follower can break while the follower's link to it stays up (each node connects to
//    the others: a restarted pod reaches the leader at once, while the leader's DNS still names the pod's old
//    address for seconds). The follower then sees nothing wrong, yet gets no proposal. So the leader's workers
//    watch their links too: once a link to a follower that broke is back, the worker tells the follower to catch up
//    (CATCH_UP).
//  - A restarted member recovers as the quorum register's do (quorum_recovery.cc), copying from every other member;
//    its copies are marked (the copies do not say whether they were committed), so its first read of each key
//    resolves it at the leader. A restarted leader so holds every write a majority acknowledged.
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "replication/marked_register.h"

namespace rdx::replication::zab {

std::unique_ptr<ReplicationNode> make_node(const NodeEnv& env);

enum Msg : uint16_t {
  // one-way, from the leader: bytes key, u64 view, u64 tag -> the receiver unmarks its copy if it holds that tag
  kCommit = kFirstProtocolMsg,
  // request, at the leader: bytes key -> kOk: u64 committed tag (0: never written), bytes value; kUnavailable while
  // not in sync or when no majority acknowledged the key's marked copy
  kResolve,
  kForwarded,  // and the next: operations on keys of other shards (marked_register.h)
  // request, from the leader: u64 view, bytes key, u64 tag, bytes value -> kOk once stored marked (or a newer tag
  // is); kAborted: the view is older than the one the receiver runs or voted in; kUnavailable: it is newer (the
  // receiver has not synced to it yet)
  kPropose = kForwarded + 2,
  // request, candidate to member (election.cc): u32 shard, u64 view, u16 deposed leader, u8 pre-vote -> kOk (the
  // vote, or for a pre-vote: would vote), kAborted (refused)
  kVote,
  // request, a new leader to every other data node (election.cc): u32 shard, u64 packed view -> kOk: u64 the highest
  // tag floor the receiver recorded, once it runs that view (it takes no proposal of an older one from then on);
  // kAborted when it runs another
  kNewView,
  // request, a leader establishing its view to the members of its shard: u32 shard, u64 view, u64 tag floor -> kOk
  // once recorded (the receiver runs that view, led by the sender); kAborted otherwise
  kFloor,
  // request (recovery, copy_extra): empty -> u64 the highest tag floor the receiver recorded
  kFloorSeen,
  // one-way, from the leader: u32 shard, u64 view -> the receiver, a follower of that view, catches up with it (the
  // leader's link to it was down: it may have missed proposals)
  kCatchUp,
};

class ZabNode final : public MarkedNode {
 public:
  explicit ZabNode(const NodeEnv& env) : MarkedNode(env, "zab") {
    env.membership.set_copy_again_on_new_view(false);  // a new leader reconciles the copies (election.cc)
  }
  std::unique_ptr<ReplicationProtocol> make_worker(cluster::WorkerContext& ctx) override;

  // The view this node leads and has established (election.cc: it gathered a majority's copies and recorded its tag
  // floor at a majority), and that floor: the lowest timestamp its writes of a key last written by another
  // leadership may take.
  bool established(uint64_t view) const { return established_.load(std::memory_order_acquire) == view + 1; }
  uint64_t tag_floor() const { return tag_floor_.load(std::memory_order_acquire); }
  void establish(uint64_t view, uint64_t floor) {
    tag_floor_.store(floor, std::memory_order_release);
    established_.store(view + 1, std::memory_order_release);
  }
  // The highest tag floor any leadership recorded here (or that recovery copied).
  uint64_t floor_seen() const { return floor_seen_.load(std::memory_order_acquire); }
  void see_floor(uint64_t floor) {
    uint64_t now = floor_seen_.load(std::memory_order_acquire);
    while (now < floor && !floor_seen_.compare_exchange_weak(now, floor, std::memory_order_acq_rel)) {
    }
  }
  // Proposals are checked and stored under it shared; a member answers a new view (kNewView) under it exclusive, so
  // no proposal of an older view that passed its check is still to be stored once the new leader copies from it.
  std::shared_mutex& view_gate() { return view_gate_; }

  // Catching up with the leader after a broken link (zab.h): asked by any worker, done by worker 0.
  void request_catch_up() {
    catching_up_.store(true, std::memory_order_release);
    catch_up_requested_.store(true, std::memory_order_release);
  }
  bool take_catch_up_request() { return catch_up_requested_.exchange(false, std::memory_order_acq_rel); }
  bool catching_up() const { return catching_up_.load(std::memory_order_acquire); }
  void caught_up() { catching_up_.store(false, std::memory_order_release); }

 private:
  std::atomic<uint64_t> established_{0};  // the established view + 1 (0: none)
  std::atomic<uint64_t> tag_floor_{0};
  std::atomic<uint64_t> floor_seen_{0};
  std::shared_mutex view_gate_;
  std::atomic<bool> catching_up_{false};  // reads of keys absent here ask the leader
  std::atomic<bool> catch_up_requested_{false};
};

class ZabWorker final : public MarkedWorker {
 public:
  ZabWorker(ZabNode& node, cluster::WorkerContext& ctx) : MarkedWorker(node, ctx, kForwarded), zab_(node) {
    find_leaders();
  }
  rpc::Task<cluster::KvResult> get(std::string key) override;
  rpc::Task<WriteResult> write(std::string key, Rmw op) override;
  void on_topology_change() override { find_leaders(); }
  void on_membership_change() override { find_leaders(); }  // (a new view)
  void on_peer_lost(uint16_t node) override;

 private:
  // The leader of each shard and the view it leads, from the membership's views and the topology: no work per
  // operation.
  void find_leaders();
  uint16_t leader_of(std::string_view key) const { return leaders_[ctx_.topology().shard_of_key(key)].primary; }
  uint64_t view_of(std::string_view key) const { return leaders_[ctx_.topology().shard_of_key(key)].view; }
  bool leads(std::string_view key) const { return leader_of(key) == ctx_.self(); }

  rpc::Task<WriteResult> write_at_leader(const std::string& key, const Rmw& op);
  // The timestamp of the leader's next write of a key whose base has tag `base` (election.cc).
  uint64_t next_ts(uint64_t base) const;
  // Whether this node leads `key`'s shard in an established view, waiting a while for its establishment.
  rpc::Task<bool> leader_ready(std::string_view key);
  // At the leader: proposes (tag, value), which it holds marked, to every other member and commits it once a
  // majority holds it (false, with `why`, when no majority acknowledged: it stays marked).
  rpc::Task<bool> commit(const std::string& key, uint64_t tag, const std::string& value, std::string* why);
  // The key's committed copy at the leader, committing a marked one first (in the key's turn).
  rpc::Task<cluster::KvResult> resolve_here(const std::string& key);
  // The same, asked of the leader; the answer is installed here unmarked.
  rpc::Task<cluster::KvResult> resolve_at_leader(const std::string& key);

  // The leader of this node's own shard and its view, as find_leaders saw them (nullptr: this node is no data
  // member). Read it before the next co_await.
  const cluster::ShardView* own_view() const;
  // The leader of this node's own shard when this node follows it (nullopt: it leads, or is no data member).
  std::optional<uint16_t> own_leader() const;
  // Every tick: a follower whose link to its leader broke asks for a catch-up once the leader answers again; a
  // leader tells a follower whose link from it broke to catch up once that link is back (watch_links).
  void tick_protocol() override;
  void watch_links();
  void serve_catch_up(const rpc::Incoming& in);
  rpc::Task<void> catch_up(uint16_t leader);

  // election.cc: a new leader when the shard's members lose theirs; its establishment before it serves.
  rpc::Task<void> elect(uint16_t deposed);
  rpc::Task<bool> campaign(uint32_t shard, uint64_t view, uint16_t deposed);
  rpc::Task<void> establish();
  rpc::Task<bool> establish_view(uint32_t shard, cluster::ShardView v);
  void serve_vote(const rpc::Incoming& in);
  void serve_new_view(const rpc::Incoming& in);
  void serve_floor(const rpc::Incoming& in);
  void serve_floor_seen(const rpc::Incoming& in);
  rpc::Task<bool> copy_extra(uint16_t source) override;  // the floor the source has seen
  // A fence this node's vote set goes (the campaign was lost, or its view never came): the old leader's proposals
  // are taken again, and those refused meanwhile are caught up with.
  void lift_fence(uint32_t shard, uint64_t view);
  bool serves_copies() const override;

  Code install(const std::string& key, uint64_t tag, std::string_view value) override;
  StoreRequest store_request(const std::string& key, uint64_t tag, const std::string& value) const override;
  bool takes_register_writes() const override { return false; }  // (proposals carry their view)
  // Why a member refuses a message of `view` for `key` from `sender` (kOk: it takes it); see kPropose.
  Code check_view(std::string_view key, uint64_t view, uint16_t sender);
  Status start_marked() override;
  void serve_propose(const rpc::Incoming& in);
  void serve_commit(const rpc::Incoming& in);
  void serve_resolve(const rpc::Incoming& in);

  ZabNode& zab_;
  std::vector<cluster::ShardView> leaders_;     // by shard: the leader and the view it leads
  bool catching_up_here_ = false;               // worker 0 runs catch_up
  bool electing_ = false;                       // worker 0 runs elect
  bool establishing_ = false;                   // worker 0 runs establish
  cluster::ShardView followed_{0, UINT16_MAX};  // the leader of this node's shard (and its view) at find_leaders
  // By node: this worker's link to that member of its shard (never up yet, up, or broken since it was up: when this
  // node leads, the member may have missed its proposals; when the member leads, this node may have; watch_links).
  enum class Link : uint8_t { kNeverUp, kUp, kBroke };
  std::vector<Link> links_;
};

}  // namespace rdx::replication::zab
