// ZAB's writes at the leader, local reads, and the resolution of marked copies. See zab.h.
#include "replication/zab/zab.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "cluster/local_reads.h"
#include "rpc/codec.h"

namespace rdx::replication::zab {

using cluster::KvResult;
using rpc::Task;

namespace {
constexpr uint16_t kNoLeader = UINT16_MAX;
}  // namespace

std::unique_ptr<ReplicationNode> make_node(const NodeEnv& env) { return std::make_unique<ZabNode>(env); }

std::unique_ptr<ReplicationProtocol> ZabNode::make_worker(cluster::WorkerContext& ctx) {
  return std::make_unique<ZabWorker>(*this, ctx);
}

Status ZabWorker::start_marked() {
  auto& rpc = ctx_.rpc();
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kCommit), [this](const rpc::Incoming& in) { serve_commit(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kPropose), [this](const rpc::Incoming& in) { serve_propose(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kVote), [this](const rpc::Incoming& in) { serve_vote(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kNewView), [this](const rpc::Incoming& in) { serve_new_view(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kFloor), [this](const rpc::Incoming& in) { serve_floor(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kFloorSeen), [this](const rpc::Incoming& in) { serve_floor_seen(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kCatchUp), [this](const rpc::Incoming& in) { serve_catch_up(in); }));
  return rpc.on(msgs_.at(kResolve), [this](const rpc::Incoming& in) { serve_resolve(in); });
}

void ZabWorker::find_leaders() {
  const cluster::Topology& t = ctx_.topology();
  const cluster::Membership& m = ctx_.membership();
  leaders_.assign(t.shards.size(), cluster::ShardView{0, kNoLeader});
  const auto data_member = [&](size_t s, uint16_t id) {
    return id < t.nodes.size() && t.nodes[id].role == cluster::Role::kData && t.nodes[id].shard == static_cast<int>(s);
  };
  for (size_t s = 0; s < t.shards.size(); ++s) {
    const cluster::ShardView v = m.view(static_cast<uint32_t>(s));  // (epochs keep the number of shards)
    leaders_[s].view = v.view;
    if (data_member(s, v.primary)) {
      leaders_[s].primary = v.primary;
      continue;
    }
    for (uint16_t id : t.shards[s].members)
      if (data_member(s, id)) {
        leaders_[s].primary = id;
        break;
      }
  }
  // A follower of a new view may have refused its proposals before it learned it: it catches up with the leader
  // (which answers the copy once established).
  const cluster::ShardView* now = own_view();
  if (now == nullptr) return;
  if (followed_.primary != UINT16_MAX && now->view != followed_.view && own_leader()) zab_.request_catch_up();
  followed_ = *now;
}

Code ZabWorker::check_view(std::string_view key, uint64_t view, uint16_t sender) {
  const auto shard = static_cast<uint32_t>(ctx_.topology().shard_of_key(key));
  const cluster::Membership& m = ctx_.membership();
  if (leaders_[shard].view != m.view(shard).view) find_leaders();  // (a view another worker learned a moment ago)
  if (view < m.view(shard).view || view < m.vote_fence(shard)) return Code::kAborted;
  if (view > m.view(shard).view || sender != leader_of(key)) return Code::kUnavailable;
  return Code::kOk;
}

ZabWorker::StoreRequest ZabWorker::store_request(const std::string& key, uint64_t tag, const std::string& value) const {
  rpc::Writer w;
  w.put(view_of(key));
  append_write(w, key, tag, value);
  return StoreRequest{msgs_.at(kPropose), w.data()};
}

void ZabWorker::serve_propose(const rpc::Incoming& in) {
  rpc::Reader rd(in.payload);
  const auto view = rd.get<uint64_t>();
  // The key, read ahead for the view's check (store_from reads it again).
  rpc::Reader ahead(rd.rest());
  const std::string_view key = ahead.bytes(cluster::kMaxKeyBytes);
  if (!ahead.ok() || !from_member(in) || !replicates(key))
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  std::shared_lock gate(zab_.view_gate());  // (see ZabNode::view_gate)
  if (const Code refused = check_view(key, view, in.peer_node); refused != Code::kOk)
    return ctx_.rpc().respond(in.reply_to(), refused);
  store_from(in, rd);
}

Code ZabWorker::install(const std::string& key, uint64_t tag, std::string_view value) {
  return install_copy(key, tag, value, false).status;  // a proposal, or a copy in recovery: not known committed
}

// ---------------------------------------------------------------------------------------------------------------
// Reads: an unmarked copy locally, a marked one as the leader committed it.

Task<KvResult> ZabWorker::get(std::string key) {
  if (std::string bad = invalid_input(key); !bad.empty()) co_return KvResult::failed(Code::kInvalidArgument, bad);
  if (!replicates(key)) co_return co_await read_at(member_connection(key), key);
  if (!ctx_.membership().in_sync())
    co_return KvResult::failed(Code::kUnavailable, "zab: this node is recovering its copy of the shard");
  cluster::Read fast = co_await ctx_.local_reads().read(key, cluster::ReadMode::kCommitted);
  if (fast.status == Code::kNotFound) {
    if (zab_.catching_up() && !leads(key)) {  // the key may have been created while the link was broken
      KvResult r = co_await resolve_at_leader(key);
      co_return r;
    }
    co_return KvResult::failed(Code::kNotFound, {});
  }
  if (fast.status == Code::kOk) co_return as_read(fast.version, std::move(fast.value));
  Copy c = copy_of(key);  // marked (kBusy), or changed since
  if (!c.found || !c.marked) co_return as_read(c.found ? c.tag : 0, std::move(c.value));
  if (!leads(key)) co_return co_await resolve_at_leader(key);
  const bool ready = co_await leader_ready(key);
  if (!ready)
    co_return KvResult::failed(Code::kUnavailable, "zab: this node's leadership of the key's shard is not established");
  KvResult r = co_await resolve_here(key);
  if (r.status != Code::kOk) co_return r;
  co_return as_read(r.version, std::move(r.value));
}

// kOk with the raw tag (a tombstone's too) as the version, or a failure.
Task<KvResult> ZabWorker::resolve_here(const std::string& key) {
  KvResult out;
  // Not a blind put: it is never combined with the key's SETs, it only waits for its turn among them.
  const Rmw in_turn_of_writes = Rmw::add(0);
  (void)co_await turns_.in_turn(key, members_of(key).count() > 1, in_turn_of_writes, [&]() -> Task<WriteResult> {
    for (;;) {
      Copy c = copy_of(key);
      if (c.found && c.marked) {
        if (!leads(key) || !zab_.established(view_of(key))) {  // (the view changed while it waited for its turn)
          out = KvResult::failed(Code::kUnavailable, "zab: this node no longer leads the key's shard");
          co_return WriteResult{};
        }
        std::string why;
        const bool committed = co_await commit(key, c.tag, c.value, &why);
        if (!committed) {
          out =
              KvResult::failed(Code::kUnavailable, "zab: the key's last write did not reach a majority (" + why + ")");
          co_return WriteResult{};
        }
        continue;
      }
      out.status = Code::kOk;
      out.version = c.found ? c.tag : 0;
      out.value = std::move(c.value);
      co_return WriteResult{};
    }
  });
  co_return out;
}

Task<KvResult> ZabWorker::resolve_at_leader(const std::string& key) {
  const uint16_t leader = leader_of(key);
  auto conn = leader == kNoLeader ? std::nullopt : ctx_.peer(leader);
  if (!conn) co_return KvResult::failed(Code::kUnavailable, "zab: the leader of the key's shard is not reachable");
  rpc::Writer w;
  w.bytes(key);
  rpc::Response r = co_await ctx_.rpc().call(*conn, msgs_.at(kResolve), w.span());
  if (r.status != Code::kOk)
    co_return KvResult::failed(
        Code::kUnavailable,
        fmt::format("zab: the leader of the key's shard did not answer ({}{}{})", code_name(r.status),
                    r.payload.empty() ? "" : ": ",
                    std::string_view(reinterpret_cast<const char*>(r.payload.data()), r.payload.size())));
  rpc::Reader rd(r.payload);
  const auto tag = rd.get<uint64_t>();
  std::string value(rd.bytes(store::kMaxValueBytes));
  if (!rd.done() || (tag != 0 && (!valid_tag(tag) || !valid_blob(tag, value))) || (tag == 0 && !value.empty()))
    co_return KvResult::failed(Code::kInternal, "zab: a malformed answer from the leader");
  if (tag != 0) {
    const Installed in = install_copy(key, tag, value, true);  // committed: readable here from now on
    if (in.status != Code::kOk) co_return KvResult::failed(in.status, "zab: the store is full");
    unmark(key, tag);  // (held already, marked)
  }
  co_return as_read(tag, std::move(value));
}

void ZabWorker::serve_resolve(const rpc::Incoming& in) {
  rpc::Reader rd(in.payload);
  std::string key(rd.bytes(cluster::kMaxKeyBytes));
  if (!rd.done() || !from_member(in) || !replicates(key) || !leads(key))
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument,
                              rpc::as_bytes_of(std::string_view("zab: a malformed resolve request")));
  if (!ctx_.membership().in_sync()) return ctx_.rpc().respond(in.reply_to(), Code::kUnavailable);
  rpc::spawn([](ZabWorker* self, rpc::ReplyTo to, std::string k) -> Task<void> {
    const bool ready = co_await self->leader_ready(k);
    if (!ready) co_return self->ctx_.rpc().respond(to, Code::kUnavailable);
    KvResult r = co_await self->resolve_here(k);
    if (r.status != Code::kOk) co_return self->ctx_.rpc().respond(to, r.status, rpc::as_bytes_of(r.error));
    rpc::Writer w;
    w.put(r.version).bytes(r.value);
    self->ctx_.rpc().respond(to, Code::kOk, w.span());
  }(this, in.reply_to(), std::move(key)));
}

// ---------------------------------------------------------------------------------------------------------------
// Catching up after a broken link to the leader (zab.h).

const cluster::ShardView* ZabWorker::own_view() const {
  const cluster::NodeSpec& self = ctx_.topology().nodes[ctx_.self()];
  if (self.role != cluster::Role::kData || self.shard < 0) return nullptr;
  return &leaders_[static_cast<size_t>(self.shard)];
}

std::optional<uint16_t> ZabWorker::own_leader() const {
  const cluster::ShardView* v = own_view();
  if (v == nullptr || v->primary == kNoLeader || v->primary == ctx_.self()) return std::nullopt;
  return v->primary;
}

void ZabWorker::on_peer_lost(uint16_t node) {
  MarkedWorker::on_peer_lost(node);
  // Called only for a link that was up (a connection that had connected, a peer that had answered), so it broke
  // even when watch_links never saw it up: a link up and down again within one tick must still be caught up.
  if (node >= links_.size()) links_.resize(node + 1, Link::kNeverUp);
  links_[node] = Link::kBroke;
}

void ZabWorker::watch_links() {
  const cluster::ShardView* own = own_view();
  if (own == nullptr) return;
  const cluster::Topology& t = ctx_.topology();
  links_.resize(t.nodes.size(), Link::kNeverUp);
  const auto shard = static_cast<uint32_t>(t.nodes[ctx_.self()].shard);
  for (uint16_t id : t.shards[shard].members) {
    if (id == ctx_.self()) continue;
    const auto conn = ctx_.peer(id);
    if (!conn || ctx_.membership().suspected(id)) {
      if (links_[id] == Link::kUp) links_[id] = Link::kBroke;
      continue;
    }
    if (links_[id] == Link::kBroke && own->primary == ctx_.self()) {
      rpc::Writer w;
      w.put(shard).put(own->view);
      if (!ctx_.rpc().send_oneway(*conn, msgs_.at(kCatchUp), w.span()).is_ok()) continue;
      spdlog::info("zab: the link to {} is back; it may have missed proposals: telling it to catch up",
                   t.nodes[id].name);
    } else if (links_[id] == Link::kBroke && own->primary == id) {
      spdlog::info("zab: {} answers again; catching up with what it proposed meanwhile", t.nodes[id].name);
      zab_.request_catch_up();
    }
    links_[id] = Link::kUp;
  }
}

void ZabWorker::serve_catch_up(const rpc::Incoming& in) {
  rpc::Reader rd(in.payload);
  const auto shard = rd.get<uint32_t>();
  const auto view = rd.get<uint64_t>();
  const cluster::ShardView* own = own_view();
  if (own == nullptr) return;  // (not a data node: nothing to catch up)
  if (!rd.done() || !from_member(in) || shard != static_cast<uint32_t>(ctx_.topology().nodes[ctx_.self()].shard)) {
    spdlog::warn("zab: a malformed CATCH_UP from node {} ignored", in.peer_node);
    return;
  }
  // Only from the leader this node follows, in the view it runs (an older leader's, or one of a view this node has
  // not learned yet, is dropped: a new view's leader is caught up with anyway, find_leaders).
  if (own->primary != in.peer_node || own->view != view || own->primary == ctx_.self()) return;
  zab_.request_catch_up();
}

void ZabWorker::tick_protocol() {
  watch_links();
  if (ctx_.worker_index() == 0 && ctx_.membership().in_sync()) {
    if (const cluster::ShardView* own = own_view(); own != nullptr && own->primary != kNoLeader) {
      if (own->primary != ctx_.self()) {
        if (!electing_ && cluster::lost_peer(ctx_, own->primary)) rpc::spawn(elect(own->primary));  // election.cc
      } else if (!establishing_ && !zab_.established(own->view)) {
        rpc::spawn(establish());
      }
    }
  }
  if (ctx_.worker_index() == 0 && !catching_up_here_ && zab_.take_catch_up_request()) {
    if (const auto leader = own_leader()) {
      catching_up_here_ = true;
      rpc::spawn(catch_up(*leader));
    } else {
      zab_.caught_up();
    }
  }
}

Task<void> ZabWorker::catch_up(uint16_t leader) {
  for (;;) {
    // Not in sync: recovery copies the whole shard anyway. Otherwise a copy from the leader, tried until it works or
    // the leader changes (another request then starts over).
    bool copied = true;
    if (ctx_.membership().in_sync() && own_leader() == leader) copied = co_await copy_from(leader);
    if (copied || ctx_.membership().stopping()) break;
    co_await ctx_.sched().sleep_for(std::chrono::milliseconds(200));
  }
  if (!zab_.take_catch_up_request()) {
    zab_.caught_up();
    spdlog::info("zab: caught up with {}", ctx_.topology().nodes[leader].name);
  } else {
    zab_.request_catch_up();  // the link broke again meanwhile: once more
  }
  catching_up_here_ = false;
}

// ---------------------------------------------------------------------------------------------------------------
// Writes: ordered at the leader, committed at a majority.

Task<WriteResult> ZabWorker::write(std::string key, Rmw op) {
  if (std::string bad = invalid_input(key, &op); !bad.empty())
    co_return WriteResult::failed(Code::kInvalidArgument, bad);
  const uint16_t leader = leader_of(key);
  if (leader != ctx_.self()) {
    const auto conn = leader == kNoLeader ? std::nullopt : ctx_.peer(leader);
    WriteResult r = co_await write_at(conn, key, op);
    if (r.status != Code::kOk || !replicates(key) || node_.env().faults.ack_before_replication) co_return r;
    // This node's sessions must read what they wrote, and what the write saw: the proposal travelled ahead of the
    // reply on the same connection, so this node normally holds it already (marked or not). A write that saw the key
    // absent and wrote nothing (a DEL of an absent key, a failed CAS) reports no version, though the leader may
    // hold a delete this node has not: a value here is then older than what the session saw.
    const uint64_t needed = std::max(r.version, r.prior_version);
    const Copy c = copy_of(key);
    const bool live_copy_of_absent_key = needed == 0 && c.found && !tag_deleted(c.tag);
    if ((c.found ? c.tag : 0) >= needed && !live_copy_of_absent_key) co_return r;
    KvResult now = co_await resolve_at_leader(key);
    if (now.status != Code::kOk && now.status != Code::kNotFound)
      co_return WriteResult::failed(Code::kTimeout, "zab: the leader wrote it, but this node could not catch up (" +
                                                        now.error + "); it may or may not have taken effect");
    co_return r;
  }
  if (!ctx_.membership().in_sync())
    co_return WriteResult::failed(Code::kUnavailable, "zab: the leader of the key's shard is recovering its copy");
  const bool ready = co_await leader_ready(key);
  if (!ready)
    co_return WriteResult::failed(
        Code::kUnavailable, "zab: this node's leadership of the key's shard is not established; nothing was written");
  co_return co_await turns_.in_turn(key, members_of(key).count() > 1, op, [&] { return write_at_leader(key, op); });
}

Task<WriteResult> ZabWorker::write_at_leader(const std::string& key, const Rmw& op) {
  for (;;) {
    if (!leads(key) || !zab_.established(view_of(key)))  // (the view changed while it waited for its turn)
      co_return WriteResult::failed(Code::kUnavailable,
                                    "zab: this node no longer leads the key's shard; nothing was written");
    Copy base = copy_of(key);
    std::string why;
    if (base.found && base.marked) {  // an earlier write no majority acknowledged to this node: it goes first
      const bool committed = co_await commit(key, base.tag, base.value, &why);
      if (!committed)
        co_return WriteResult::failed(
            Code::kUnavailable,
            "zab: an earlier write of the key did not reach a majority (" + why + "); nothing was written");
      continue;
    }
    const uint64_t base_tag = base.found ? base.tag : 0;
    std::optional<std::string> current;
    if (base.found && !tag_deleted(base.tag)) current = std::move(base.value);
    const Applied a = apply_rmw(op, current);
    if (a.status != Code::kOk || !a.write) co_return result_of(op, a, current, base_tag, 0);
    const uint64_t ts = next_ts(base_tag);
    if (ts > kTagMaxTs) co_return WriteResult::failed(Code::kResourceExhausted, "zab: the key's tags are exhausted");
    const uint64_t tag = pack_tag(ts, ctx_.self(), !a.new_value.has_value());
    const std::string value = a.new_value.value_or(std::string());
    const Installed here = install_copy(key, tag, value, false, base_tag);
    if (here.status == Code::kAborted) continue;  // a copy arrived since it was read (recovery): evaluate again
    if (here.status != Code::kOk) co_return WriteResult::failed(here.status, "zab: the store is full");
    const WriteResult result = result_of(op, a, current, base_tag, tag);
    const bool committed = co_await commit(key, tag, value, &why);
    if (!committed)
      co_return WriteResult::failed(
          Code::kTimeout, "zab: no majority acknowledged the write (" + why + "); it may or may not have taken effect");
    co_return result;
  }
}

Task<bool> ZabWorker::commit(const std::string& key, uint64_t tag, const std::string& value, std::string* why) {
  const Members m = members_of(key);
  const bool stored = co_await store(key, m, tag, value, why);  // (the planted fault reports it at once)
  if (!stored) co_return false;
  unmark(key, tag);
  rpc::Writer w;
  w.bytes(key).put(view_of(key)).put(tag);
  for (uint16_t id : m.others)
    if (auto conn = ctx_.peer(id)) (void)ctx_.rpc().send_oneway(*conn, msgs_.at(kCommit), w.span());
  co_return true;
}

void ZabWorker::serve_commit(const rpc::Incoming& in) {
  rpc::Reader rd(in.payload);
  const std::string key(rd.bytes(cluster::kMaxKeyBytes));
  const auto view = rd.get<uint64_t>();
  const auto tag = rd.get<uint64_t>();
  if (!rd.done() || !from_member(in) || !replicates(key) || !valid_tag(tag)) {
    spdlog::warn("zab: a malformed COMMIT from node {} ignored", in.peer_node);
    return;
  }
  // One of another view (or from a node that does not lead this one) is dropped: the copy stays marked, and its
  // next read resolves it at the leader.
  if (check_view(key, view, in.peer_node) == Code::kOk) unmark(key, tag);
}

}  // namespace rdx::replication::zab
