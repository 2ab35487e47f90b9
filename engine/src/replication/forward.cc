// Forwarded single-key writes. See forward.h.
#include "replication/forward.h"

#include <fmt/format.h>

#include "rpc/codec.h"

namespace rdx::replication {

rpc::Task<WriteResult> forward_write(cluster::WorkerContext& ctx, transport::ConnId conn, rpc::MsgType type,
                                     const std::string& key, const Rmw& op, std::string_view to) {
  rpc::Writer w;
  w.bytes(key);
  op.encode(w);
  rpc::Response resp = co_await ctx.rpc().call(conn, type, w.span(), kForwardTimeout);
  if (resp.status == Code::kUnavailable || resp.status == Code::kTimeout)
    co_return WriteResult::failed(
        Code::kTimeout,
        fmt::format("{} did not answer (it may have failed): the write may or may not have taken effect", to));
  if (resp.status != Code::kOk) co_return WriteResult::failed(resp.status, std::string(resp.payload));
  WriteResult out;
  rpc::Reader rd(resp.payload);
  if (!WriteResult::decode(rd, &out) || !rd.done())
    co_return WriteResult::failed(Code::kInternal, fmt::format("malformed answer from {}", to));
  co_return out;
}

std::optional<WriteRequest> decode_write_request(std::span<const std::byte> payload) {
  rpc::Reader rd(payload);
  WriteRequest req;
  req.key = std::string(rd.bytes(cluster::kMaxKeyBytes));
  if (!Rmw::decode(rd, &req.op) || !rd.done() || req.key.empty()) return std::nullopt;
  return req;
}

void respond_write(rpc::Rpc& rpc, const rpc::ReplyTo& to, const WriteResult& result) {
  rpc::Writer w;
  result.encode(w);
  rpc.respond(to, Code::kOk, w.span());
}

}  // namespace rdx::replication
