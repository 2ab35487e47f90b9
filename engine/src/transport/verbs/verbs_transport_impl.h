#pragma once
// VerbsTransport: one per process. Owns the device (PD), the registered regions (MRs) and the librdmacm listener.
//
// Connections: every endpoint's connections are RC QPs set up by librdmacm on the RDMA interface's IP (the listener's
// port is in rdma_cm's own port space). The connector's CONNECT_REQUEST carries a Hello (node, worker, epoch,
// max_packet) as private data; the listener thread validates it, rejects with a reason or migrates the new cm_id to
// the target worker's event channel and hands it to that endpoint (queued until the endpoint exists), which creates the
// QP on its CQ/SRQ and accepts. Once established, both sides SEND their region table (wire.h) before anything else.
//
// Endpoints keep a reference to their transport: destroy every endpoint before the transport.
#include <rdma/rdma_cma.h>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "transport/transport.h"
#include "transport/verbs/device.h"
#include "transport/verbs/wire.h"

namespace rdx::transport::verbs {

struct Region {
  std::byte* base = nullptr;
  size_t len = 0;
  ibv_mr* mr = nullptr;
};

// A connection request accepted by the listener, waiting for its endpoint.
struct Incoming {
  rdma_cm_id* id = nullptr;
  Hello hello;
  uint8_t responder_resources = 0;  // what the connector offered
  uint8_t initiator_depth = 0;
};

// Per worker: the event channel all of that worker's cm_ids use, and the listener's hand-over queue.
struct WorkerSlot {
  rdma_event_channel* channel = nullptr;
  std::mutex mu;
  std::deque<Incoming> incoming;
  std::atomic<bool> pending{false};
  bool in_use = false;  // an endpoint exists for this worker (under mu)
  int eventfd = -1;     // signalled with every hand-over; part of the endpoint's wait_fd
};

class VerbsTransport final : public Transport {
 public:
  static Result<std::unique_ptr<VerbsTransport>> create(const TransportConfig& cfg);
  ~VerbsTransport() override;

  Status register_region(RegionId id, void* base, size_t len) override;
  Result<std::unique_ptr<Endpoint>> create_endpoint(uint16_t worker) override;
  uint16_t listen_port() const override { return port_; }
  std::string kind() const override { return "verbs"; }

  const TransportConfig& config() const { return cfg_; }
  const Device& device() const { return *device_; }
  const std::vector<Region>& regions() const { return regions_; }  // read-only after the first endpoint
  std::vector<RegionDesc> region_table() const;
  WorkerSlot& slot(uint16_t worker) { return *slots_[worker]; }
  // Hello this node sends (connector) or replies with (listener).
  Hello hello(uint16_t src_worker, uint16_t dst_worker, Code status) const;

 private:
  explicit VerbsTransport(TransportConfig cfg) : cfg_(std::move(cfg)) {}
  Status start_listener();
  void listen_loop();
  void on_connect_request(rdma_cm_event* ev);

  TransportConfig cfg_;
  std::unique_ptr<Device> device_;
  std::vector<Region> regions_;
  std::atomic<bool> sealed_{false};
  std::vector<std::unique_ptr<WorkerSlot>> slots_;
  rdma_event_channel* listen_channel_ = nullptr;
  rdma_cm_id* listen_id_ = nullptr;
  uint16_t port_ = 0;
  int stop_fd_ = -1;
  std::thread listener_;
};

}  // namespace rdx::transport::verbs
