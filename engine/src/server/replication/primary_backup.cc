#include "server/replication/primary_backup.h"

#include <spdlog/spdlog.h>

#include "common/hash.h"
#include "rpc/codec.h"

namespace rdx::server {

using rpc::Task;

namespace {
KvResult fail(Code c, std::string why) {
  KvResult r;
  r.status = c;
  r.error = std::move(why);
  return r;
}

Code store_code(store::OpStatus s) {
  switch (s) {
    case store::OpStatus::kOk: return Code::kOk;
    case store::OpStatus::kNotFound: return Code::kNotFound;
    case store::OpStatus::kTooLarge: return Code::kInvalidArgument;
    case store::OpStatus::kNoMemory: return Code::kResourceExhausted;
    case store::OpStatus::kStale: return Code::kOk;
    case store::OpStatus::kExists: return Code::kAlreadyExists;
  }
  return Code::kInternal;
}
}  // namespace

void PrimaryBackup::start() {
  auto& rpc = ctx_.rpc();
  rpc.on(kPbGet, [this](const rpc::Incoming& in) {
    rpc::Reader r(in.payload);
    std::string key(r.bytes(kMaxKeyBytes));
    if (!r.done()) return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
    rpc::spawn(serve(in.reply_to(), read_at_primary(std::move(key))));
  });
  rpc.on(kPbWrite, [this](const rpc::Incoming& in) {
    rpc::Reader r(in.payload);
    auto op = static_cast<WriteOp>(r.get<uint8_t>());
    std::string key(r.bytes(kMaxKeyBytes));
    std::string value(r.bytes(store::kMaxValueBytes));
    if (!r.done() || (op != WriteOp::kPut && op != WriteOp::kDel))
      return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
    rpc::spawn(serve(in.reply_to(), write_at_primary(op, std::move(key), std::move(value))));
  });
  rpc.on(kPbReplicate, [this](const rpc::Incoming& in) { apply_replica(in); });
}

bool PrimaryBackup::is_primary_of(std::string_view key, uint16_t* primary) const {
  const Topology& t = ctx_.topology();
  *primary = t.primary_of(t.shard_of_key(key));
  return *primary == ctx_.self();
}

Task<KvResult> PrimaryBackup::get(std::string key) {
  uint16_t primary;
  if (is_primary_of(key, &primary)) co_return co_await read_at_primary(std::move(key));
  rpc::Writer w;
  w.bytes(key);
  co_return co_await forward(primary, kPbGet, w.data());
}

Task<KvResult> PrimaryBackup::put(std::string key, std::string value) {
  uint16_t primary;
  if (is_primary_of(key, &primary)) co_return co_await write_at_primary(WriteOp::kPut, std::move(key), std::move(value));
  rpc::Writer w;
  w.put(static_cast<uint8_t>(WriteOp::kPut)).bytes(key).bytes(value);
  co_return co_await forward(primary, kPbWrite, w.data());
}

Task<KvResult> PrimaryBackup::remove(std::string key) {
  uint16_t primary;
  if (is_primary_of(key, &primary)) co_return co_await write_at_primary(WriteOp::kDel, std::move(key), {});
  rpc::Writer w;
  w.put(static_cast<uint8_t>(WriteOp::kDel)).bytes(key).bytes({});
  co_return co_await forward(primary, kPbWrite, w.data());
}

Task<KvResult> PrimaryBackup::forward(uint16_t primary, rpc::MsgType type, std::string payload) {
  auto conn = ctx_.peer(primary);
  if (!conn) co_return fail(Code::kUnavailable, fmt::format("primary {} is not connected", ctx_.topology().nodes[primary].name));
  rpc::Response resp = co_await ctx_.rpc().call(*conn, type, rpc::as_bytes_of(payload));
  KvResult r;
  r.status = resp.status;
  if (resp.status != Code::kOk) {
    r.error = resp.payload;
    co_return r;
  }
  rpc::Reader rd(resp.payload);
  r.version = rd.get<uint64_t>();
  if (type == kPbGet) r.value = std::string(rd.bytes());
  if (!rd.done()) co_return fail(Code::kInternal, "malformed response from the primary");
  co_return r;
}

Task<void> PrimaryBackup::serve(rpc::ReplyTo to, Task<KvResult> op) {
  KvResult r = co_await std::move(op);
  rpc::Writer w;
  if (r.status == Code::kOk) {
    w.put(r.version);
    if (to.type == kPbGet) w.bytes(r.value);
  } else {
    w.clear();
  }
  ctx_.rpc().respond(to, r.status, r.status == Code::kOk ? w.span() : rpc::as_bytes_of(r.error));
}

Task<KvResult> PrimaryBackup::read_at_primary(std::string key) {
  NodeShared& sh = ctx_.shared();
  if (!sh.in_sync()) co_return fail(Code::kUnavailable, "node is recovering");
  uint16_t primary;
  if (!is_primary_of(key, &primary)) co_return fail(Code::kUnavailable, "not the primary of this key");
  // Wait out an in-flight write to this key (it is applied here but maybe not on every backup yet).
  uint64_t h = hash_key(key);
  while (!sh.key_locks().try_lock(h)) co_await ctx_.sched().yield();
  sh.key_locks().unlock(h);
  KvResult r;
  store::OpStatus s = ctx_.table().get(ctx_.session(), key, &r.value, &r.version);
  r.status = store_code(s);
  co_return r;
}

Task<KvResult> PrimaryBackup::write_at_primary(WriteOp op, std::string key, std::string value) {
  NodeShared& sh = ctx_.shared();
  if (!sh.in_sync()) co_return fail(Code::kUnavailable, "node is recovering");
  uint16_t primary;
  if (!is_primary_of(key, &primary)) co_return fail(Code::kUnavailable, "not the primary of this key");
  if (key.size() > kMaxKeyBytes || value.size() > store::kMaxValueBytes)
    co_return fail(Code::kInvalidArgument, "key or value too large");
  const Topology& topo = ctx_.topology();
  const auto& members = topo.shards[topo.nodes[ctx_.self()].shard].members;
  // Every live backup must be connected before we write, or the write could not reach it.
  for (uint16_t b : members)
    if (b != ctx_.self() && sh.member(b) != MemberState::kFailed && !ctx_.peer(b))
      co_return fail(Code::kUnavailable, fmt::format("replica {} is not connected yet", topo.nodes[b].name));

  uint64_t h = hash_key(key);
  while (!sh.key_locks().try_lock(h)) co_await ctx_.sched().yield();
  uint64_t current = 0;
  store::OpStatus s = ctx_.table().get(ctx_.session(), key, nullptr, &current);
  if (op == WriteOp::kDel && s == store::OpStatus::kNotFound) {
    sh.key_locks().unlock(h);
    co_return fail(Code::kNotFound, "no such key");
  }
  uint64_t version = sh.next_version(current);
  // Apply locally first: a failure here (memory) leaves every replica untouched.
  s = op == WriteOp::kPut ? ctx_.table().put(ctx_.session(), key, value, version)
                          : ctx_.table().remove(ctx_.session(), key, version);
  if (s != store::OpStatus::kOk) {
    sh.key_locks().unlock(h);
    co_return fail(store_code(s), fmt::format("store: {}", store::op_status_name(s)));
  }
  rpc::Writer w;
  w.put(static_cast<uint8_t>(op)).put(version).bytes(key).bytes(value);
  std::vector<Task<Code>> sends;
  std::vector<uint16_t> targets;
  for (uint16_t b : members) {
    if (b == ctx_.self() || sh.member(b) == MemberState::kFailed) continue;
    auto conn = ctx_.peer(b);
    if (!conn) {
      sh.set_member(b, MemberState::kFailed);
      spdlog::warn("primary-backup: replica {} lost its connection; excluded until it rejoins", topo.nodes[b].name);
      continue;
    }
    targets.push_back(b);
    sends.push_back(replicate_to(b, *conn, w.data()));
  }
  std::vector<Code> results = co_await rpc::when_all(std::move(sends));
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i] == Code::kOk) continue;
    sh.set_member(targets[i], MemberState::kFailed);
    spdlog::warn("primary-backup: replica {} did not apply version {} ({}); excluded until it rejoins",
                 topo.nodes[targets[i]].name, version, code_name(results[i]));
  }
  sh.key_locks().unlock(h);
  KvResult r;
  r.version = version;
  co_return r;
}

Task<Code> PrimaryBackup::replicate_to(uint16_t, transport::ConnId conn, std::string payload) {
  rpc::Response resp = co_await ctx_.rpc().call_ackable(conn, kPbReplicate, rpc::as_bytes_of(payload));
  co_return resp.status;
}

void PrimaryBackup::apply_replica(const rpc::Incoming& in) {
  rpc::Reader r(in.payload);
  auto op = static_cast<WriteOp>(r.get<uint8_t>());
  auto version = r.get<uint64_t>();
  std::string_view key = r.bytes(kMaxKeyBytes);
  std::string_view value = r.bytes(store::kMaxValueBytes);
  if (!r.done() || (op != WriteOp::kPut && op != WriteOp::kDel)) {
    spdlog::warn("primary-backup: malformed replication message from node {}", in.peer_node);
    return;  // never acknowledged: the primary times out and excludes us, which is the safe outcome
  }
  ctx_.shared().observe_version(version);
  store::OpStatus s = op == WriteOp::kPut ? ctx_.table().put(ctx_.session(), key, value, version)
                                          : ctx_.table().remove(ctx_.session(), key, version);
  if (s == store::OpStatus::kNoMemory) {
    spdlog::error("primary-backup: out of memory applying a replicated write; not acknowledging");
    return;
  }
  ctx_.rpc().ack(in.reply_to());
}

}  // namespace rdx::server
