// Primary-backup's single-key operations: reads where a readable copy is, writes at the key's primary.
#include <spdlog/spdlog.h>

#include "cluster/lockword.h"
#include "cluster/record_locks.h"
#include "replication/forward.h"
#include "replication/primary_backup/primary_backup.h"
#include "rpc/codec.h"

namespace rdx::replication::primary_backup {

using cluster::KvResult;
using rpc::Task;
using Clock = std::chrono::steady_clock;

namespace {
// A key held by a writer is read again (GET) or waited for (a write) until this deadline, then reported.
constexpr auto kHeldTimeout = std::chrono::seconds(5);

KvResult unavailable(std::string why) { return KvResult::failed(Code::kUnavailable, std::move(why)); }
}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// Reads.

Task<KvResult> PbWorker::read_once(const std::string& key, bool* busy) {
  const cluster::Topology& t = ctx_.topology();
  const uint16_t primary = cluster::primary_of(ctx_, key);
  *busy = false;
  bool here = ctx_.membership().in_sync() && cluster::is_replica_of(t, ctx_.self(), key) &&
              (primary == ctx_.self() || node_.env().local_backup_reads);
  cluster::Read r;
  if (here) {
    const uint64_t lease_ticket = ctx_.membership().leases().ticket();
    r = co_await ctx_.local_reads().read(key, cluster::ReadMode::kCommitted);
    // A backup that holds a write not yet known committed asks the primary, which knows; so does one that did not
    // hold its leases when it read (it may have been excluded meanwhile, cluster/leases.h). The primary answers
    // only while it still is the primary, with a majority's leases (it may have been deposed meanwhile).
    const auto done_by = ctx_.local_reads().reads_done_by();
    if (primary == ctx_.self() && !cluster::serves_as_primary(ctx_, done_by))
      co_return unavailable("this node lost the leases a primary needs (a majority of the data nodes')");
    if (primary != ctx_.self() &&
        (r.status == Code::kBusy || !cluster::backup_read_covered(ctx_, lease_ticket, done_by)))
      here = false;
  }
  if (!here && primary == ctx_.self()) co_return unavailable("this node is the primary but its copy is not in sync");
  if (!here) {
    auto conn = ctx_.peer(primary);
    if (!conn) co_return unavailable("the primary of this key's shard is not reachable");
    rpc::Writer w;
    w.bytes(key);
    rpc::Response resp = co_await ctx_.rpc().call(*conn, msgs_.at(kGet), w.span());
    r = cluster::decode_read_reply(resp);
  }
  KvResult out;
  *busy = r.status == Code::kBusy;
  out.status = r.status;
  out.version = r.version;
  out.value = std::move(r.value);
  if (r.status == Code::kUnavailable) out.error = "a replica of this key is unavailable";
  co_return out;
}

Task<KvResult> PbWorker::get(std::string key) {
  auto deadline = Clock::now() + kHeldTimeout;
  for (int attempt = 0;; ++attempt) {
    bool busy = false;
    KvResult r = co_await read_once(key, &busy);
    if (!busy) co_return r;
    if (Clock::now() > deadline) co_return unavailable("the key stayed held by a writer that did not finish");
    for (int i = 0; i < std::min(1 << std::min(attempt, 8), 256); ++i) co_await ctx_.sched().yield();
  }
}

Task<cluster::Read> PbWorker::read_committed(std::string key) {
  KvResult r = co_await get(std::move(key));
  co_return cluster::Read{r.status, std::move(r.value), r.version};
}

void PbWorker::serve_get(const rpc::Incoming& in) {
  rpc::Reader r(in.payload);
  std::string key(r.bytes(cluster::kMaxKeyBytes));
  if (!r.done() || key.empty()) return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  if (!ctx_.membership().in_sync()) return ctx_.rpc().respond(in.reply_to(), Code::kUnavailable);
  rpc::spawn(cluster::answer_read_as_primary(ctx_, in.reply_to(), std::move(key), cluster::ReadMode::kCommitted));
}

// ---------------------------------------------------------------------------------------------------------------
// Writes.

Task<WriteResult> PbWorker::write(std::string key, Rmw op) {
  const uint16_t primary = cluster::primary_of(ctx_, key);
  if (primary == ctx_.self()) co_return co_await write_at_primary(std::move(key), std::move(op));
  auto conn = ctx_.peer(primary);
  if (!conn) co_return WriteResult::failed(Code::kUnavailable, "the primary of this key's shard is not reachable");
  co_return co_await forward_write(ctx_, *conn, msgs_.at(kWrite), key, op, "the key's primary");
}

void PbWorker::serve_write(const rpc::Incoming& in) {
  auto req = decode_write_request(in.payload);
  if (!req) {
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument,
                              rpc::as_bytes_of(std::string_view("malformed write request")));
  }
  if (cluster::primary_of(ctx_, req->key) != ctx_.self()) {
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument,
                              rpc::as_bytes_of(std::string_view("this node is not the key's primary")));
  }
  rpc::spawn([](PbWorker* self, rpc::ReplyTo to, WriteRequest r) -> Task<void> {
    respond_write(self->ctx_.rpc(), to, co_await self->write_at_primary(std::move(r.key), std::move(r.op)));
  }(this, in.reply_to(), std::move(*req)));
}

Task<WriteResult> PbWorker::write_at_primary(std::string key, Rmw op) {
  if (!ctx_.membership().in_sync())
    co_return WriteResult::failed(Code::kUnavailable, "the primary of this key is recovering its copy of the shard");
  if (!cluster::serves_as_primary(ctx_, Clock::now()))
    co_return WriteResult::failed(Code::kUnavailable,
                                  "the primary of this key lost the leases of a majority of the nodes");
  // The views now, while this node is the primary: if they change before the write replicates, it fails then.
  Scope scope = begin();
  // The key's turn: writers of this key on this node go one at a time, in arrival order.
  const bool node_wide = ctx_.topology().shards[ctx_.topology().shard_of_key(key)].members.size() > 1;
  co_return co_await turns_.in_turn(key, node_wide, op, [&] { return write_locked(key, op, std::move(scope)); });
}

// With the key's turn: lock the record (transactions may hold it: wait, they finish quickly), evaluate, replicate to
// the backups (applied hidden there), apply here, unlock, then let the backups show it.
Task<WriteResult> PbWorker::write_locked(const std::string& key, const Rmw& op, Scope scope) {
  const uint64_t writer = ctx_.next_writer_id();
  auto deadline = Clock::now() + kHeldTimeout;
  cluster::LockResult lock;
  for (int attempt = 0;; ++attempt) {
    lock = cluster::try_lock(ctx_.table(), ctx_.session(), key, writer);
    if (lock.status != cluster::LockStatus::kHeld) break;
    if (Clock::now() > deadline)
      co_return WriteResult::failed(Code::kUnavailable, "the key stayed locked by a transaction that did not finish");
    for (int i = 0; i < std::min(1 << std::min(attempt, 6), 64); ++i) co_await ctx_.sched().yield();
  }
  if (lock.status == cluster::LockStatus::kNoMemory)
    co_return WriteResult::failed(Code::kResourceExhausted, "the store is full");
  if (lock.status != cluster::LockStatus::kLocked)
    co_return WriteResult::failed(Code::kInvalidArgument, "key not storable");

  std::optional<std::string> current;
  if (lock.existed) {
    std::string value;
    uint64_t version = 0, word = 0;
    store::OpStatus s = ctx_.table().get(ctx_.session(), key, &value, &version, &word);
    if (s == store::OpStatus::kOk && !cluster::lockword::absent(word)) current = std::move(value);
  }
  Applied a = apply_rmw(op, current);
  WriteResult res = result_of(op, a, current, lock.version, lock.version + 1);
  if (!a.write) {
    cluster::release_lock(ctx_.table(), ctx_.session(), key, writer);
    co_return res;
  }

  std::vector<cluster::LogWrite> ws;
  ws.push_back(cluster::LogWrite{key, std::move(a.new_value), lock.version + 1});
  const cluster::LogWrite& w = ws.front();
  if (node_.env().faults.ack_before_replication) {
    // Planted fault (tests only): the write is visible and acknowledged here before the backups have it.
    apply_at_primary(w);
    cluster::release_lock(ctx_.table(), ctx_.session(), key, writer);
    rpc::spawn([](PbWorker* self, Scope sc, uint64_t id, std::vector<cluster::LogWrite> lws) -> Task<void> {
      co_await self->ctx_.sched().sleep_for(std::chrono::milliseconds(2));
      (void)co_await self->replicate(sc, id, lws, cluster::LogMode::kApply);
      co_await self->resolve(sc, id, std::move(lws), cluster::LogMode::kApply, true);
    }(this, std::move(scope), writer, std::move(ws)));
    co_return res;
  }
  // A backup that does not acknowledge is excluded (with a majority's agreement), and the write is then at every
  // replica still counted. A refusal (a backup in another view) or an exclusion not agreed fails it: it is not
  // applied here, and the backups that took it copy the shard again (replicate). A new primary that took it shows it,
  // so the client hears that the outcome is unknown.
  const Code replicated = co_await replicate(scope, writer, ws, cluster::LogMode::kApply);
  if (replicated != Code::kOk) {
    cluster::release_lock(ctx_.table(), ctx_.session(), key, writer);
    co_await resolve(scope, writer, std::move(ws), cluster::LogMode::kApply, false);
    co_return WriteResult::failed(Code::kTimeout,
                                  "the shard's primary changed while the write was replicated: it may or may not have "
                                  "taken effect");
  }
  apply_at_primary(w);
  cluster::release_lock(ctx_.table(), ctx_.session(), key, writer);
  // Not awaited: readable notices are one-way, and the scope (kept by the resolve) ends once they are sent.
  rpc::spawn([](PbWorker* self, Scope sc, uint64_t id, std::vector<cluster::LogWrite> lws) -> Task<void> {
    co_await self->resolve(sc, id, std::move(lws), cluster::LogMode::kApply, true);
  }(this, std::move(scope), writer, std::move(ws)));
  co_return res;
}

}  // namespace rdx::replication::primary_backup
