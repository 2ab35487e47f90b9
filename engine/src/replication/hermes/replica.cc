// Hermes' per-key state at a member (install, validate), INV and VAL on both sides, and replays. See hermes.h.
#include <spdlog/spdlog.h>

#include "cluster/lockword.h"
#include "cluster/record_locks.h"
#include "replication/hermes/hermes.h"
#include "replication/quorum.h"
#include "rpc/codec.h"

namespace rdx::replication::hermes {

using namespace cluster::lockword;
using rpc::Task;
using Clock = std::chrono::steady_clock;

Task<HermesWorker::Spread> HermesWorker::spread(const std::string& key, uint64_t tag, const std::string& value,
                                                Clock::time_point deadline, Newer* newer, bool unconditional) {
  std::vector<uint16_t> pending = members_of(key).others;
  rpc::Writer w;
  w.bytes(key).put(tag).put(static_cast<uint8_t>(unconditional ? 1 : 0)).bytes(value);
  for (;;) {
    QuorumCall call;
    call.nodes = pending;
    call.type = msgs_.at(kInv);
    call.payload = w.data();
    call.needed = pending.size();
    QuorumResult got = co_await quorum_call(ctx_, std::move(call));
    std::vector<uint16_t> missing;
    bool refused = false;
    for (const QuorumReply& r : got.replies) {
      if (r.response.status == Code::kOk) continue;
      if (r.response.status == Code::kAborted) {
        rpc::Reader rd(r.response.payload);
        Newer n;
        n.tag = rd.get<uint64_t>();
        n.value = std::string(rd.bytes(store::kMaxValueBytes));
        if (rd.done() && valid_tag(n.tag) && n.tag > tag && valid_blob(n.tag, n.value)) {
          refused = true;
          if (n.tag > newer->tag) *newer = std::move(n);
          continue;
        }
      }
      missing.push_back(r.node);  // down, recovering, or an answer that makes no sense: asked again
    }
    if (refused) co_return Spread::kRefused;
    if (missing.empty()) co_return Spread::kCommitted;
    if (Clock::now() > deadline) co_return Spread::kUnanswered;
    pending = std::move(missing);
    co_await ctx_.sched().sleep_for(std::chrono::milliseconds(5));
  }
}

void HermesWorker::send_val(const std::string& key, uint64_t tag) {
  rpc::Writer w;
  w.bytes(key).put(tag);
  for (uint16_t n : members_of(key).others)
    if (auto conn = ctx_.peer(n)) (void)ctx_.rpc().send_oneway(*conn, msgs_.at(kVal), w.span());
}

// An INV installs a newer tag Invalid and is acknowledged; an older one is refused with what this member holds. A
// member not in sync acknowledges nothing (its copy is not the shard's yet).
void HermesWorker::serve_inv(const rpc::Incoming& in) {
  rpc::Reader rd(in.payload);
  const std::string key(rd.bytes(cluster::kMaxKeyBytes));
  const auto tag = rd.get<uint64_t>();
  const auto unconditional = rd.get<uint8_t>();
  const std::string value(rd.bytes(store::kMaxValueBytes));
  if (!rd.done() || unconditional > 1 || !from_member(in) || !valid_tag(tag) || !valid_blob(tag, value) ||
      !replicates(key))
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  if (!ctx_.membership().in_sync()) return ctx_.rpc().respond(in.reply_to(), Code::kUnavailable);
  Installed r = install_invalid(key, tag, value);
  if (r.status != Code::kOk) return ctx_.rpc().respond(in.reply_to(), r.status);
  if (!r.newer || unconditional == 1) return ctx_.rpc().respond(in.reply_to(), Code::kOk);
  rpc::Writer w;
  w.put(r.newer->tag).bytes(r.newer->value);
  ctx_.rpc().respond(in.reply_to(), Code::kAborted, w.span());
}

void HermesWorker::serve_val(const rpc::Incoming& in) {
  rpc::Reader rd(in.payload);
  const std::string key(rd.bytes(cluster::kMaxKeyBytes));
  const auto tag = rd.get<uint64_t>();
  if (!rd.done() || !from_member(in) || !valid_tag(tag) || !replicates(key)) return;
  validate(key, tag);
}

// What this node holds Invalid, sent to every member again: committed when all acknowledge; a refusal's newer tag is
// installed here instead (and replayed in its turn if it stays Invalid).
Task<void> HermesWorker::replay(std::string key, uint64_t tag, std::string value) {
  Newer newer;
  const Spread s = co_await spread(key, tag, value, Clock::now() + kOpDeadline, &newer);
  if (s == Spread::kCommitted) {
    validate(key, tag);
    send_val(key, tag);
  } else if (s == Spread::kRefused) {
    (void)install_invalid(key, newer.tag, newer.value);
  }
  replaying_.erase(key);
}

void HermesWorker::serve_state(const rpc::Incoming& in) {
  rpc::Reader rd(in.payload);
  const std::string key(rd.bytes(cluster::kMaxKeyBytes));
  if (!rd.done() || !from_member(in) || !replicates(key))
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  if (!ctx_.membership().in_sync()) return ctx_.rpc().respond(in.reply_to(), Code::kUnavailable);
  const Copy c = copy_of(key);
  rpc::Writer w;
  w.put(c.found ? c.tag : uint64_t{0}).put(static_cast<uint8_t>(c.found && !c.marked ? 1 : 0)).bytes(c.value);
  ctx_.rpc().respond(in.reply_to(), Code::kOk, w.span());
}

// A member holding `tag` Valid shows it committed: Valid here too. A newer tag is installed (Invalid).
Task<void> HermesWorker::ask(std::string key, uint64_t tag) {
  QuorumCall call;
  call.nodes = members_of(key).others;
  call.type = msgs_.at(kState);
  rpc::Writer w;
  w.bytes(key);
  call.payload = w.data();
  call.needed = call.nodes.size();
  QuorumResult got = co_await quorum_call(ctx_, std::move(call));
  for (const QuorumReply& r : got.replies) {
    if (r.response.status != Code::kOk) continue;
    rpc::Reader rd(r.response.payload);
    const auto their = rd.get<uint64_t>();
    const auto valid = rd.get<uint8_t>();
    const std::string value(rd.bytes(store::kMaxValueBytes));
    if (!rd.done() || valid > 1 || (their != 0 && (!valid_tag(their) || !valid_blob(their, value)))) continue;
    if (their == tag && valid == 1) validate(key, tag);
    if (their > tag) (void)install_invalid(key, their, value);
  }
  asking_.erase(key);
}

Task<Code> HermesWorker::wait_valid(const std::string& key, Clock::time_point deadline, Copy* out, std::string* why) {
  uint64_t stalled_tag = 0;
  auto stalled_since = Clock::now();
  bool asked = false;  // (once per tag)
  for (int attempt = 0;; ++attempt) {
    Copy c = copy_of(key);
    if (!c.found || !c.marked) {
      *out = std::move(c);
      co_return Code::kOk;
    }
    const auto now = Clock::now();
    if (c.tag != stalled_tag) {
      stalled_tag = c.tag;
      stalled_since = now;
      asked = false;
    } else if (!asked && now - stalled_since > kAskAfter && asking_.insert(key).second) {
      asked = true;
      rpc::spawn(ask(key, c.tag));
    } else if (now - stalled_since > kReplayAfter && replaying_.insert(key).second) {
      rpc::spawn(replay(key, c.tag, std::move(c.value)));
      stalled_since = now;
    }
    if (now > deadline) {
      *why = "hermes: the key stayed invalid (an update of it did not reach every member of its shard)";
      co_return Code::kUnavailable;
    }
    if (attempt < 16) {
      co_await ctx_.sched().yield();
    } else {
      co_await ctx_.sched().sleep_for(std::chrono::microseconds(200));
    }
  }
}

}  // namespace rdx::replication::hermes
