#pragma once
// The native client library (rdx-bench and in-cluster clients): single-key GET/PUT/DELETE over the same transport
// and RPC layers as the nodes, routed to the primary of the key's shard. One Client per thread; each keeps many
// operations in flight as coroutines on its scheduler, driven by run_once().
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rpc/rpc.h"
#include "server/kv_api.h"
#include "server/topology.h"

namespace rdx::client {

using server::KvResult;

class ClientTransport {
 public:
  // One transport for `threads` clients of this process (client node ids are random, >= kFirstClientNode).
  static Result<std::unique_ptr<ClientTransport>> create(const server::Topology& topo, uint16_t threads);
  transport::Transport& transport() { return *t_; }
  const server::Topology& topology() const { return topo_; }

 private:
  ClientTransport(server::Topology topo, std::unique_ptr<transport::Transport> t)
      : topo_(std::move(topo)), t_(std::move(t)) {}
  server::Topology topo_;
  std::unique_ptr<transport::Transport> t_;
};

class Client {
 public:
  // Creates the endpoint of client thread `thread`; call from that thread.
  static Result<std::unique_ptr<Client>> create(ClientTransport& ct, uint16_t thread);

  // Connects to worker (thread % workers) of every data node and waits until the primaries are reachable.
  Status connect(std::chrono::milliseconds timeout);

  rpc::Task<KvResult> get(std::string key);
  rpc::Task<KvResult> put(std::string key, std::string value);
  rpc::Task<KvResult> remove(std::string key);

  // One iteration: poll the network, resume ready coroutines, flush. Blocks up to `idle_wait` when nothing happened
  // for a while (so clients do not burn a core while waiting).
  void run_once(std::chrono::microseconds idle_wait = std::chrono::microseconds(1000));
  rpc::Scheduler& sched() { return sched_; }
  rpc::Rpc& rpc() { return *rpc_; }
  bool connected_to_primaries() const;

 private:
  Client(ClientTransport& ct, uint16_t thread) : ct_(ct), thread_(thread) {}
  rpc::Task<KvResult> call(std::string_view key, rpc::MsgType type, std::string payload);
  void on_conn(const transport::Completion& c);

  ClientTransport& ct_;
  uint16_t thread_;
  std::unique_ptr<transport::Endpoint> ep_;
  rpc::Scheduler sched_;
  std::unique_ptr<rpc::Rpc> rpc_;
  struct Peer {
    std::optional<transport::ConnId> conn;
    bool up = false;
  };
  std::vector<Peer> peers_;
  int idle_ = 0;
};

}  // namespace rdx::client
