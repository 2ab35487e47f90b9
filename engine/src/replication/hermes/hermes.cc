// Hermes' reads and updates (coordinator side), and operations forwarded from other shards' nodes. See hermes.h.
#include "replication/hermes/hermes.h"

#include <spdlog/spdlog.h>

#include "cluster/local_reads.h"
#include "rpc/codec.h"

namespace rdx::replication::hermes {

using cluster::KvResult;
using rpc::Task;
using Clock = std::chrono::steady_clock;

namespace {
constexpr auto kReadTimeout = std::chrono::seconds(5);
}  // namespace

std::unique_ptr<ReplicationNode> make_node(const NodeEnv& env) { return std::make_unique<HermesNode>(env); }

std::unique_ptr<ReplicationProtocol> HermesNode::make_worker(cluster::WorkerContext& ctx) {
  return std::make_unique<HermesWorker>(*this, ctx);
}

Status HermesWorker::start_marked() {
  auto& rpc = ctx_.rpc();
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kInv), [this](const rpc::Incoming& in) { serve_inv(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kVal), [this](const rpc::Incoming& in) { serve_val(in); }));
  return rpc.on(msgs_.at(kState), [this](const rpc::Incoming& in) { serve_state(in); });
}

// ---------------------------------------------------------------------------------------------------------------
// Reads: local, once the key is Valid.

Task<KvResult> HermesWorker::get(std::string key) {
  if (std::string bad = invalid_input(key); !bad.empty()) co_return KvResult::failed(Code::kInvalidArgument, bad);
  if (!replicates(key)) co_return co_await read_at(member_connection(key), key);
  if (!ctx_.membership().in_sync())
    co_return KvResult::failed(Code::kUnavailable, "hermes: this node is recovering its copy of the shard");
  // The common case, a Valid key, through the worker's batched local reads (prefetched with the other reads of the
  // loop iteration); an Invalid one (kBusy) waits.
  cluster::Read fast = co_await ctx_.local_reads().read(key, cluster::ReadMode::kCommitted);
  if (fast.status == Code::kOk) {
    if (tag_deleted(fast.version)) co_return KvResult::failed(Code::kNotFound, {});
    KvResult out;
    out.version = fast.version;
    out.value = std::move(fast.value);
    co_return out;
  }
  if (fast.status == Code::kNotFound) co_return KvResult::failed(Code::kNotFound, {});
  Copy c;
  std::string why;
  const Code s = co_await wait_valid(key, Clock::now() + kReadTimeout, &c, &why);
  if (s != Code::kOk) co_return KvResult::failed(s, why);
  if (!c.found || tag_deleted(c.tag)) co_return KvResult::failed(Code::kNotFound, {});
  KvResult out;
  out.version = c.tag;
  out.value = std::move(c.value);
  co_return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Updates.

Task<WriteResult> HermesWorker::write(std::string key, Rmw op) {
  if (std::string bad = invalid_input(key, &op); !bad.empty())
    co_return WriteResult::failed(Code::kInvalidArgument, bad);
  const Members m = members_of(key);
  if (!m.self) co_return co_await write_at(member_connection(key), key, op);
  if (!ctx_.membership().in_sync())
    co_return WriteResult::failed(Code::kUnavailable, "hermes: this node is recovering its copy of the shard");
  // This node's updates of one key take turns (they would only abort each other); a plain SET queued behind another
  // update may be written with it.
  co_return co_await turns_.in_turn(key, m.count() > 1, op, [&] { return update(key, op); });
}

Task<WriteResult> HermesWorker::update(const std::string& key, const Rmw& op) {
  const auto begun = Clock::now();
  uint64_t lost = 0;
  for (;;) {
    Copy base;
    std::string why;
    if (const Code s = co_await wait_valid(key, begun + kUpdateBudget, &base, &why); s != Code::kOk)
      co_return WriteResult::failed(s, why + " (nothing was written)");
    const uint64_t base_tag = base.found ? base.tag : 0;
    std::optional<std::string> current;
    if (base.found && !tag_deleted(base.tag)) current = std::move(base.value);
    const Applied a = apply_rmw(op, current);
    if (a.status != Code::kOk || !a.write) co_return result_of(op, a, current, base_tag, 0);
    // (The planted variant: the paper's plain writes, ts + 2 and never refused; hermes.h says what goes wrong.)
    const bool unconditional = node_.env().faults.unconditional_writes && op.is_plain_write();
    const bool paper = node_.env().faults.unconditional_writes;  // (RMWs: ts + 1, as the paper has them too)
    const uint64_t ts = tag_ts(base_tag) + (unconditional ? 2 : 1 + (paper ? 0 : lost));
    if (ts > kTagMaxTs) co_return WriteResult::failed(Code::kResourceExhausted, "hermes: the key's tags are exhausted");
    const uint64_t tag = pack_tag(ts, ctx_.self(), !a.new_value.has_value());
    const std::string value = a.new_value.value_or(std::string());
    const auto taken = Clock::now();  // before any member holds the tag (replays count from later, hermes.h)
    const Installed here =
        install_invalid(key, tag, value, unconditional ? std::nullopt : std::optional<uint64_t>(base_tag));
    if (here.status == Code::kAborted) continue;  // an INV moved the key on since it was read: evaluate again
    if (here.status != Code::kOk) co_return WriteResult::failed(here.status, "hermes: the store is full");
    WriteResult result = result_of(op, a, current, base_tag, tag);
    result.prior_is_predecessor = !unconditional;  // (the paper's writes are not ordered right after their base)
    if (node_.env().faults.ack_before_replication) {
      // Planted fault (tests only): Valid and acknowledged here before the other members heard of it.
      validate(key, tag);
      rpc::spawn([](HermesWorker* self, std::string k, uint64_t t, std::string v) -> Task<void> {
        co_await self->ctx_.sched().sleep_for(std::chrono::milliseconds(20));
        Newer ignored;
        const Spread s = co_await self->spread(k, t, v, Clock::now() + kOpDeadline, &ignored);
        if (s == Spread::kCommitted) self->send_val(k, t);
      }(this, key, tag, value));
      co_return result;
    }
    Newer newer;
    const Spread s = co_await spread(key, tag, value, taken + kOpDeadline, &newer, unconditional);
    if (s == Spread::kCommitted) {  // (committed even if a newer tag overtook it here since: that one follows it)
      validate(key, tag);
      send_val(key, tag);
      co_return result;
    }
    if (s == Spread::kUnanswered)
      co_return WriteResult::failed(Code::kTimeout,
                                    "hermes: a member of the key's shard did not acknowledge the update; it may or "
                                    "may not have taken effect");
    // Refused: aborted. It runs again on the newer value, but only within its window: later, a replay of its tag may
    // have committed it (hermes.h).
    (void)install_invalid(key, newer.tag, newer.value);
    if (Clock::now() - taken > kOpDeadline)
      co_return WriteResult::failed(Code::kTimeout,
                                    "hermes: the update was overtaken after its deadline; it may or may not have "
                                    "taken effect");
    ++lost;
  }
}

}  // namespace rdx::replication::hermes
