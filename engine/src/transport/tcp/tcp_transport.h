#pragma once
// tcp backend: the transport semantics without RDMA hardware. Packets travel as frames over one TCP connection per
// (worker, peer worker); one-sided operations are executed by the *target's* endpoint thread against its registered
// regions when it polls (the remote CPU does the work: EndpointStats::onesided_served counts it).
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "transport/transport.h"

namespace rdx::transport::tcp {

struct Region {
  std::byte* base = nullptr;
  size_t len = 0;
};

// A connection accepted by the listener, handshake done, waiting for its endpoint to adopt it.
struct Accepted {
  int fd;
  NodeId peer_node;
  uint16_t peer_worker;
};

class TcpTransport;

// Shared between the transport's acceptor thread and one endpoint.
struct Handoff {
  std::mutex mu;
  std::deque<Accepted> queue;
  int eventfd = -1;  // signalled when queue gains an entry; the endpoint polls it
};

class TcpTransport final : public Transport {
 public:
  static Result<std::unique_ptr<TcpTransport>> create(const TransportConfig& cfg);
  ~TcpTransport() override;

  Status register_region(RegionId id, void* base, size_t len) override;
  Result<std::unique_ptr<Endpoint>> create_endpoint(uint16_t worker) override;
  uint16_t listen_port() const override { return port_; }
  std::string kind() const override { return "tcp"; }

  // Read-only after the first create_endpoint().
  const std::vector<Region>& regions() const { return regions_; }
  const TransportConfig& config() const { return cfg_; }
  Handoff& handoff(uint16_t worker) { return *handoffs_[worker]; }

  std::vector<LearnedAddress> learned_addresses() const override;
  void suggest_address(NodeId node, const std::string& host) override;

  // Where to dial `peer`: the address its latest accepted connection came from, when one did; else one another node
  // learned so (suggest_address); else its configured host. A restarted pod comes back with a new IP while DNS may
  // answer the old one for a TTL (30 s with the usual CoreDNS settings); the restarted node dials everybody at once,
  // and its connection carries the new address, but two pods restarted within the TTL learn nothing of each other
  // by themselves: a third relays what it learned.
  std::string dial_host(const PeerAddr& peer);
  // A dial of `host` for `node` failed: when it was a learned or suggested address, forget it (DNS again from the
  // next attempt).
  void dial_failed(NodeId node, const std::string& host);

 private:
  explicit TcpTransport(TransportConfig cfg);
  Status start_listener();
  void accept_loop();
  void handshake(int fd);

  TransportConfig cfg_;
  std::vector<Region> regions_;
  std::atomic<bool> sealed_{false};
  std::vector<std::unique_ptr<Handoff>> handoffs_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;
  uint16_t port_ = 0;
  std::thread acceptor_;
  mutable std::mutex learned_mu_;
  std::unordered_map<NodeId, std::string> learned_;    // data node -> the IP its latest accepted connection came from
  std::unordered_map<NodeId, std::string> suggested_;  // data node -> the IP another node learned for it
};

}  // namespace rdx::transport::tcp
