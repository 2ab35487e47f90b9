// What a recovering Paxos member copies beyond the records (quorum_recovery.cc): every other member's open slots and
// registrations. Why: its previous life may have promised a ballot or accepted a value that a majority counted, and
// it remembers neither. Every operation that counted it is over (recovery waits out kOpDeadline first), but a value
// it helped decide may still sit uncommitted in the accepted state of the others: taking, for each open slot, the
// highest promise and the accepted value with the highest ballot any other member holds makes this node answer as
// one of them would, so a later proposer still finds that value. Registrations are merged (highest sequence number
// per lane), so the registry's majorities survive the restart too (acceptor.h).
#include <spdlog/spdlog.h>

#include "replication/paxos/paxos.h"
#include "rpc/codec.h"

namespace rdx::replication::paxos {

using rpc::Task;

Task<bool> PaxosWorker::copy_extra(uint16_t source) {
  uint32_t stripe = 0;
  size_t slots = 0, registrations = 0;
  while (stripe < Acceptor::kStripes) {
    auto conn = ctx_.peer(source);
    if (!conn) co_return false;
    rpc::Writer w;
    w.put(stripe);
    rpc::Response r = co_await ctx_.rpc().call_task(*conn, msgs_.at(kOpenSlots), w.data());
    if (r.status != Code::kOk) co_return false;
    rpc::Reader rd(r.payload);
    const auto next = rd.get<uint32_t>();
    const auto open = rd.get<uint32_t>();
    bool valid = next > stripe && next <= Acceptor::kStripes;
    for (uint32_t i = 0; i < open && rd.ok() && valid; ++i) {
      Acceptor::OpenSlot s;
      s.key = std::string(rd.bytes(cluster::kMaxKeyBytes));
      s.state.slot = rd.get<uint64_t>();
      s.state.promised = rd.get<uint64_t>();
      s.state.accepted.ballot = rd.get<uint64_t>();
      s.state.accepted.tag = rd.get<uint64_t>();
      s.state.accepted.blob = std::string(rd.bytes(store::kMaxValueBytes));
      const Accepted& a = s.state.accepted;
      valid = !rd.ok() ||
              (replicates(s.key) && s.state.slot != 0 && s.state.slot <= kTagMaxTs &&
               (a.ballot == 0 ? a.tag == 0 && a.blob.empty()
                              : valid_tag(a.tag) && tag_ts(a.tag) == s.state.slot && valid_blob(a.tag, a.blob)));
      if (rd.ok() && valid) {
        paxos_.acceptor().merge(ctx_.table(), ctx_.session(), s);
        ++slots;
      }
    }
    const auto registered = rd.get<uint32_t>();
    for (uint32_t i = 0; i < registered && rd.ok() && valid; ++i) {
      RmwId id;
      id.lane = rd.get<uint64_t>();
      id.seq = rd.get<uint64_t>();
      if (rd.ok()) paxos_.acceptor().merge_registration(id);
      ++registrations;
    }
    if (!valid || !rd.done()) {
      spdlog::warn("paxos: a malformed page of open slots from {}", ctx_.topology().nodes[source].name);
      co_return false;
    }
    stripe = next;
  }
  spdlog::info("paxos: took {} open slots and {} registrations from {}", slots, registrations,
               ctx_.topology().nodes[source].name);
  co_return true;
}

void PaxosWorker::serve_open_slots(const rpc::Incoming& in) {
  rpc::Reader rd(in.payload);
  const auto first = rd.get<uint32_t>();
  if (!rd.done() || first >= Acceptor::kStripes || !from_member(in))
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  if (!ctx_.membership().in_sync()) return ctx_.rpc().respond(in.reply_to(), Code::kUnavailable);
  std::vector<Acceptor::OpenSlot> slots;
  std::vector<RmwId> registrations;
  uint32_t next = first;
  size_t bytes = 0;
  // Whole stripes, until a page is about full (the first stripe always goes).
  while (next < Acceptor::kStripes && (next == first || bytes < kCopyPageBytes)) {
    const size_t had_slots = slots.size(), had_ids = registrations.size();
    paxos_.acceptor().export_stripe(next++, &slots, &registrations);
    for (size_t i = had_slots; i < slots.size(); ++i)
      bytes += slots[i].key.size() + slots[i].state.accepted.blob.size() + 40;
    bytes += (registrations.size() - had_ids) * 16;
  }
  rpc::Writer w;
  w.put(next).put(static_cast<uint32_t>(slots.size()));
  for (const auto& s : slots)
    w.bytes(s.key)
        .put(s.state.slot)
        .put(s.state.promised)
        .put(s.state.accepted.ballot)
        .put(s.state.accepted.tag)
        .bytes(s.state.accepted.blob);
  w.put(static_cast<uint32_t>(registrations.size()));
  for (const RmwId& id : registrations) w.put(id.lane).put(id.seq);
  ctx_.rpc().respond(in.reply_to(), Code::kOk, w.span());
}

}  // namespace rdx::replication::paxos
