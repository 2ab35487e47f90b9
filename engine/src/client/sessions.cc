#include "client/sessions.h"

#include <fmt/format.h>

#include "cluster/kv_api.h"
#include "store/hashtable.h"

namespace rdx::client {

using rpc::Task;

Sessions::Sessions(Client& client, uint32_t count, uint32_t depth, bool any_member)
    : client_(client), depth_(depth), any_member_(any_member), sessions_(count) {}

Sessions::~Sessions() {
  while (running_ > 0) client_.run_once();
}

Status Sessions::check_session(uint32_t s) const {
  if (s >= count())
    return count() == 0
               ? error(Code::kInvalidArgument, "session {} out of range (this client has no sessions)", s)
               : error(Code::kInvalidArgument, "session {} out of range (this client has 0..{})", s, count() - 1);
  return Status::ok();
}

Result<uint64_t> Sessions::issue(uint32_t s, Request r) {
  RDX_RETURN_IF_ERROR(check_session(s));
  if (r.key.empty() || r.key.size() > cluster::kMaxKeyBytes)
    return error(Code::kInvalidArgument, "key must be 1..{} bytes, not {}", cluster::kMaxKeyBytes, r.key.size());
  if (r.value.size() > store::kMaxValueBytes || r.expected.size() > store::kMaxValueBytes)
    return error(Code::kInvalidArgument, "value and expected value must be at most {} bytes", store::kMaxValueBytes);
  Session& ss = sessions_[s];
  if (ss.rob.size() >= depth_)
    return error(Code::kResourceExhausted, "session {} has {} requests not polled (its ROB holds {}): poll first", s,
                 ss.rob.size(), depth_);
  const uint64_t id = ss.next_id++;
  ss.rob.push_back(Slot{id, std::move(r), false, {}});
  if (!ss.running) {
    ss.running = true;
    ++running_;
    rpc::spawn(drain(s));
  }
  return id;
}

Task<void> Sessions::drain(uint32_t s) {
  Session& ss = sessions_[s];
  while (ss.next_run < ss.next_id) {
    const uint64_t id = ss.next_run++;
    // The slot stays in the ROB until polled, and it cannot be polled before it completes; the deque keeps
    // references to it valid while later requests are issued, but not its index while earlier ones are polled.
    Reply reply = co_await execute(s, ss.rob[id - ss.rob.front().id].request);
    Slot& slot = ss.rob[id - ss.rob.front().id];
    reply.id = id;
    slot.reply = std::move(reply);
    slot.completed = true;
  }
  ss.running = false;
  --running_;
}

Task<Reply> Sessions::execute(uint32_t s, const Request& r) {
  Reply out;
  const Client::Route to = any_member_ ? Client::Route::sticky(s) : Client::Route(false);
  if (r.kind == Request::Kind::kRelaxedRead || r.kind == Request::Kind::kAcquireRead) {
    KvResult kv = co_await client_.get(r.key, to);
    out.status = kv.status;
    out.version = kv.version;
    out.value = std::move(kv.value);
    out.error = std::move(kv.error);
    co_return out;
  }
  Rmw op;
  switch (r.kind) {
    case Request::Kind::kRelaxedWrite:
    case Request::Kind::kReleaseWrite:
      op = Rmw::put(r.value);
      break;
    case Request::Kind::kFaa:
      op = Rmw::add(r.delta);
      break;
    default:  // kWeakCas, kStrongCas (see sessions.h)
      op = Rmw::compare_and_set(r.expected, r.value);
      break;
  }
  WriteResult w = co_await client_.write(r.key, std::move(op), to);
  out.status = w.status;
  out.version = w.version;
  out.applied = w.status == Code::kOk && w.applied;
  out.number = w.number;
  if (w.status == Code::kOk && !w.applied) out.value = std::move(w.old_value);
  out.error = std::move(w.error);
  co_return out;
}

Result<std::optional<Reply>> Sessions::poll(uint32_t s) {
  RDX_RETURN_IF_ERROR(check_session(s));
  client_.run_once(std::chrono::microseconds(0));
  Session& ss = sessions_[s];
  if (ss.rob.empty() || !ss.rob.front().completed) return std::optional<Reply>();
  Reply r = std::move(ss.rob.front().reply);
  ss.rob.pop_front();
  return std::optional<Reply>(std::move(r));
}

Result<std::vector<Reply>> Sessions::poll_all(uint32_t s) {
  RDX_RETURN_IF_ERROR(check_session(s));
  client_.run_once(std::chrono::microseconds(0));
  std::vector<Reply> out;
  Session& ss = sessions_[s];
  while (!ss.rob.empty() && ss.rob.front().completed) {
    out.push_back(std::move(ss.rob.front().reply));
    ss.rob.pop_front();
  }
  return out;
}

Result<Reply> Sessions::run(uint32_t s, Request r) {
  RDX_RETURN_IF_ERROR(check_session(s));
  if (!sessions_[s].rob.empty())
    return error(Code::kInvalidArgument, "session {} has {} requests not polled: poll them before a synchronous call",
                 s, sessions_[s].rob.size());
  if (Result<uint64_t> id = issue(s, std::move(r)); !id) return id.status();
  Session& ss = sessions_[s];
  while (!ss.rob.front().completed) client_.run_once();
  Reply reply = std::move(ss.rob.front().reply);
  ss.rob.pop_front();
  return reply;
}

}  // namespace rdx::client
