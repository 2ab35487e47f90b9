// Classic Paxos's proposer and its acceptors' handlers. See paxos.h.
#include "replication/paxos/paxos.h"

#include <spdlog/spdlog.h>

#include "replication/quorum.h"
#include "rpc/codec.h"

namespace rdx::replication::paxos {

using rpc::Task;
using Clock = std::chrono::steady_clock;

std::unique_ptr<ReplicationNode> make_node(const NodeEnv& env) { return std::make_unique<PaxosNode>(env); }

std::unique_ptr<ReplicationProtocol> PaxosNode::make_worker(cluster::WorkerContext& ctx) {
  return std::make_unique<PaxosWorker>(*this, ctx);
}

std::optional<RmwId> Lanes::take() {
  if (free_.empty()) {
    if (next_seq_.size() >= kMaxLanes) return std::nullopt;
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    next_seq_.push_back(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()));
    free_.push_back(static_cast<uint32_t>(next_seq_.size() - 1));
  }
  const uint32_t lane = free_.back();
  free_.pop_back();
  return RmwId{base_ | lane, ++next_seq_[lane]};
}

namespace {

void encode_reply(rpc::Writer& w, const AcceptorReply& a) {
  w.put(static_cast<uint8_t>(a.verdict));
  switch (a.verdict) {
    case Verdict::kPromised:
      w.put(a.accepted.ballot);
      if (a.accepted.ballot != 0) w.put(a.accepted.tag).bytes(a.accepted.blob);
      break;
    case Verdict::kNack:
      w.put(a.ballot);
      break;
    case Verdict::kCommitted:
      w.put(a.tag).bytes(a.blob);
      break;
    case Verdict::kAccepted:
    case Verdict::kRegistered:
    case Verdict::kBehind:
      break;
  }
}

bool decode_reply(std::string_view payload, AcceptorReply* out) {
  rpc::Reader rd(payload);
  const auto v = rd.get<uint8_t>();
  if (v > static_cast<uint8_t>(Verdict::kBehind)) return false;
  out->verdict = static_cast<Verdict>(v);
  switch (out->verdict) {
    case Verdict::kPromised:
      out->accepted.ballot = rd.get<uint64_t>();
      if (out->accepted.ballot != 0) {
        out->accepted.tag = rd.get<uint64_t>();
        out->accepted.blob = std::string(rd.bytes(store::kMaxValueBytes));
      }
      break;
    case Verdict::kNack:
      out->ballot = rd.get<uint64_t>();
      break;
    case Verdict::kCommitted:
      out->tag = rd.get<uint64_t>();
      out->blob = std::string(rd.bytes(store::kMaxValueBytes));
      break;
    default:
      break;
  }
  return rd.done();
}

// The client's view of a committed value.
std::optional<std::string> present(uint64_t tag, std::string_view blob) {
  if (tag == 0 || tag_deleted(tag)) return std::nullopt;
  return std::string(blob_value(blob));
}

WriteResult gave_up(bool may_have_applied, std::string_view why) {
  if (may_have_applied)
    return WriteResult::failed(Code::kTimeout,
                               fmt::format("paxos: {}; the write may or may not have taken effect", why));
  return WriteResult::failed(Code::kUnavailable, fmt::format("paxos: {} (nothing was applied)", why));
}

}  // namespace

void PaxosWorker::Round::tally(const AcceptorReply& a) {
  ++replies;
  switch (a.verdict) {
    case Verdict::kPromised:
      ++promises;
      if (a.accepted.ballot > adopt.ballot) adopt = a.accepted;
      break;
    case Verdict::kAccepted:
      ++accepts;
      break;
    case Verdict::kNack:
      highest_nack = std::max(highest_nack, a.ballot);
      break;
    case Verdict::kCommitted:
      if (a.tag > newest.tag) newest = Known{a.tag, a.blob};
      break;
    case Verdict::kRegistered:
      registered = true;
      break;
    case Verdict::kBehind:
      break;
  }
}

PaxosWorker::PaxosWorker(PaxosNode& node, cluster::WorkerContext& ctx)
    : QuorumWorker(node, ctx),
      paxos_(node),
      turns_(ctx.sched(), node.key_tickets()),
      lanes_(ctx.self(), ctx.worker_index()),
      rng_(std::random_device{}()) {}

Status PaxosWorker::start_protocol() {
  auto& rpc = ctx_.rpc();
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kPrepare), [this](const rpc::Incoming& in) { serve_prepare(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kAccept), [this](const rpc::Incoming& in) { serve_accept(in); }));
  return rpc.on(msgs_.at(kOpenSlots), [this](const rpc::Incoming& in) { serve_open_slots(in); });
}

bool PaxosWorker::valid_blob(uint64_t tag, std::string_view stored) const {
  return stored.size() >= kRmwIdBytes && stored.size() <= store::kMaxValueBytes &&
         (!tag_deleted(tag) || stored.size() == kRmwIdBytes) && blob_id(stored).seq != 0;
}

Code PaxosWorker::install(const std::string& key, uint64_t tag, std::string_view value) {
  return paxos_.acceptor().commit(ctx_.table(), ctx_.session(), key, tag, value);
}

// ---------------------------------------------------------------------------------------------------------------
// Proposer.

Task<WriteResult> PaxosWorker::write(std::string key, Rmw op) {
  if (key.empty()) co_return WriteResult::failed(Code::kInvalidArgument, "paxos: empty keys are not supported");
  if (op.value.size() > kMaxClientValue || op.expected.size() > kMaxClientValue)
    co_return WriteResult::failed(Code::kInvalidArgument, "value over the size limit");
  // This node's operations on one key take turns (they would only compete for the slot); a plain SET queued behind
  // another write may be written with it.
  co_return co_await turns_.in_turn(key, members_of(key).count() > 1, op, [&] { return propose(key, op); });
}

Task<WriteResult> PaxosWorker::propose(const std::string& key, const Rmw& op) {
  const std::optional<RmwId> lane = lanes_.take();
  if (!lane) co_return WriteResult::failed(Code::kResourceExhausted, "paxos: too many operations on this worker");
  struct GiveBack {
    Lanes& lanes;
    RmwId id;
    ~GiveBack() { lanes.give_back(id); }
  } give_back{lanes_, *lane};
  const RmwId id = *lane;
  const auto begun = Clock::now();
  const Members m = members_of(key);
  Known known;  // where this proposer starts: its own copy (a member's), else nothing (the answers teach it)
  if (m.self) {
    Replica own = read_local(key);
    known = Known{own.tag, std::move(own.value)};
  }
  std::optional<Proposed> mine;
  int conflicts = 0;
  uint64_t priority = 0;
  for (;;) {
    if (Clock::now() - begun > kOpBudget) co_return gave_up(mine.has_value(), "the write outlived its deadline");
    const uint64_t slot = tag_ts(known.tag) + 1;
    if (slot > kTagMaxTs)
      co_return WriteResult::failed(Code::kResourceExhausted, "paxos: the key's slots are exhausted");
    const uint64_t ballot = make_ballot(priority, ++round_, ctx_.self());
    auto sent = Clock::now();
    Round p = co_await prepare_round(key, m, slot, ballot, known, id);
    auto round_time = Clock::now() - sent;
    if (p.registered) {  // decided (in mine->slot: the only slot its value went to)
      if (mine) co_return co_await commit_mine(key, m, std::move(*mine), begun);
      co_return WriteResult::failed(Code::kInternal, "paxos: an operation registered before it proposed");
    }
    const bool moved = learn(key, m, p, &known);
    if (mine && tag_ts(known.tag) >= mine->slot) {
      // Its slot is decided. This operation's value if the value committed there carries its id; otherwise not, when
      // the slot is the committed one, or when a majority answered without the registration (the next slot is decided
      // too, and every acceptor of its majority registered the operation that decided this one).
      if (tag_ts(known.tag) == mine->slot && blob_id(known.blob) == id)
        co_return co_await commit_mine(key, m, std::move(*mine), begun);
      if (tag_ts(known.tag) == mine->slot || p.replies >= m.majority) mine.reset();
    }
    if (moved) {  // another operation took the slot: this one moves on, one priority higher
      priority = std::min(priority + 1, kMaxPriority);
      continue;
    }
    if (p.promises < m.majority) {
      co_await lost_to(p.highest_nack, &priority, ++conflicts, round_time);
      continue;
    }
    // Phase 2. A value accepted in this slot may be decided already: it goes first.
    Accepted value;
    if (p.adopt.ballot != 0) {
      value = std::move(p.adopt);
    } else {
      const std::optional<std::string> base = present(known.tag, known.blob);
      Applied a = apply_rmw(op, base);
      if (a.status != Code::kOk || !a.write) {
        std::optional<WriteResult> r = co_await answer_without_writing(key, op, &known);
        if (r) co_return std::move(*r);
        continue;
      }
      const uint64_t tag = pack_tag(slot, ctx_.self(), !a.new_value.has_value());
      value = Accepted{0, tag, make_blob(id, a.new_value.value_or(std::string()))};
      mine = Proposed{slot, value, result_of(op, a, base, known.tag, tag)};
    }
    value.ballot = ballot;
    const bool helping = blob_id(value.blob) != id;
    sent = Clock::now();
    Round a = co_await accept_round(key, m, slot, ballot, value);
    round_time = Clock::now() - sent;
    if (learn(key, m, a, &known)) {
      if (mine && tag_ts(known.tag) == mine->slot && blob_id(known.blob) == id)
        co_return co_await commit_mine(key, m, std::move(*mine), begun);
      priority = std::min(priority + 1, kMaxPriority);
      continue;
    }
    if (a.accepts < m.majority) {
      co_await lost_to(a.highest_nack, &priority, ++conflicts, round_time);
      continue;
    }
    if (!helping) {
      if (!mine)
        co_return WriteResult::failed(Code::kInternal, "paxos: an operation's value decided before it proposed");
      co_return co_await commit_mine(key, m, std::move(*mine), begun);
    }
    // Decided with another operation's value: committed at a majority (so the slot is known to be taken), and this
    // operation goes on in the next slot.
    std::string why;
    sent = Clock::now();
    const bool committed = co_await store(key, m, value.tag, value.blob, &why);
    if (committed && Clock::now() - sent <= kOpDeadline) known = Known{value.tag, std::move(value.blob)};
    mine.reset();  // (its value was not the slot's)
    conflicts = 0;
  }
}

Task<WriteResult> PaxosWorker::commit_mine(const std::string& key, const Members& m, Proposed mine,
                                           Clock::time_point begun) {
  // Nobody hears of a write before a majority committed it (a read asks a majority for their committed values); a
  // commit round that outlived kOpDeadline counts nothing and is made again.
  std::string why = "the commit outlived its deadline";
  for (;;) {
    const auto sent = Clock::now();
    const bool committed = co_await store(key, m, mine.value.tag, mine.value.blob, &why);
    if (committed && Clock::now() - sent <= kOpDeadline) co_return std::move(mine.result);
    if (Clock::now() - begun > kOpBudget) co_return gave_up(true, why);
  }
}

Task<std::optional<WriteResult>> PaxosWorker::answer_without_writing(const std::string& key, const Rmw& op,
                                                                     Known* known) {
  Code status = Code::kOk;
  Quorum q = co_await read_quorum(key, &status);
  if (status != Code::kOk && status != Code::kNotFound) co_return gave_up(false, q.why);
  const std::optional<std::string> seen = present(q.highest.tag, q.highest.value);
  const Applied a = apply_rmw(op, seen);
  if (a.status == Code::kOk && a.write) {
    if (q.highest.tag > known->tag) *known = Known{q.highest.tag, std::move(q.highest.value)};
    co_return std::nullopt;
  }
  co_return result_of(op, a, seen, q.highest.tag, 0);
}

bool PaxosWorker::learn(const std::string& key, const Members& m, Round& r, Known* known) {
  if (r.newest.tag <= known->tag) return false;
  if (m.self) (void)install(key, r.newest.tag, r.newest.blob);
  *known = std::move(r.newest);
  return true;
}

// A higher ballot was promised to another proposer. One of a higher priority has waited longer: let it finish (two
// rounds, accept and commit, and more as the conflicts grow) and climb one priority. One of this priority: go above
// its round after a random wait.
Task<void> PaxosWorker::lost_to(uint64_t nacked, uint64_t* priority, int conflicts, Clock::duration round) {
  if (ballot_priority(nacked) > *priority) {
    *priority = std::min(*priority + 1, kMaxPriority);
    co_await ctx_.sched().sleep_for(2 * round);
  } else {
    round_ = std::max(round_, ballot_round(nacked));
  }
  co_await back_off(conflicts, round);
}

// A random wait that grows with the conflicts, in units of this operation's own round time: a competing proposer
// needs about a round to finish its slot, and waiting lets it instead of preempting it again (duelling proposers).
Task<void> PaxosWorker::back_off(int conflicts, Clock::duration round) {
  const auto cap = std::max<Clock::rep>(round.count(), 1) << std::min(conflicts, 3);
  co_await ctx_.sched().sleep_for(Clock::duration(static_cast<Clock::rep>(rng_() % static_cast<uint64_t>(cap))));
}

Task<PaxosWorker::Round> PaxosWorker::prepare_round(const std::string& key, const Members& m, uint64_t slot,
                                                    uint64_t ballot, const Known& base, RmwId id) {
  rpc::Writer w;
  w.bytes(key).put(slot).put(ballot).put(base.tag).bytes(base.blob).put(id.lane).put(id.seq);
  std::optional<AcceptorReply> own;
  if (m.self && ctx_.membership().in_sync())
    own = paxos_.acceptor().prepare(ctx_.table(), ctx_.session(), key, slot, ballot, base.tag, base.blob, id);
  co_return co_await ask(m, kPrepare, w.data(), std::move(own));
}

Task<PaxosWorker::Round> PaxosWorker::accept_round(const std::string& key, const Members& m, uint64_t slot,
                                                   uint64_t ballot, const Accepted& value) {
  rpc::Writer w;
  w.bytes(key).put(slot).put(ballot).put(value.tag).bytes(value.blob);
  std::optional<AcceptorReply> own;
  if (m.self && ctx_.membership().in_sync())
    own = paxos_.acceptor().accept(ctx_.table(), ctx_.session(), key, slot, ballot, value.tag, value.blob);
  co_return co_await ask(m, kAccept, w.data(), std::move(own));
}

// One round: this node's own answer (when it is an in-sync member) and a majority's.
Task<PaxosWorker::Round> PaxosWorker::ask(const Members& m, Msg msg, std::string payload,
                                          std::optional<AcceptorReply> own) {
  Round r;
  if (own) r.tally(*own);
  QuorumCall call;
  call.nodes = m.others;
  call.type = msgs_.at(msg);
  call.payload = std::move(payload);
  call.needed = m.majority - r.replies;
  const auto began = Clock::now();
  QuorumResult got = co_await quorum_call(ctx_, std::move(call));
  if (Clock::now() - began > kOpDeadline) co_return Round{};  // counts nothing (kOpDeadline: recovery relies on it)
  for (const QuorumReply& q : got.replies) {
    AcceptorReply a;
    if (q.response.status != Code::kOk || !decode_reply(q.response.payload, &a)) continue;
    const bool valid = (a.verdict != Verdict::kCommitted || (valid_tag(a.tag) && valid_blob(a.tag, a.blob))) &&
                       (a.verdict != Verdict::kPromised || a.accepted.ballot == 0 ||
                        (valid_tag(a.accepted.tag) && valid_blob(a.accepted.tag, a.accepted.blob)));
    if (valid) r.tally(a);
  }
  co_return r;
}

// ---------------------------------------------------------------------------------------------------------------
// Acceptor handlers.

void PaxosWorker::serve_prepare(const rpc::Incoming& in) {
  rpc::Reader rd(in.payload);
  const std::string key(rd.bytes(cluster::kMaxKeyBytes));
  const auto slot = rd.get<uint64_t>(), ballot = rd.get<uint64_t>(), base_tag = rd.get<uint64_t>();
  const std::string_view base = rd.bytes(store::kMaxValueBytes);
  RmwId id;
  id.lane = rd.get<uint64_t>();
  id.seq = rd.get<uint64_t>();
  const bool base_ok = base_tag == 0
                           ? slot == 1 && base.empty()
                           : valid_tag(base_tag) && tag_ts(base_tag) + 1 == slot && valid_blob(base_tag, base);
  if (!rd.done() || !from_data_node(in) || !replicates(key) || slot == 0 || slot > kTagMaxTs || ballot == 0 ||
      id.seq == 0 || !base_ok)
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  if (!ctx_.membership().in_sync()) return ctx_.rpc().respond(in.reply_to(), Code::kUnavailable);
  rpc::Writer w;
  encode_reply(w, paxos_.acceptor().prepare(ctx_.table(), ctx_.session(), key, slot, ballot, base_tag, base, id));
  ctx_.rpc().respond(in.reply_to(), Code::kOk, w.span());
}

void PaxosWorker::serve_accept(const rpc::Incoming& in) {
  rpc::Reader rd(in.payload);
  const std::string key(rd.bytes(cluster::kMaxKeyBytes));
  const auto slot = rd.get<uint64_t>(), ballot = rd.get<uint64_t>(), tag = rd.get<uint64_t>();
  const std::string_view value = rd.bytes(store::kMaxValueBytes);
  if (!rd.done() || !from_data_node(in) || !replicates(key) || ballot == 0 || !valid_tag(tag) || tag_ts(tag) != slot ||
      !valid_blob(tag, value))
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  if (!ctx_.membership().in_sync()) return ctx_.rpc().respond(in.reply_to(), Code::kUnavailable);
  rpc::Writer w;
  encode_reply(w, paxos_.acceptor().accept(ctx_.table(), ctx_.session(), key, slot, ballot, tag, value));
  ctx_.rpc().respond(in.reply_to(), Code::kOk, w.span());
}

}  // namespace rdx::replication::paxos
