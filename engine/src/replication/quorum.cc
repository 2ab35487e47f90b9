#include "replication/quorum.h"

namespace rdx::replication {

namespace {

// Shared by the caller and the per-node requests, which may outlive the caller's wait.
struct Gather {
  QuorumCall call;
  QuorumResult result;
  size_t outstanding = 0;
  bool settled = false;  // the caller was (or is about to be) resumed: later answers are dropped
  std::coroutine_handle<> waiter;
  rpc::Scheduler* sched = nullptr;

  void take(uint16_t node, rpc::Response r) {
    --outstanding;
    if (settled) return;
    const bool counts = call.counts ? call.counts(r) : r.status == Code::kOk;
    result.replies.push_back({node, std::move(r)});
    if (counts) ++result.counted;
    if (result.counted >= call.needed || outstanding == 0) {
      settled = true;
      if (waiter) sched->ready(waiter);
    }
  }
};

rpc::Task<void> ask(std::shared_ptr<Gather> g, rpc::Rpc& rpc, transport::ConnId conn, uint16_t node) {
  rpc::Response r = co_await rpc.call_task(conn, g->call.type, g->call.payload);
  g->take(node, std::move(r));
}

struct Settled {
  Gather* g;
  bool await_ready() const noexcept { return g->settled; }
  void await_suspend(std::coroutine_handle<> h) { g->waiter = h; }
  void await_resume() const noexcept {}
};

}  // namespace

rpc::Task<QuorumResult> quorum_call(cluster::WorkerContext& ctx, QuorumCall call) {
  auto g = std::make_shared<Gather>();
  g->call = std::move(call);
  g->sched = &ctx.sched();
  g->outstanding = g->call.nodes.size();
  if (g->call.needed == 0 || g->outstanding == 0) co_return QuorumResult{};
  for (uint16_t node : g->call.nodes) {
    auto conn = ctx.peer(node);
    if (!conn) {
      rpc::Response down;
      down.status = Code::kUnavailable;
      g->take(node, std::move(down));
      continue;
    }
    rpc::spawn(ask(g, ctx.rpc(), *conn, node));
  }
  co_await Settled{g.get()};
  co_return std::move(g->result);
}

}  // namespace rdx::replication
