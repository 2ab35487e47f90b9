#include "client/client.h"

#include <poll.h>

#include <algorithm>
#include <random>

#include "cluster/topology_change.h"
#include "rpc/codec.h"

namespace rdx::client {

using rpc::Task;

namespace {
// How long connect() waits for the first primaries before it settles for any member of every shard.
constexpr auto kPreferFirst = std::chrono::seconds(1);
}  // namespace

Result<std::unique_ptr<ClientTransport>> ClientTransport::create(const cluster::Topology& topo, uint16_t threads,
                                                                 std::chrono::milliseconds call_timeout) {
  transport::TransportConfig cfg;
  cfg.kind = topo.transport;
  std::random_device rd;
  cfg.node = static_cast<transport::NodeId>(transport::kFirstClientNode + rd() % 0x7fff);
  cfg.workers = threads;
  cfg.epoch = cluster::restart_fingerprint(topo);  // as rdxd (cluster/topology_change.h)
  cfg.hugepages = false;
  cfg.max_packet = 64 * 1024;  // must match the nodes' transports
  cfg.device = topo.device;
  cfg.gid_index = topo.gid_index;
  cfg.rdma_interface = topo.rdma_interface;
  auto t = transport::make_transport(cfg);
  if (!t) return t.status();
  return std::unique_ptr<ClientTransport>(new ClientTransport(topo, std::move(t.value()), call_timeout));
}

Result<std::unique_ptr<Client>> Client::create(ClientTransport& ct, uint16_t thread) {
  std::unique_ptr<Client> c(new Client(ct, thread));
  auto ep = ct.transport().create_endpoint(thread);
  if (!ep) return ep.status();
  c->ep_ = std::move(ep.value());
  const cluster::Topology& topo = ct.topology();
  rpc::RpcConfig rc;
  rc.epoch = cluster::restart_fingerprint(topo);
  rc.batching = topo.batching;
  rc.max_batch_bytes = topo.batch_max_bytes;
  rc.max_batch_messages = topo.batch_max_messages;
  rc.call_timeout = ct.call_timeout();
  c->rpc_ = std::make_unique<rpc::Rpc>(*c->ep_, c->sched_, rc);
  c->rpc_->on_connection([raw = c.get()](const transport::Completion& cp) { raw->on_conn(cp); });
  c->peers_.resize(topo.nodes.size());
  c->route_ = topo.initial_primaries();
  return c;
}

void Client::on_conn(const transport::Completion& c) {
  for (Peer& p : peers_) {
    if (!p.conn || *p.conn != c.conn) continue;
    p.up = c.kind == transport::CompletionKind::kConnUp;
    if (!p.up) p.conn.reset();
  }
}

bool Client::connected_to(const std::vector<uint16_t>& nodes) const {
  for (uint16_t n : nodes)
    if (n >= peers_.size() || !peers_[n].up) return false;
  return true;
}

bool Client::connected_to_every_shard(bool first_primaries) const {
  const cluster::Topology& t = ct_.topology();
  for (const auto& s : t.shards) {
    const bool up = first_primaries
                        ? peers_[t.initial_primary(s.id)].up
                        : std::any_of(s.members.begin(), s.members.end(), [&](uint16_t m) { return peers_[m].up; });
    if (!up) return false;
  }
  return true;
}

Status Client::connect(std::chrono::milliseconds timeout, const std::vector<uint16_t>* wait_for) {
  const cluster::Topology& t = ct_.topology();
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + timeout;
  auto next_try = start;
  const auto reachable = [&] {
    if (wait_for != nullptr) return connected_to(*wait_for);
    return connected_to_every_shard(/*first_primaries=*/std::chrono::steady_clock::now() < start + kPreferFirst);
  };
  while (!reachable()) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::string missing;
      for (const auto& s : t.shards)
        if (!peers_[t.initial_primary(s.id)].up) missing += " " + t.nodes[t.initial_primary(s.id)].name;
      if (wait_for != nullptr) {
        missing.clear();
        for (uint16_t n : *wait_for)
          if (!connected_to({n})) missing += " " + t.nodes[n].name;
      }
      return error(Code::kUnavailable, "could not connect to{}", missing);
    }
    if (std::chrono::steady_clock::now() >= next_try) {
      next_try = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
      for (const auto& n : t.nodes) {
        if (n.role != cluster::Role::kData || peers_[n.id].conn) continue;
        auto c = ep_->connect({n.id, n.host, n.port, n.rdma_addr}, static_cast<uint16_t>(thread_ % t.workers));
        if (c) peers_[n.id].conn = c.value();
      }
    }
    run_once(std::chrono::microseconds(2000));
  }
  return Status::ok();
}

namespace {
constexpr std::string_view kNotConnected = "not connected to ";
}  // namespace

bool Client::never_sent(const KvResult& r) {
  return r.status == Code::kUnavailable && r.error.starts_with(kNotConnected);
}

bool Client::never_sent(const WriteResult& r) {
  return r.status == Code::kUnavailable && r.error.starts_with(kNotConnected);
}

uint16_t Client::route(std::string_view key, const Route& r) {
  const cluster::Topology& t = ct_.topology();
  const uint32_t shard = t.shard_of_key(key);
  const auto& members = t.shards[shard].members;
  if (r.any_member) {
    const size_t first = r.slot ? *r.slot : pick_++;
    for (size_t tries = 0; tries < members.size(); ++tries) {
      const uint16_t m = members[(first + tries) % members.size()];
      if (up(m)) return m;
    }
  }
  uint16_t& node = route_[shard];
  if (up(node)) return node;
  // The first connected member in topology order (the first primary first).
  for (uint16_t m : members)
    if (up(m)) return node = m;
  return node;  // none is: the call fails as not connected
}

Task<rpc::Response> Client::request(uint16_t node, rpc::MsgType type, std::string payload) {
  if (!up(node))
    co_return rpc::Response{Code::kUnavailable, std::string(kNotConnected) + ct_.topology().nodes[node].name};
  co_return co_await rpc_->call(*peers_[node].conn, type, rpc::as_bytes_of(payload));
}

Task<KvResult> Client::call(uint16_t node, rpc::MsgType type, std::string payload) {
  KvResult r;
  rpc::Response resp = co_await request(node, type, std::move(payload));
  r.status = resp.status;
  if (resp.status != Code::kOk) {
    r.error = std::move(resp.payload);
    co_return r;
  }
  rpc::Reader rd(resp.payload);
  r.version = rd.get<uint64_t>();
  if (type == cluster::kKvGet) r.value = std::string(rd.bytes());
  if (!rd.done()) {
    r.status = Code::kInternal;
    r.error = "malformed response";
  }
  co_return r;
}

Task<KvResult> Client::get(std::string key, Route to) {
  rpc::Writer w;
  w.bytes(key);
  co_return co_await call(route(key, to), cluster::kKvGet, w.data());
}

Task<KvResult> Client::put(std::string key, std::string value, Route to) {
  rpc::Writer w;
  w.bytes(key).bytes(value);
  co_return co_await call(route(key, to), cluster::kKvPut, w.data());
}

Task<KvResult> Client::remove(std::string key, Route to) {
  rpc::Writer w;
  w.bytes(key);
  co_return co_await call(route(key, to), cluster::kKvDel, w.data());
}

Task<WriteResult> Client::write(std::string key, replication::Rmw op, Route to) {
  rpc::Writer w;
  w.bytes(key);
  op.encode(w);
  rpc::Response resp = co_await request(route(key, to), cluster::kKvWrite, std::string(w.data()));
  if (resp.status != Code::kOk) co_return WriteResult::failed(resp.status, std::move(resp.payload));
  rpc::Reader rd(resp.payload);
  WriteResult r;
  if (!WriteResult::decode(rd, &r) || !rd.done()) co_return WriteResult::failed(Code::kInternal, "malformed response");
  co_return r;
}

void Client::run_once(std::chrono::microseconds idle_wait) {
  size_t n = rpc_->poll();
  size_t ran = sched_.run_ready();
  rpc_->flush();
  if (n > 0 || ran > 0 || !sched_.idle()) {
    idle_ = 0;
    return;
  }
  if (++idle_ < 32) return;
  ep_->arm();
  if (rpc_->poll() > 0) return;
  // No longer than until the next timer (a paced session sleeps between its operations).
  int64_t timeout_ms = std::max<int64_t>(1, idle_wait.count() / 1000);
  if (auto next = sched_.next_timer()) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - rpc::Scheduler::Clock::now()).count();
    timeout_ms = std::clamp<int64_t>(left, 0, timeout_ms);
  }
  pollfd p{ep_->wait_fd(), POLLIN, 0};
  ::poll(&p, 1, static_cast<int>(timeout_ms));
}

}  // namespace rdx::client
