#pragma once
// The native client library (rdx-bench and in-cluster clients): single-key GET/PUT/DELETE over the same transport
// and RPC layers as the nodes, routed to a member of the key's shard: its first primary while that one is
// connected, else the next member that is (any member serves them: a backup forwards to the shard's current
// primary, so a client goes on through a failover). One Client per thread; each keeps many
// operations in flight as coroutines on its scheduler, driven by run_once().
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/kv_api.h"
#include "cluster/topology.h"
#include "replication/ops.h"
#include "rpc/rpc.h"

namespace rdx::client {

using cluster::KvResult;
using replication::Rmw;
using replication::WriteResult;

class ClientTransport {
 public:
  // One transport for `threads` clients of this process (client node ids are random, >= kFirstClientNode).
  // `call_timeout`: how long a request may wait for its response (long for benchmark control calls).
  static Result<std::unique_ptr<ClientTransport>> create(
      const cluster::Topology& topo, uint16_t threads,
      std::chrono::milliseconds call_timeout = std::chrono::seconds(5));
  transport::Transport& transport() { return *t_; }
  const cluster::Topology& topology() const { return topo_; }
  std::chrono::milliseconds call_timeout() const { return call_timeout_; }

 private:
  ClientTransport(cluster::Topology topo, std::unique_ptr<transport::Transport> t, std::chrono::milliseconds timeout)
      : topo_(std::move(topo)), t_(std::move(t)), call_timeout_(timeout) {}
  cluster::Topology topo_;
  std::unique_ptr<transport::Transport> t_;
  std::chrono::milliseconds call_timeout_;
};

class Client {
 public:
  // Whether a failed result came from this client without a request sent (no connection to the node): the
  // operation had no effect anywhere.
  static bool never_sent(const KvResult& r);
  static bool never_sent(const WriteResult& r);

  // Creates the endpoint of client thread `thread`; call from that thread.
  static Result<std::unique_ptr<Client>> create(ClientTransport& ct, uint16_t thread);

  // Connects to worker (thread % workers) of every data node and waits until the first primaries are reachable,
  // or, after a second, a member of every shard (a first primary may be down: another member serves its keys).
  // `wait_for` (if given): these nodes instead.
  Status connect(std::chrono::milliseconds timeout, const std::vector<uint16_t>* wait_for = nullptr);
  // The connection to `node`, if it is up.
  std::optional<transport::ConnId> connection(uint16_t node) const {
    if (node >= peers_.size() || !up(node)) return std::nullopt;
    return peers_[node].conn;
  }

  // Sent to the key's primary, or with `any_member` to the members of its shard in turn (among those this client
  // is connected to), or with a sticky route to one member per slot. A backup answers a read from its copy when
  // the cluster allows local backup reads; what a member does with a write is the replication protocol's
  // (primary-backup forwards it to the primary, the leaderless protocols coordinate it there).
  struct Route {
    bool any_member = false;
    std::optional<uint32_t> slot;  // with any_member: member slot % members (the next connected one when it is down)
    Route(bool any = false) : any_member(any) {}  // NOLINT(google-explicit-constructor): the flag it extends
    // One member for every request of `slot`: a session stays on one node, as a protocol whose reads are
    // sequentially consistent per node (zab) needs for a session to read its own writes.
    static Route sticky(uint32_t slot) {
      Route r(true);
      r.slot = slot;
      return r;
    }
  };
  rpc::Task<KvResult> get(std::string key, Route route = {});
  rpc::Task<KvResult> put(std::string key, std::string value, Route route = {});
  rpc::Task<KvResult> remove(std::string key, Route route = {});
  // Any single-key write, read-modify-writes included (FAA, compare-and-set, ...), as one operation of the
  // cluster's replication protocol; its status is kUnsupported when the protocol does not offer it (nothing written).
  rpc::Task<WriteResult> write(std::string key, Rmw op, Route route = {});

  // One iteration: poll the network, resume ready coroutines, flush. Blocks up to `idle_wait` when nothing happened
  // for a while (so clients do not burn a core while waiting).
  void run_once(std::chrono::microseconds idle_wait = std::chrono::microseconds(1000));
  rpc::Scheduler& sched() { return sched_; }
  rpc::Rpc& rpc() { return *rpc_; }
  bool connected_to_every_shard(bool first_primaries) const;
  bool connected_to(const std::vector<uint16_t>& nodes) const;

 private:
  Client(ClientTransport& ct, uint16_t thread) : ct_(ct), thread_(thread) {}
  // A request to `node`; kUnavailable without sending when not connected (never_sent).
  rpc::Task<rpc::Response> request(uint16_t node, rpc::MsgType type, std::string payload);
  rpc::Task<KvResult> call(uint16_t node, rpc::MsgType type, std::string payload);
  // The member of the key's shard this client sends to (see the top of this file), or the next connected member in
  // turn with `any_member`.
  uint16_t route(std::string_view key, const Route& r);
  void on_conn(const transport::Completion& c);
  // Whether this client can send to `node` now. The transport knows a connection is down before on_conn hears of
  // it: a call that failed on it resumes its coroutine first, whose next call must go elsewhere.
  bool up(uint16_t node) const { return peers_[node].up && ep_->connected(*peers_[node].conn); }

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
  std::vector<uint16_t> route_;  // by shard: the member the last operation went to
  int idle_ = 0;
  uint64_t pick_ = 0;  // rotates reads over replicas
};

}  // namespace rdx::client
