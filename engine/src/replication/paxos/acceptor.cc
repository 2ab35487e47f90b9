// Classic Paxos's acceptor. See acceptor.h.
#include "replication/paxos/acceptor.h"

#include <cstring>

#include "replication/quorum_register.h"

namespace rdx::replication::paxos {

std::string make_blob(RmwId id, std::string_view value) {
  std::string b(kRmwIdBytes, '\0');
  std::memcpy(b.data(), &id.lane, 8);
  std::memcpy(b.data() + 8, &id.seq, 8);
  b.append(value);
  return b;
}

RmwId blob_id(std::string_view blob) {
  RmwId id;
  std::memcpy(&id.lane, blob.data(), 8);
  std::memcpy(&id.seq, blob.data() + 8, 8);
  return id;
}

namespace {

// The newest committed (tag, blob) of `key` here; tag 0 when none.
uint64_t committed_tag(store::HashTable& t, store::Session& s, const std::string& key, std::string* blob) {
  uint64_t tag = 0;
  if (t.get(s, key, blob, &tag) != store::OpStatus::kOk) {
    blob->clear();
    return 0;
  }
  return tag;
}

AcceptorReply committed(uint64_t tag, std::string blob) {
  AcceptorReply r;
  r.verdict = Verdict::kCommitted;
  r.tag = tag;
  r.blob = std::move(blob);
  return r;
}

AcceptorReply verdict(Verdict v, uint64_t ballot = 0) {
  AcceptorReply r;
  r.verdict = v;
  r.ballot = ballot;
  return r;
}

}  // namespace

Acceptor::KeyStripe& Acceptor::stripe_of(std::string_view key) {
  const uint64_t h = std::hash<std::string_view>{}(key);
  return keys_[(h ^ (h >> 31)) % kStripes];
}

void Acceptor::note(RmwId id) {
  LaneStripe& ls = lanes_of(id.lane);
  std::lock_guard<std::mutex> lk(ls.mu);
  uint64_t& seq = ls.registered[id.lane];
  seq = std::max(seq, id.seq);
}

bool Acceptor::registered(RmwId id) const {
  const LaneStripe& ls = lanes_of(id.lane);
  std::lock_guard<std::mutex> lk(ls.mu);
  auto it = ls.registered.find(id.lane);
  return it != ls.registered.end() && it->second >= id.seq;
}

Code Acceptor::commit_locked(KeyStripe& st, store::HashTable& t, store::Session& s, const std::string& key,
                             uint64_t tag, std::string_view blob) {
  if (blob.size() < kRmwIdBytes) return Code::kInvalidArgument;
  switch (t.put(s, key, blob, tag)) {
    case store::OpStatus::kOk:
    case store::OpStatus::kStale:  // a newer slot is committed here: this one was before it
      break;
    case store::OpStatus::kNoMemory:
      return Code::kResourceExhausted;
    default:
      return Code::kInvalidArgument;
  }
  note(blob_id(blob));  // committed values are decided: the operation took effect, wherever it is installed
  auto it = st.open.find(key);
  if (it != st.open.end() && it->second.slot <= tag_ts(tag)) st.open.erase(it);
  return Code::kOk;
}

SlotState* Acceptor::enter_slot(KeyStripe& st, store::HashTable& t, store::Session& s, const std::string& key,
                                uint64_t slot, AcceptorReply* refusal) {
  std::string blob;
  const uint64_t tag = committed_tag(t, s, key, &blob);
  if (tag_ts(tag) >= slot) {
    *refusal = committed(tag, std::move(blob));
    return nullptr;
  }
  if (tag_ts(tag) + 1 < slot) {
    *refusal = verdict(Verdict::kBehind);
    return nullptr;
  }
  SlotState& open = st.open[key];
  if (open.slot < slot) open = SlotState{slot, 0, {}};
  if (open.slot > slot) {  // (a newer slot merged in by recovery)
    *refusal = verdict(Verdict::kNack, open.promised);
    return nullptr;
  }
  return &open;
}

Code Acceptor::commit(store::HashTable& t, store::Session& s, const std::string& key, uint64_t tag,
                      std::string_view blob) {
  KeyStripe& st = stripe_of(key);
  std::lock_guard<std::mutex> lk(st.mu);
  return commit_locked(st, t, s, key, tag, blob);
}

AcceptorReply Acceptor::prepare(store::HashTable& t, store::Session& s, const std::string& key, uint64_t slot,
                                uint64_t ballot, uint64_t base_tag, std::string_view base_blob, RmwId asking) {
  KeyStripe& st = stripe_of(key);
  std::lock_guard<std::mutex> lk(st.mu);
  if (base_tag != 0 && commit_locked(st, t, s, key, base_tag, base_blob) != Code::kOk) return verdict(Verdict::kBehind);
  if (registered(asking)) return verdict(Verdict::kRegistered);
  AcceptorReply refusal;
  SlotState* open = enter_slot(st, t, s, key, slot, &refusal);
  if (open == nullptr) return refusal;
  if (ballot <= open->promised) return verdict(Verdict::kNack, open->promised);
  open->promised = ballot;
  AcceptorReply r = verdict(Verdict::kPromised);
  r.accepted = open->accepted;
  return r;
}

AcceptorReply Acceptor::accept(store::HashTable& t, store::Session& s, const std::string& key, uint64_t slot,
                               uint64_t ballot, uint64_t tag, std::string_view blob) {
  KeyStripe& st = stripe_of(key);
  std::lock_guard<std::mutex> lk(st.mu);
  AcceptorReply refusal;
  SlotState* open = enter_slot(st, t, s, key, slot, &refusal);
  if (open == nullptr) return refusal;
  if (ballot < open->promised) return verdict(Verdict::kNack, open->promised);
  open->promised = ballot;
  open->accepted = Accepted{ballot, tag, std::string(blob)};
  return verdict(Verdict::kAccepted);
}

void Acceptor::export_stripe(size_t stripe, std::vector<OpenSlot>* slots, std::vector<RmwId>* registrations) const {
  {
    KeyStripe& st = keys_[stripe];
    std::lock_guard<std::mutex> lk(st.mu);
    for (const auto& [key, state] : st.open) slots->push_back(OpenSlot{key, state});
  }
  const LaneStripe& ls = lanes_[stripe];
  std::lock_guard<std::mutex> lk(ls.mu);
  for (const auto& [lane, seq] : ls.registered) registrations->push_back(RmwId{lane, seq});
}

void Acceptor::merge(store::HashTable& t, store::Session& s, const OpenSlot& in) {
  KeyStripe& st = stripe_of(in.key);
  std::lock_guard<std::mutex> lk(st.mu);
  std::string blob;
  if (tag_ts(committed_tag(t, s, in.key, &blob)) >= in.state.slot) return;
  SlotState& open = st.open[in.key];
  if (open.slot > in.state.slot) return;
  if (open.slot < in.state.slot) {
    open = in.state;
    return;
  }
  open.promised = std::max(open.promised, in.state.promised);
  if (in.state.accepted.ballot > open.accepted.ballot) open.accepted = in.state.accepted;
}

void Acceptor::merge_registration(RmwId id) { note(id); }

size_t Acceptor::open_slots() const {
  size_t n = 0;
  for (KeyStripe& st : keys_) {
    std::lock_guard<std::mutex> lk(st.mu);
    n += st.open.size();
  }
  return n;
}

}  // namespace rdx::replication::paxos
