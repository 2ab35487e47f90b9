#include "txn/reads.h"

#include "cluster/kv_api.h"
#include "rpc/codec.h"

namespace rdx::txn {

Status ReadPath::start() {
  RDX_RETURN_IF_ERROR(remote_.start());
  return ctx_.rpc().on(kReadAtReplica, [this](const rpc::Incoming& in) {
    rpc::Reader r(in.payload);
    std::string key(r.bytes(cluster::kMaxKeyBytes));
    if (!r.done() || key.empty()) return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
    if (!ctx_.membership().in_sync() || !cluster::is_replica_of(ctx_.topology(), ctx_.self(), key))
      return ctx_.rpc().respond(in.reply_to(), Code::kUnavailable);
    rpc::spawn(cluster::answer_read_as_primary(ctx_, in.reply_to(), std::move(key), cluster::ReadMode::kLatest));
  });
}

bool ReadPath::reads_locally(std::string_view key, bool* at_backup) const {
  const cluster::Topology& t = ctx_.topology();
  if (!ctx_.membership().in_sync() || !cluster::is_replica_of(t, ctx_.self(), key)) return false;
  *at_backup = cluster::primary_of(ctx_, key) != ctx_.self();
  return !*at_backup || options_.local_backup_reads;
}

rpc::Task<Read> ReadPath::read(std::string key) {
  bool at_backup = false;
  if (reads_locally(key, &at_backup)) {
    const uint64_t lease_ticket = ctx_.membership().leases().ticket();
    Read r = co_await ctx_.local_reads().read(key, cluster::ReadMode::kLatest);
    // A backup's copy counts only if it held its leases when it read (cluster/leases.h); else ask the primary. The
    // primary's only while it still is the primary with a majority's leases (else it may have been deposed).
    const auto done_by = ctx_.local_reads().reads_done_by();
    if (at_backup ? cluster::backup_read_covered(ctx_, lease_ticket, done_by)
                  : cluster::serves_as_primary(ctx_, done_by)) {
      ++counters_.local_reads;
      if (at_backup) ++counters_.local_backup_reads;
      co_return r;
    }
  }
  co_return co_await read_at_primary(std::move(key));
}

rpc::Task<Read> ReadPath::read_at_primary(std::string key) {
  ++counters_.remote_reads;
  // The node first: the argument that moves `key` may be initialized before primary_of(key) is evaluated.
  const uint16_t primary = cluster::primary_of(ctx_, key);
  if (primary == ctx_.self()) co_return Read{Code::kUnavailable, {}, 0};  // this primary lost its leases
  if (onesided_) co_return co_await remote_.read(key, primary);
  auto conn = ctx_.peer(primary);
  if (!conn) co_return Read{Code::kUnavailable, {}, 0};
  rpc::Writer w;
  w.bytes(key);
  rpc::Response resp = co_await ctx_.rpc().call(*conn, kReadAtReplica, w.span());
  co_return cluster::decode_read_reply(resp);
}

}  // namespace rdx::txn
