// RPC messages per second of 16-byte messages over the tcp transport (loopback), with opportunistic batching on
// and off, measured in one run. A client thread keeps `kInFlight` request/response calls in flight on coroutines;
// a server thread answers each with a 16-byte response. items_per_second counts requests (each is two messages).
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "common/memory.h"
#include "rpc/rpc.h"

namespace rdx::rpc {
namespace {

constexpr int kInFlight = 64;
constexpr int kCallsPerIteration = 20000;

struct Msg {
  uint64_t a, b;  // 16 bytes
};

struct Server {
  std::unique_ptr<transport::Transport> t;
  std::atomic<bool> stop{false};
  std::thread th;
  explicit Server(bool batching) {
    transport::TransportConfig tc;
    tc.node = 2;
    tc.listen_host = "127.0.0.1";
    tc.hugepages = false;
    t = transport::make_transport(tc).value();
    th = std::thread([this, batching] {
      auto ep = t->create_endpoint(0).value();
      Scheduler s;
      RpcConfig rc;
      rc.batching = batching;
      Rpc rpc(*ep, s, rc);
      if (!rpc.on(1, [&rpc](const Incoming& in) { rpc.respond(in.reply_to(), Code::kOk, in.payload); }).is_ok())
        std::abort();
      while (!stop.load(std::memory_order_relaxed)) {
        rpc.poll();
        rpc.flush();
      }
    });
  }
  ~Server() {
    stop = true;
    th.join();
  }
};

Task<void> caller(Rpc& rpc, transport::ConnId c, int& remaining, int& active) {
  Msg m{1, 2};
  while (remaining > 0) {
    --remaining;
    Response r = co_await rpc.call(c, 1, as_bytes_of(m));
    if (r.status != Code::kOk) std::abort();
  }
  --active;
}

void BM_RpcSmallMessages(benchmark::State& state) {
  bool batching = state.range(0) != 0;
  Server server(batching);
  transport::TransportConfig tc;
  tc.node = 1;
  tc.hugepages = false;
  auto t = transport::make_transport(tc).value();
  auto ep = t->create_endpoint(0).value();
  Scheduler s;
  RpcConfig rc;
  rc.batching = batching;
  Rpc rpc(*ep, s, rc);
  bool up = false;
  rpc.on_connection([&](const transport::Completion& c) { up |= c.kind == transport::CompletionKind::kConnUp; });
  auto conn = ep->connect({2, "127.0.0.1", server.t->listen_port(), ""}, 0).value();
  while (!up) rpc.poll();
  uint64_t packets0 = 0;
  for (auto _ : state) {
    int remaining = kCallsPerIteration, active = kInFlight;
    for (int i = 0; i < kInFlight; ++i) spawn(caller(rpc, conn, remaining, active));
    while (active > 0) {
      rpc.poll();
      s.run_ready();
      rpc.flush();
    }
  }
  state.SetItemsProcessed(state.iterations() * kCallsPerIteration);
  packets0 = rpc.stats().packets_sent;
  state.counters["msgs_per_packet"] =
      static_cast<double>(rpc.stats().messages_sent) / static_cast<double>(packets0 ? packets0 : 1);
}
BENCHMARK(BM_RpcSmallMessages)
    ->ArgName("batching")
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

}  // namespace
}  // namespace rdx::rpc

BENCHMARK_MAIN();
