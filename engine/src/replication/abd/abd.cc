// ABD's operations (coordinator side) and its replicas' handlers. See abd.h.
#include "replication/abd/abd.h"

#include <spdlog/spdlog.h>

#include <random>

#include "replication/quorum.h"
#include "rpc/codec.h"

namespace rdx::replication::abd {

using cluster::KvResult;
using rpc::Task;
using Clock = std::chrono::steady_clock;

std::unique_ptr<ReplicationNode> make_node(const NodeEnv& env) { return std::make_unique<AbdNode>(env); }

AbdNode::AbdNode(const NodeEnv& env)
    : env_(env),
      incarnation_(std::random_device{}() | (uint64_t{std::random_device{}()} << 32)),
      started_(Clock::now()) {}

std::unique_ptr<ReplicationProtocol> AbdNode::make_worker(cluster::WorkerContext& ctx) {
  return std::make_unique<AbdWorker>(*this, ctx);
}

uint64_t AbdNode::next_ts(uint64_t h, uint64_t highest) {
  std::atomic<uint64_t>& issued = issued_[(h ^ (h >> 29)) % issued_.size()];
  uint64_t cur = issued.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t next = std::max(cur, highest) + 1;
    if (issued.compare_exchange_weak(cur, next, std::memory_order_relaxed)) return next;
  }
}

std::string AbdNode::recovery_state() const {
  std::lock_guard<std::mutex> lk(state_mu_);
  return state_;
}

void AbdNode::set_recovery_state(std::string s) {
  std::lock_guard<std::mutex> lk(state_mu_);
  state_ = std::move(s);
}

namespace {

// What ABD can do with an Rmw: a plain put or a plain delete (no condition, no old value returned).
bool plain_write(const Rmw& op) {
  return op.when == Rmw::When::kAlways && !op.return_old &&
         (op.kind == Rmw::Kind::kPut || op.kind == Rmw::Kind::kDelete);
}

std::string_view rmw_name(const Rmw& op) {
  if (op.return_old) return "a write that returns the old value (GETSET, SET ... GET, GETDEL)";
  switch (op.when) {
    case Rmw::When::kIfAbsent:
      return "a write conditional on the key's absence (SETNX, SET NX)";
    case Rmw::When::kIfPresent:
      return "a write conditional on the key's presence (SET XX)";
    case Rmw::When::kIfEquals:
      return "a compare-and-set";
    case Rmw::When::kAlways:
      break;
  }
  return op.kind == Rmw::Kind::kAdd ? "an add (INCR, INCRBY, DECR, DECRBY)" : "an append (APPEND)";
}

}  // namespace

Status AbdWorker::start() {
  auto& rpc = ctx_.rpc();
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kRead), [this](const rpc::Incoming& in) { serve_read(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kWrite), [this](const rpc::Incoming& in) { serve_write(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kStatus), [this](const rpc::Incoming& in) { serve_status(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kScan), [this](const rpc::Incoming& in) { serve_scan(in); }));
  return rpc.on(msgs_.at(kFresh), [this](const rpc::Incoming& in) { serve_fresh(in); });
}

// Calls to a member the failure detector gave up on fail now instead of at their timeout (they no longer count).
void AbdWorker::on_peer_lost(uint16_t node) {
  if (auto conn = ctx_.peer(node)) ctx_.rpc().abandon_calls(*conn);
}

// Nothing to hand over on SIGTERM: every member serves every key.
void AbdWorker::tick() {
  expire_copies();
  auto& m = ctx_.membership();
  if (ctx_.worker_index() == 0 && m.handover() == cluster::Membership::Handover::kRequested)
    m.set_handover(cluster::Membership::Handover::kDone);
}

AbdWorker::Members AbdWorker::members_of(std::string_view key) const {
  const cluster::Topology& t = ctx_.topology();
  Members m;
  size_t n = 0;
  for (uint16_t id : t.shards[t.shard_of_key(key)].members) {
    if (t.nodes[id].role != cluster::Role::kData) continue;
    ++n;
    if (id == ctx_.self())
      m.self = true;
    else
      m.others.push_back(id);
  }
  m.majority = n / 2 + 1;
  return m;
}

// ---------------------------------------------------------------------------------------------------------------
// Coordinator.

Task<AbdWorker::Quorum> AbdWorker::query(const std::string& key, bool tag_only) {
  Quorum q;
  q.members = members_of(key);
  const Members& m = q.members;
  std::vector<Replica> answers;
  const bool self = m.self && ctx_.membership().in_sync();
  if (self) answers.push_back(read_local(key));
  QuorumCall call;
  call.nodes = m.others;
  call.type = msgs_.at(kRead);
  rpc::Writer w;
  w.bytes(key).put(static_cast<uint8_t>(tag_only ? 1 : 0));
  call.payload = w.data();
  call.needed = m.majority - (self ? 1 : 0);
  QuorumResult got = co_await quorum_call(ctx_, std::move(call));
  for (const QuorumReply& r : got.replies) {
    if (r.response.status != Code::kOk) continue;
    rpc::Reader rd(r.response.payload);
    Replica a;
    a.tag = rd.get<uint64_t>();
    if (!tag_only && a.tag != 0 && !tag_deleted(a.tag)) a.value = std::string(rd.bytes(store::kMaxValueBytes));
    if (!rd.done()) continue;  // malformed: not counted
    answers.push_back(std::move(a));
  }
  if (answers.size() < m.majority) {
    q.why = fmt::format("abd: {} of the {} members of the key's shard answered (a majority, {}, must)", answers.size(),
                        m.others.size() + (m.self ? 1 : 0), m.majority);
    co_return q;
  }
  q.answered = true;
  for (Replica& a : answers)
    if (a.tag > q.highest.tag) q.highest = std::move(a);
  for (const Replica& a : answers) q.holders += a.tag == q.highest.tag ? 1 : 0;
  co_return q;
}

Task<bool> AbdWorker::store(const std::string& key, const Members& m, uint64_t tag, const std::string& value,
                            std::string* why) {
  size_t stored = 0;
  if (m.self) {
    const Code c = install(key, tag, value);
    if (c == Code::kOk) ++stored;
  }
  QuorumCall call;
  call.nodes = m.others;
  call.type = msgs_.at(kWrite);
  rpc::Writer w;
  w.bytes(key).put(tag).bytes(value);
  call.payload = w.data();
  call.needed = stored >= m.majority ? 0 : m.majority - stored;
  // The planted fault: report the write once this node stored it and send it to the others 20 ms later (the
  // conformance suite and the multi-process tests show that the checkers catch the stale reads this allows).
  if (node_.env().faults.ack_before_replication && stored > 0) {
    rpc::spawn([](cluster::WorkerContext& ctx, QuorumCall c) -> Task<void> {
      co_await ctx.sched().sleep_for(std::chrono::milliseconds(20));
      (void)co_await quorum_call(ctx, std::move(c));
    }(ctx_, std::move(call)));
    co_return true;
  }
  QuorumResult got = co_await quorum_call(ctx_, std::move(call));
  stored += got.counted;
  if (stored < m.majority) {
    Code first = Code::kOk;
    for (const QuorumReply& r : got.replies)
      if (r.response.status != Code::kOk && first == Code::kOk) first = r.response.status;
    *why = fmt::format(
        "abd: {} of the {} members of the key's shard stored the write (a majority, {}, must; first "
        "failure: {})",
        stored, m.others.size() + (m.self ? 1 : 0), m.majority, code_name(first));
    co_return false;
  }
  co_return true;
}

Task<KvResult> AbdWorker::get(std::string key) {
  if (key.empty()) co_return KvResult::failed(Code::kInvalidArgument, "abd: empty keys are not supported");
  const auto begun = Clock::now();
  Quorum q = co_await query(key, false);
  if (!q.answered) co_return KvResult::failed(Code::kUnavailable, q.why);
  // Fewer than a majority hold the newest tag: write it back first, or a later read could miss it.
  if (q.holders < q.members.majority) {
    const bool stored = co_await store(key, q.members, q.highest.tag, q.highest.value, &q.why);
    if (!stored) co_return KvResult::failed(Code::kUnavailable, q.why);
  }
  if (Clock::now() - begun > kOpDeadline)
    co_return KvResult::failed(Code::kUnavailable,
                               "abd: the read outlived its deadline (a member restarted meanwhile may not hold what it "
                               "answered)");
  if (q.highest.tag == 0 || tag_deleted(q.highest.tag)) co_return KvResult::failed(Code::kNotFound, {});
  KvResult out;
  out.version = q.highest.tag;
  out.value = std::move(q.highest.value);
  co_return out;
}

Task<WriteResult> AbdWorker::write(std::string key, Rmw op) {
  if (!plain_write(op)) {
    co_return WriteResult::failed(
        Code::kUnsupported, fmt::format("replication protocol 'abd' replicates plain reads and writes only: {} needs "
                                        "one agreed order of the key's writes (nothing was written)",
                                        rmw_name(op)));
  }
  if (key.empty()) co_return WriteResult::failed(Code::kInvalidArgument, "abd: empty keys are not supported");
  if (op.value.size() > store::kMaxValueBytes)
    co_return WriteResult::failed(Code::kInvalidArgument, "value over the size limit");
  const auto begun = Clock::now();
  Quorum q = co_await query(key, true);
  if (!q.answered) co_return WriteResult::failed(Code::kUnavailable, q.why);
  const uint64_t ts = node_.next_ts(std::hash<std::string>{}(key), tag_ts(q.highest.tag));
  if (ts > kTagMaxTs)
    co_return WriteResult::failed(Code::kResourceExhausted, "abd: the key's timestamps are exhausted");
  const bool deleting = op.kind == Rmw::Kind::kDelete;
  const uint64_t tag = pack_tag(ts, ctx_.self(), deleting);
  const std::string value = deleting ? std::string() : op.value;  // (no temporary across the co_await)
  const bool stored = co_await store(key, q.members, tag, value, &q.why);
  if (!stored) {
    // Some members may hold it: a later read may return it (its outcome is unknown).
    co_return WriteResult::failed(Code::kTimeout, q.why + "; the write may or may not have taken effect");
  }
  if (Clock::now() - begun > kOpDeadline)
    co_return WriteResult::failed(Code::kTimeout,
                                  "abd: the write outlived its deadline; it may or may not have taken "
                                  "effect");
  WriteResult r;
  r.applied = true;
  r.existed = q.highest.tag != 0 && !tag_deleted(q.highest.tag);
  r.prior_version = q.highest.tag;
  r.prior_is_predecessor = false;
  r.version = tag;
  co_return r;
}

// ---------------------------------------------------------------------------------------------------------------
// Replica.

AbdWorker::Replica AbdWorker::read_local(const std::string& key) {
  Replica r;
  if (ctx_.table().get(ctx_.session(), key, &r.value, &r.tag) != store::OpStatus::kOk) r = Replica{};
  if (tag_deleted(r.tag)) r.value.clear();
  return r;
}

Code AbdWorker::install(const std::string& key, uint64_t tag, const std::string& value) {
  switch (ctx_.table().put(ctx_.session(), key, value, tag)) {
    case store::OpStatus::kOk:
    case store::OpStatus::kStale:  // a newer tag is there: what the write promises holds
      return Code::kOk;
    case store::OpStatus::kNoMemory:
      return Code::kResourceExhausted;
    default:
      return Code::kInvalidArgument;
  }
}

bool AbdWorker::from_data_node(const rpc::Incoming& in) const {
  const cluster::Topology& t = ctx_.topology();
  return in.peer_node < t.nodes.size() && t.nodes[in.peer_node].role == cluster::Role::kData;
}

bool AbdWorker::from_member(const rpc::Incoming& in) const {
  const cluster::Topology& t = ctx_.topology();
  return from_data_node(in) && t.nodes[in.peer_node].shard == t.nodes[ctx_.self()].shard;
}

void AbdWorker::serve_read(const rpc::Incoming& in) {
  rpc::Reader rd(in.payload);
  const std::string key(rd.bytes(cluster::kMaxKeyBytes));
  const auto tag_only = rd.get<uint8_t>();
  if (!rd.done() || key.empty() || tag_only > 1 || !from_data_node(in) ||
      !cluster::is_replica_of(ctx_.topology(), ctx_.self(), key))
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  if (!ctx_.membership().in_sync()) return ctx_.rpc().respond(in.reply_to(), Code::kUnavailable);
  const Replica r = read_local(key);
  rpc::Writer w;
  w.put(r.tag);
  if (tag_only == 0 && r.tag != 0 && !tag_deleted(r.tag)) w.bytes(r.value);
  ctx_.rpc().respond(in.reply_to(), Code::kOk, w.span());
}

// Stored even before this node is in sync (recovery): a versioned put only ever raises the key's tag, so the copy
// recovery merges in later cannot undo it.
void AbdWorker::serve_write(const rpc::Incoming& in) {
  rpc::Reader rd(in.payload);
  const std::string key(rd.bytes(cluster::kMaxKeyBytes));
  const auto tag = rd.get<uint64_t>();
  const std::string_view value = rd.bytes(store::kMaxValueBytes);
  const cluster::Topology& t = ctx_.topology();
  const uint16_t writer = static_cast<uint16_t>((tag >> 1) & 0x3ff);
  const bool valid = rd.done() && !key.empty() && from_data_node(in) && tag_ts(tag) != 0 && tag <= store::kMaxVersion &&
                     writer < t.nodes.size() && (!tag_deleted(tag) || value.empty()) &&
                     cluster::is_replica_of(t, ctx_.self(), key);
  if (!valid) return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  ctx_.rpc().respond(in.reply_to(), install(key, tag, std::string(value)));
}

}  // namespace rdx::replication::abd
