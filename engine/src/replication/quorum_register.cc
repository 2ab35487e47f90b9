// The quorum register's reads (coordinator side) and its replicas' handlers. See quorum_register.h.
#include "replication/quorum_register.h"

#include <spdlog/spdlog.h>

#include <random>

#include "replication/quorum.h"
#include "rpc/codec.h"

namespace rdx::replication {

using cluster::KvResult;
using rpc::Task;
using Clock = std::chrono::steady_clock;

QuorumNode::QuorumNode(const NodeEnv& env, std::string_view protocol)
    : env_(env),
      protocol_(protocol),
      incarnation_(std::random_device{}() | (uint64_t{std::random_device{}()} << 32)),
      started_(Clock::now()) {}

std::string QuorumNode::recovery_state() const {
  std::lock_guard<std::mutex> lk(state_mu_);
  return state_;
}

void QuorumNode::set_recovery_state(std::string s) {
  std::lock_guard<std::mutex> lk(state_mu_);
  state_ = std::move(s);
}

Status QuorumWorker::start() {
  auto& rpc = ctx_.rpc();
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kRegRead), [this](const rpc::Incoming& in) { serve_read(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kRegWrite), [this](const rpc::Incoming& in) { serve_write(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kRegStatus), [this](const rpc::Incoming& in) { serve_status(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kRegScan), [this](const rpc::Incoming& in) { serve_scan(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kRegFresh), [this](const rpc::Incoming& in) { serve_fresh(in); }));
  return start_protocol();
}

// Calls to a member the failure detector gave up on fail now instead of at their timeout (they no longer count).
void QuorumWorker::on_peer_lost(uint16_t node) {
  if (auto conn = ctx_.peer(node)) ctx_.rpc().abandon_calls(*conn);
}

// Nothing to hand over on SIGTERM: every member serves every key.
void QuorumWorker::tick() {
  copies_.expire(std::chrono::seconds(60));
  auto& m = ctx_.membership();
  if (ctx_.worker_index() == 0 && m.handover() == cluster::Membership::Handover::kRequested)
    m.set_handover(cluster::Membership::Handover::kDone);
  tick_protocol();
}

QuorumWorker::Members QuorumWorker::members_of(std::string_view key) const {
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

Task<QuorumWorker::Quorum> QuorumWorker::query(const std::string& key, bool tag_only) {
  Quorum q;
  q.members = members_of(key);
  const Members& m = q.members;
  std::vector<Replica> answers;
  const bool self = m.self && ctx_.membership().in_sync();
  if (self) answers.push_back(read_local(key));
  QuorumCall call;
  call.nodes = m.others;
  call.type = msgs_.at(kRegRead);
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
    if (!tag_only && a.tag != 0) a.value = std::string(rd.bytes(store::kMaxValueBytes));
    if (!rd.done() || (!tag_only && a.tag != 0 && !valid_blob(a.tag, a.value))) continue;  // malformed: not counted
    answers.push_back(std::move(a));
  }
  if (answers.size() < m.majority) {
    q.why = fmt::format("{}: {} of the {} members of the key's shard answered (a majority, {}, must)", protocol(),
                        answers.size(), m.count(), m.majority);
    co_return q;
  }
  q.answered = true;
  for (Replica& a : answers)
    if (a.tag > q.highest.tag) q.highest = std::move(a);
  for (const Replica& a : answers) q.holders += a.tag == q.highest.tag ? 1 : 0;
  co_return q;
}

Task<bool> QuorumWorker::store(const std::string& key, const Members& m, uint64_t tag, const std::string& value,
                               std::string* why) {
  size_t stored = 0;
  if (m.self && install(key, tag, value) == Code::kOk) ++stored;
  QuorumCall call;
  call.nodes = m.others;
  StoreRequest req = store_request(key, tag, value);
  call.type = req.type;
  call.payload = std::move(req.payload);
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
        "{}: {} of the {} members of the key's shard stored the write (a majority, {}, must; first failure: {})",
        protocol(), stored, m.count(), m.majority, code_name(first));
    co_return false;
  }
  co_return true;
}

QuorumWorker::StoreRequest QuorumWorker::store_request(const std::string& key, uint64_t tag,
                                                       const std::string& value) const {
  rpc::Writer w;
  append_write(w, key, tag, value);
  return StoreRequest{msgs_.at(kRegWrite), w.data()};
}

void QuorumWorker::append_write(rpc::Writer& w, const std::string& key, uint64_t tag, const std::string& value) {
  w.bytes(key).put(tag).bytes(value);
}

Task<QuorumWorker::Quorum> QuorumWorker::read_quorum(const std::string& key, Code* status) {
  const auto begun = Clock::now();
  Quorum q = co_await query(key, false);
  *status = Code::kUnavailable;
  if (!q.answered) co_return q;
  // Fewer than a majority hold the newest tag: write it back first, or a later read could miss it.
  if (q.holders < q.members.majority) {
    const bool stored = co_await store(key, q.members, q.highest.tag, q.highest.value, &q.why);
    if (!stored) co_return q;
  }
  if (Clock::now() - begun > kOpDeadline) {
    q.why = fmt::format(
        "{}: the read outlived its deadline (a member restarted meanwhile may not hold what it "
        "answered)",
        protocol());
    co_return q;
  }
  *status = q.highest.tag == 0 || tag_deleted(q.highest.tag) ? Code::kNotFound : Code::kOk;
  co_return q;
}

Task<KvResult> QuorumWorker::get(std::string key) {
  if (key.empty())
    co_return KvResult::failed(Code::kInvalidArgument, fmt::format("{}: empty keys are not supported", protocol()));
  Code status = Code::kOk;
  Quorum q = co_await read_quorum(key, &status);
  if (status != Code::kOk) co_return KvResult::failed(status, status == Code::kNotFound ? std::string() : q.why);
  KvResult out;
  out.version = q.highest.tag;
  out.value = std::string(client_value(q.highest.value));
  co_return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Replica.

QuorumWorker::Replica QuorumWorker::read_local(const std::string& key) {
  Replica r;
  if (ctx_.table().get(ctx_.session(), key, &r.value, &r.tag) != store::OpStatus::kOk) r = Replica{};
  return r;
}

Code QuorumWorker::put_versioned(const std::string& key, uint64_t tag, std::string_view value) {
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

Code QuorumWorker::install(const std::string& key, uint64_t tag, std::string_view value) {
  return put_versioned(key, tag, value);
}

bool QuorumWorker::from_data_node(const rpc::Incoming& in) const {
  const cluster::Topology& t = ctx_.topology();
  return in.peer_node < t.nodes.size() && t.nodes[in.peer_node].role == cluster::Role::kData;
}

bool QuorumWorker::from_member(const rpc::Incoming& in) const {
  const cluster::Topology& t = ctx_.topology();
  return from_data_node(in) && t.nodes[in.peer_node].shard == t.nodes[ctx_.self()].shard;
}

bool QuorumWorker::valid_tag(uint64_t tag) const {
  return tag_ts(tag) != 0 && tag <= store::kMaxVersion && tag_node(tag) < ctx_.topology().nodes.size();
}

bool QuorumWorker::replicates(std::string_view key) const {
  return !key.empty() && cluster::is_replica_of(ctx_.topology(), ctx_.self(), key);
}

void QuorumWorker::serve_read(const rpc::Incoming& in) {
  rpc::Reader rd(in.payload);
  const std::string key(rd.bytes(cluster::kMaxKeyBytes));
  const auto tag_only = rd.get<uint8_t>();
  if (!rd.done() || tag_only > 1 || !from_data_node(in) || !replicates(key))
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  if (!ctx_.membership().in_sync()) return ctx_.rpc().respond(in.reply_to(), Code::kUnavailable);
  const Replica r = read_local(key);
  rpc::Writer w;
  w.put(r.tag);
  if (tag_only == 0 && r.tag != 0) w.bytes(r.value);
  ctx_.rpc().respond(in.reply_to(), Code::kOk, w.span());
}

// Stored even before this node is in sync (recovery): a versioned put only ever raises the key's tag, so the copy
// recovery merges in later cannot undo it.
void QuorumWorker::serve_write(const rpc::Incoming& in) {
  if (!takes_register_writes()) return ctx_.rpc().respond(in.reply_to(), Code::kUnsupported);
  rpc::Reader rd(in.payload);
  store_from(in, rd);
}

void QuorumWorker::store_from(const rpc::Incoming& in, rpc::Reader& rd) {
  const std::string key(rd.bytes(cluster::kMaxKeyBytes));
  const auto tag = rd.get<uint64_t>();
  const std::string_view value = rd.bytes(store::kMaxValueBytes);
  const bool valid = rd.done() && from_data_node(in) && valid_tag(tag) && valid_blob(tag, value) && replicates(key);
  if (!valid) return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  ctx_.rpc().respond(in.reply_to(), install(key, tag, value));
}

}  // namespace rdx::replication
