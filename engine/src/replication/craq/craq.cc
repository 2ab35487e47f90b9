// CRAQ's reads, writes and chain messages. See craq.h.
#include "replication/craq/craq.h"

#include <spdlog/spdlog.h>

#include "cluster/local_reads.h"
#include "rpc/codec.h"

namespace rdx::replication::craq {

using cluster::KvResult;
using rpc::Task;
using Clock = std::chrono::steady_clock;

std::unique_ptr<ReplicationNode> make_node(const NodeEnv& env) { return std::make_unique<CraqNode>(env); }

std::unique_ptr<ReplicationProtocol> CraqNode::make_worker(cluster::WorkerContext& ctx) {
  return std::make_unique<CraqWorker>(*this, ctx);
}

Status CraqWorker::start_marked() {
  auto& rpc = ctx_.rpc();
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kPropagate), [this](const rpc::Incoming& in) { serve_propagate(in); }));
  return rpc.on(msgs_.at(kVersion), [this](const rpc::Incoming& in) { serve_version(in); });
}

void CraqWorker::make_chains() {
  const cluster::Topology& t = ctx_.topology();
  chains_.assign(t.shards.size(), Chain{});
  for (size_t s = 0; s < t.shards.size(); ++s) {
    for (uint16_t id : t.shards[s].members) {
      if (t.nodes[id].role != cluster::Role::kData) continue;
      if (id == ctx_.self()) chains_[s].self = chains_[s].nodes.size();
      chains_[s].nodes.push_back(id);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Reads: a clean copy locally, a dirty one by the tail's committed tag.

Task<KvResult> CraqWorker::get(std::string key) {
  if (std::string bad = invalid_input(key); !bad.empty()) co_return KvResult::failed(Code::kInvalidArgument, bad);
  if (!replicates(key)) co_return co_await read_at(member_connection(key), key);
  if (!ctx_.membership().in_sync())
    co_return KvResult::failed(Code::kUnavailable, "craq: this node is recovering its copy of the shard");
  cluster::Read fast = co_await ctx_.local_reads().read(key, cluster::ReadMode::kCommitted);
  if (fast.status == Code::kNotFound) co_return KvResult::failed(Code::kNotFound, {});
  if (fast.status == Code::kOk) co_return as_read(fast.version, std::move(fast.value));
  Copy c = copy_of(key);  // dirty (kBusy), or changed since
  const Chain& chain = chain_of(key);
  if (!c.found || !c.marked || chain.is_tail()) co_return as_read(c.found ? c.tag : 0, std::move(c.value));
  co_return co_await ask_tail(key, c, chain.tail());
}

Task<KvResult> CraqWorker::ask_tail(const std::string& key, const Copy& dirty, uint16_t tail) {
  auto conn = ctx_.peer(tail);
  if (!conn) co_return KvResult::failed(Code::kUnavailable, "craq: the tail of the key's chain is not reachable");
  rpc::Writer w;
  w.bytes(key).put(dirty.tag);
  rpc::Response r = co_await ctx_.rpc().call(*conn, msgs_.at(kVersion), w.span());
  if (r.status != Code::kOk)
    co_return KvResult::failed(
        Code::kUnavailable, fmt::format("craq: the tail of the key's chain did not answer ({})", code_name(r.status)));
  rpc::Reader rd(r.payload);
  const auto committed = rd.get<uint64_t>();
  std::string value;
  if (committed != dirty.tag && committed != 0) value = std::string(rd.bytes(store::kMaxValueBytes));
  if (!rd.done() || (committed != 0 && (!valid_tag(committed) || !valid_blob(committed, value))))
    co_return KvResult::failed(Code::kInternal, "craq: a malformed answer from the tail");
  if (committed != dirty.tag) co_return as_read(committed, std::move(value));
  unmark(key, committed);  // committed: clean here too
  co_return as_read(dirty.tag, dirty.value);
}

void CraqWorker::encode_held(rpc::Writer& w, uint64_t sent, const Copy& held) {
  const uint64_t tag = held.found ? held.tag : 0;
  w.put(tag);
  if (tag != sent && tag != 0) w.bytes(held.value);
}

void CraqWorker::serve_version(const rpc::Incoming& in) {
  rpc::Reader rd(in.payload);
  const std::string key(rd.bytes(cluster::kMaxKeyBytes));
  const auto tag = rd.get<uint64_t>();
  if (!rd.done() || !from_member(in) || !replicates(key) || !chain_of(key).is_tail())
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  if (!ctx_.membership().in_sync()) return ctx_.rpc().respond(in.reply_to(), Code::kUnavailable);
  rpc::Writer w;
  encode_held(w, tag, copy_of(key));
  ctx_.rpc().respond(in.reply_to(), Code::kOk, w.span());
}

// ---------------------------------------------------------------------------------------------------------------
// Writes: ordered at the head, committed at the tail.

Task<WriteResult> CraqWorker::write(std::string key, Rmw op) {
  if (std::string bad = invalid_input(key, &op); !bad.empty())
    co_return WriteResult::failed(Code::kInvalidArgument, bad);
  const Chain& chain = chain_of(key);
  if (!chain.is_head()) co_return co_await write_at(ctx_.peer(chain.head()), key, op);
  if (!ctx_.membership().in_sync())
    co_return WriteResult::failed(Code::kUnavailable, "craq: the head of the key's chain is recovering its copy");
  co_return co_await turns_.in_turn(key, chain.nodes.size() > 1, op, [&] { return write_at_head(key, op); });
}

Task<WriteResult> CraqWorker::write_at_head(const std::string& key, const Rmw& op) {
  const auto deadline = Clock::now() + kOpDeadline;
  for (;;) {
    Copy base = copy_of(key);
    std::string why;
    if (base.found && base.marked) {  // an earlier write that did not hear back from the chain: it goes first
      const Code pushed = co_await push(key, base.tag, base.value, deadline, &why);
      if (pushed != Code::kOk)
        co_return WriteResult::failed(Code::kUnavailable, "craq: an earlier write of the key did not reach the tail (" +
                                                              why + "); nothing was written");
      continue;
    }
    const uint64_t base_tag = base.found ? base.tag : 0;
    std::optional<std::string> current;
    if (base.found && !tag_deleted(base.tag)) current = std::move(base.value);
    const Applied a = apply_rmw(op, current);
    if (a.status != Code::kOk || !a.write) co_return result_of(op, a, current, base_tag, 0);
    const uint64_t ts = tag_ts(base_tag) + 1;
    if (ts > kTagMaxTs) co_return WriteResult::failed(Code::kResourceExhausted, "craq: the key's tags are exhausted");
    const uint64_t tag = pack_tag(ts, ctx_.self(), !a.new_value.has_value());
    const std::string value = a.new_value.value_or(std::string());
    const Installed here = install_copy(key, tag, value, chain_of(key).is_tail(), base_tag);
    if (here.status == Code::kAborted) continue;  // a copy arrived since it was read (recovery): evaluate again
    if (here.status != Code::kOk) co_return WriteResult::failed(here.status, "craq: the store is full");
    const WriteResult result = result_of(op, a, current, base_tag, tag);
    if (node_.env().faults.ack_before_replication) {
      // Planted fault (tests only): clean and acknowledged at the head before the chain has it.
      unmark(key, tag);
      rpc::spawn([](CraqWorker* self, std::string k, uint64_t t, std::string v) -> Task<void> {
        co_await self->ctx_.sched().sleep_for(std::chrono::milliseconds(20));
        std::string ignored;
        (void)co_await self->push(k, t, std::move(v), Clock::now() + kOpDeadline, &ignored);
      }(this, key, tag, value));
      co_return result;
    }
    const Code pushed = co_await push(key, tag, value, deadline, &why);
    if (pushed != Code::kOk)
      co_return WriteResult::failed(Code::kTimeout, "craq: the chain did not acknowledge the write (" + why +
                                                        "); it may or may not have taken effect");
    co_return result;
  }
}

Task<Code> CraqWorker::push(const std::string& key, uint64_t tag, std::string value, Clock::time_point deadline,
                            std::string* why) {
  const Chain& chain = chain_of(key);
  if (chain.is_tail()) {  // what the tail holds is committed
    unmark(key, tag);
    co_return Code::kOk;
  }
  const uint16_t next = chain.nodes[chain.self + 1];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      *why = fmt::format("{} did not answer in time", ctx_.topology().nodes[next].name);
      co_return Code::kTimeout;
    }
    auto conn = ctx_.peer(next);
    if (!conn) {
      *why = fmt::format("{} is not connected", ctx_.topology().nodes[next].name);
      co_return Code::kUnavailable;
    }
    rpc::Writer w;
    w.bytes(key).put(tag).bytes(value);
    rpc::Response r = co_await ctx_.rpc().call(*conn, msgs_.at(kPropagate), w.span(), left);
    if (r.status != Code::kOk) {
      *why = fmt::format("{}: {}", ctx_.topology().nodes[next].name,
                         r.payload.empty() ? std::string(code_name(r.status)) : std::string(r.payload));
      co_return r.status == Code::kInvalidArgument ? Code::kInternal : r.status;
    }
    rpc::Reader rd(r.payload);
    const auto held = rd.get<uint64_t>();
    std::string newer;
    if (held != tag) newer = std::string(rd.bytes(store::kMaxValueBytes));
    if (!rd.done() || held < tag || !valid_tag(held) || !valid_blob(held, newer)) {
      *why = fmt::format("a malformed answer from {}", ctx_.topology().nodes[next].name);
      co_return Code::kInternal;
    }
    if (held == tag) {
      unmark(key, tag);
      co_return Code::kOk;
    }
    // The successor holds a newer write (this node's copy is older than the chain after it: it restarted): take it
    // and push that one.
    const Installed in = install_copy(key, held, newer, false);
    if (in.status != Code::kOk) {
      *why = "the store is full";
      co_return in.status;
    }
    tag = held;
    value = std::move(newer);
  }
}

// From the predecessor: install (dirty; committed at the tail), pass on what this node holds now, answer once the
// tail committed it.
void CraqWorker::serve_propagate(const rpc::Incoming& in) {
  rpc::Reader rd(in.payload);
  const std::string key(rd.bytes(cluster::kMaxKeyBytes));
  const auto tag = rd.get<uint64_t>();
  const std::string value(rd.bytes(store::kMaxValueBytes));
  const Chain& chain = chain_of(key);
  if (!rd.done() || !replicates(key) || !valid_tag(tag) || !valid_blob(tag, value) || chain.is_head() ||
      in.peer_node != chain.nodes[chain.self - 1])
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument,
                              rpc::as_bytes_of(std::string_view("craq: a malformed write from the chain")));
  if (!ctx_.membership().in_sync()) return ctx_.rpc().respond(in.reply_to(), Code::kUnavailable);
  const Installed r = install_copy(key, tag, value, chain.is_tail());
  if (r.status != Code::kOk) return ctx_.rpc().respond(in.reply_to(), r.status);
  Copy held = copy_of(key);
  if (!held.marked) {  // committed: the tail's copy, or a tag the chain after this node acknowledged already
    rpc::Writer w;
    encode_held(w, tag, held);
    return ctx_.rpc().respond(in.reply_to(), Code::kOk, w.span());
  }
  rpc::spawn([](CraqWorker* self, rpc::ReplyTo to, std::string k, uint64_t sent, Copy h) -> Task<void> {
    std::string why;
    const Code pushed = co_await self->push(k, h.tag, std::move(h.value), Clock::now() + kOpDeadline, &why);
    if (pushed != Code::kOk) {
      self->ctx_.rpc().respond(to, pushed == Code::kUnavailable ? Code::kTimeout : pushed, rpc::as_bytes_of(why));
      co_return;
    }
    rpc::Writer w;
    encode_held(w, sent, self->copy_of(k));
    self->ctx_.rpc().respond(to, Code::kOk, w.span());
  }(this, in.reply_to(), key, tag, std::move(held)));
}

// ---------------------------------------------------------------------------------------------------------------
// Recovery (quorum_recovery.cc), from one neighbour.

Code CraqWorker::install(const std::string& key, uint64_t tag, std::string_view value) {
  return install_copy(key, tag, value, chain_of(key).is_tail()).status;
}

std::vector<uint16_t> CraqWorker::copy_sources(std::vector<uint16_t> others) const {
  if (others.empty()) return others;  // (a one-member shard)
  const Chain& chain = chains_[static_cast<size_t>(ctx_.topology().nodes[ctx_.self()].shard)];
  return {chain.is_head() ? chain.nodes[1] : chain.nodes[chain.self - 1]};
}

}  // namespace rdx::replication::craq
