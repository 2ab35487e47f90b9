// ABD's writes (coordinator side); reads, replicas and recovery are the quorum register's. See abd.h.
#include "replication/abd/abd.h"

#include <spdlog/spdlog.h>

namespace rdx::replication::abd {

using rpc::Task;
using Clock = std::chrono::steady_clock;

std::unique_ptr<ReplicationNode> make_node(const NodeEnv& env) { return std::make_unique<AbdNode>(env); }

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

namespace {

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

Task<WriteResult> AbdWorker::write(std::string key, Rmw op) {
  if (!op.is_plain_write()) {  // what ABD can do: a plain put or delete
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
  const uint64_t ts = abd_.next_ts(std::hash<std::string>{}(key), tag_ts(q.highest.tag));
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

}  // namespace rdx::replication::abd
