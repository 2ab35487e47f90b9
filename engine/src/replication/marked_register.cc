// Marked copies (install, unmark) and forwarded operations. See marked_register.h.
#include "replication/marked_register.h"

#include <spdlog/spdlog.h>

#include "cluster/local_reads.h"
#include "cluster/lockword.h"
#include "cluster/record_locks.h"
#include "replication/forward.h"
#include "rpc/codec.h"

namespace rdx::replication {

using namespace cluster::lockword;
using cluster::KvResult;
using rpc::Task;

std::string MarkedWorker::invalid_input(std::string_view key, const Rmw* op) const {
  if (key.empty() || key.size() > cluster::kMaxKeyBytes)
    return fmt::format("{}: keys are 1 to {} bytes", protocol(), cluster::kMaxKeyBytes);
  if (op && (op->value.size() > store::kMaxValueBytes || op->expected.size() > store::kMaxValueBytes))
    return "value over the size limit";
  return {};
}

MarkedWorker::Copy MarkedWorker::copy_of(const std::string& key) {
  Copy c;
  uint64_t lock = 0;
  if (ctx_.table().get(ctx_.session(), key, &c.value, &c.tag, &lock) != store::OpStatus::kOk) return Copy{};
  c.found = true;
  c.marked = (lock & kNotReadable) != 0;
  return c;
}

KvResult MarkedWorker::as_read(uint64_t tag, std::string value) {
  if (tag == 0 || tag_deleted(tag)) return KvResult::failed(Code::kNotFound, {});
  KvResult out;
  out.version = tag;
  out.value = std::move(value);
  return out;
}

MarkedWorker::Installed MarkedWorker::install_copy(const std::string& key, uint64_t tag, std::string_view value,
                                                   bool readable, std::optional<uint64_t> only_over) {
  std::lock_guard<std::mutex> lk(marked_.stripe(KeyTurns::hash(key)));
  Copy c = copy_of(key);
  Installed out;
  if (only_over && ((c.found ? c.tag : 0) != *only_over || (c.found && c.marked))) {
    out.status = Code::kAborted;  // the writer's base moved on: it evaluates again
    return out;
  }
  if (c.found && c.tag >= tag) {
    if (c.tag > tag) out.newer = Newer{c.tag, std::move(c.value)};
    return out;
  }
  // A marked install marks first: no reader sees the new value unmarked. (A new record is created marked.)
  if (c.found && !readable) cluster::set_lock_bits(ctx_.table(), ctx_.session(), key, kNotReadable);
  switch (ctx_.table().put(ctx_.session(), key, value, tag, nullptr, readable ? 0 : kNotReadable)) {
    case store::OpStatus::kOk:
      break;
    case store::OpStatus::kNoMemory:
      out.status = Code::kResourceExhausted;
      break;
    default:
      out.status = Code::kInternal;
      spdlog::error("{}: could not install '{}' at tag {:#x}", protocol(), key, tag);
  }
  return out;
}

void MarkedWorker::unmark(const std::string& key, uint64_t tag) {
  std::lock_guard<std::mutex> lk(marked_.stripe(KeyTurns::hash(key)));
  Copy c = copy_of(key);
  if (c.found && c.tag == tag && c.marked) cluster::clear_lock_bits(ctx_.table(), ctx_.session(), key, kNotReadable);
}

Status MarkedWorker::start_protocol() {
  auto& rpc = ctx_.rpc();
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(forwarded_), [this](const rpc::Incoming& in) { serve_forwarded_read(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(forwarded_ + 1), [this](const rpc::Incoming& in) { serve_forwarded_write(in); }));
  return start_marked();
}

// ---------------------------------------------------------------------------------------------------------------
// Keys of other shards.

std::optional<transport::ConnId> MarkedWorker::member_connection(std::string_view key) const {
  const cluster::Topology& t = ctx_.topology();
  for (uint16_t id : t.shards[t.shard_of_key(key)].members)
    if (t.nodes[id].role == cluster::Role::kData)
      if (auto conn = ctx_.peer(id)) return conn;
  return std::nullopt;
}

Task<KvResult> MarkedWorker::read_at(std::optional<transport::ConnId> conn, const std::string& key) {
  if (!conn)
    co_return KvResult::failed(Code::kUnavailable,
                               fmt::format("{}: no member of the key's shard is reachable", protocol()));
  rpc::Writer w;
  w.bytes(key);
  cluster::Read r = cluster::decode_read_reply(co_await ctx_.rpc().call(*conn, msgs_.at(forwarded_), w.span()));
  if (r.status != Code::kOk && r.status != Code::kNotFound)
    co_return KvResult::failed(r.status,
                               fmt::format("{}: the member of the key's shard could not read it", protocol()));
  KvResult out;
  out.status = r.status;
  out.version = r.version;
  out.value = std::move(r.value);
  co_return out;
}

Task<WriteResult> MarkedWorker::write_at(std::optional<transport::ConnId> conn, const std::string& key, const Rmw& op) {
  if (!conn)
    co_return WriteResult::failed(
        Code::kUnavailable, fmt::format("{}: the member of the key's shard that writes is not reachable", protocol()));
  co_return co_await forward_write(ctx_, *conn, msgs_.at(forwarded_ + 1), key, op,
                                   fmt::format("{}: the member of the key's shard", protocol()));
}

// A forwarded operation runs as this node's own client's would (a write that is not this node's to order goes on).
void MarkedWorker::serve_forwarded_read(const rpc::Incoming& in) {
  rpc::Reader rd(in.payload);
  std::string key(rd.bytes(cluster::kMaxKeyBytes));
  if (!rd.done() || !from_data_node(in) || !replicates(key))
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  rpc::spawn([](MarkedWorker* self, rpc::ReplyTo to, std::string k) -> Task<void> {
    KvResult r = co_await self->get(std::move(k));
    cluster::respond_read(self->ctx_.rpc(), to, cluster::Read{r.status, std::move(r.value), r.version});
  }(this, in.reply_to(), std::move(key)));
}

void MarkedWorker::serve_forwarded_write(const rpc::Incoming& in) {
  auto req = decode_write_request(in.payload);
  if (!req || !from_data_node(in) || !replicates(req->key))
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument,
                              rpc::as_bytes_of(fmt::format("{}: malformed write request", protocol())));
  rpc::spawn([](MarkedWorker* self, rpc::ReplyTo to, WriteRequest r) -> Task<void> {
    respond_write(self->ctx_.rpc(), to, co_await self->write(std::move(r.key), std::move(r.op)));
  }(this, in.reply_to(), std::move(*req)));
}

}  // namespace rdx::replication
