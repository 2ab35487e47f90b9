#include "transport/verbs/verbs_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/thread.h"
#include "transport/verbs/rdma_sysfs.h"
#include "transport/verbs/verbs_endpoint.h"
#include "transport/verbs/verbs_transport_impl.h"

namespace rdx::transport::verbs {

bool verbs_devices_present(std::string* why_not) {
  auto port = first_usable_port(why_not);
  if (!port) return false;
  int num = 0;
  ibv_device** list = ibv_get_device_list(&num);
  bool listed = false;
  for (int i = 0; i < num; ++i) listed |= port->port.device == ibv_get_device_name(list[i]);
  if (list != nullptr) ibv_free_device_list(list);
  if (!listed) {
    if (why_not != nullptr)
      *why_not = fmt::format(
          "{} is in sysfs but libibverbs does not list it (provider library missing? install "
          "ibverbs-providers)",
          port->port.device);
    return false;
  }
  auto inaccessible = [why_not](const std::string& dev, const char* what) {
    if (why_not != nullptr)
      *why_not =
          fmt::format("{}: {} (load ib_uverbs and rdma_ucm, or mount /dev/infiniband into the container)", dev, what);
    return false;
  };
  if (access("/dev/infiniband/rdma_cm", R_OK | W_OK) != 0)
    return inaccessible("/dev/infiniband/rdma_cm", strerror(errno));
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/infiniband", ec))
    if (e.path().filename().string().rfind("uverbs", 0) == 0 && access(e.path().c_str(), R_OK | W_OK) == 0) return true;
  return inaccessible("/dev/infiniband/uverbs*", "no accessible verbs device node");
}

Result<std::unique_ptr<Transport>> make_verbs_transport(const TransportConfig& cfg) {
  auto t = VerbsTransport::create(cfg);
  if (!t) return t.status();
  return std::unique_ptr<Transport>(std::move(t.value()));
}

namespace {
constexpr int kListenBacklog = 128;
constexpr size_t kMaxQueuedIncoming = 256;  // per worker, while its endpoint does not exist yet

Status set_nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    return error(Code::kInternal, "fcntl(O_NONBLOCK): {}", strerror(errno));
  return Status::ok();
}
}  // namespace

Result<std::unique_ptr<VerbsTransport>> VerbsTransport::create(const TransportConfig& cfg) {
  if (cfg.workers == 0 || cfg.workers > 256) return error(Code::kInvalidArgument, "workers must be 1..256");
  if (cfg.max_packet < 64 || cfg.max_packet > (1u << 20))
    return error(Code::kInvalidArgument, "max_packet must be 64..1048576 bytes (got {})", cfg.max_packet);
  if (cfg.scratch_bytes == 0) return error(Code::kInvalidArgument, "scratch_bytes must be > 0");
  std::unique_ptr<VerbsTransport> t(new VerbsTransport(cfg));
  auto dev = open_device(cfg);
  if (!dev) return dev.status();
  t->device_ = std::move(dev.value());
  for (uint16_t w = 0; w < cfg.workers; ++w) {
    auto s = std::make_unique<WorkerSlot>();
    s->channel = rdma_create_event_channel();
    if (s->channel == nullptr) return error(Code::kInternal, "rdma_create_event_channel: {}", strerror(errno));
    RDX_RETURN_IF_ERROR(set_nonblocking(s->channel->fd));
    s->eventfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s->eventfd < 0) return error(Code::kInternal, "eventfd: {}", strerror(errno));
    t->slots_.push_back(std::move(s));
  }
  if (!cfg.listen_host.empty()) RDX_RETURN_IF_ERROR(t->start_listener());
  return t;
}

VerbsTransport::~VerbsTransport() {
  if (listener_.joinable()) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t r = ::write(stop_fd_, &one, sizeof(one));
    listener_.join();
  }
  if (listen_id_ != nullptr) rdma_destroy_id(listen_id_);
  if (listen_channel_ != nullptr) rdma_destroy_event_channel(listen_channel_);
  if (stop_fd_ >= 0) ::close(stop_fd_);
  for (auto& s : slots_) {
    for (Incoming& in : s->incoming) {
      rdma_reject(in.id, nullptr, 0);
      rdma_destroy_id(in.id);
    }
    if (s->channel != nullptr) rdma_destroy_event_channel(s->channel);
    if (s->eventfd >= 0) ::close(s->eventfd);
  }
  for (Region& r : regions_)
    if (r.mr != nullptr) ibv_dereg_mr(r.mr);
  device_.reset();
}

Status VerbsTransport::register_region(RegionId id, void* base, size_t len) {
  if (sealed_.load()) return error(Code::kUnsupported, "regions must be registered before the first endpoint");
  if (base == nullptr || len == 0) return error(Code::kInvalidArgument, "region {} is empty", id);
  if (regions_.size() <= id) regions_.resize(size_t{id} + 1);
  if (regions_[id].base != nullptr) return error(Code::kAlreadyExists, "region {} already registered", id);
  auto mr = device_->register_memory(base, len);
  if (!mr) return mr.status();
  regions_[id] = Region{static_cast<std::byte*>(base), len, mr.value()};
  return Status::ok();
}

std::vector<RegionDesc> VerbsTransport::region_table() const {
  std::vector<RegionDesc> out;
  for (size_t i = 0; i < regions_.size(); ++i) {
    const Region& r = regions_[i];
    if (r.mr == nullptr) continue;
    out.push_back(RegionDesc{static_cast<uint16_t>(i), 1, r.mr->rkey, reinterpret_cast<uint64_t>(r.base), r.len});
  }
  return out;
}

Hello VerbsTransport::hello(uint16_t src_worker, uint16_t dst_worker, Code status) const {
  Hello h;
  h.node = cfg_.node;
  h.epoch = cfg_.epoch;
  h.src_worker = src_worker;
  h.dst_worker = dst_worker;
  h.max_packet = static_cast<uint32_t>(cfg_.max_packet);
  h.status = static_cast<uint32_t>(status);
  return h;
}

Result<std::unique_ptr<Endpoint>> VerbsTransport::create_endpoint(uint16_t worker) {
  if (worker >= cfg_.workers) return error(Code::kInvalidArgument, "worker {} >= workers {}", worker, cfg_.workers);
  sealed_.store(true);
  return VerbsEndpoint::create(*this, worker);
}

Status VerbsTransport::start_listener() {
  listen_channel_ = rdma_create_event_channel();
  if (listen_channel_ == nullptr) return error(Code::kInternal, "rdma_create_event_channel: {}", strerror(errno));
  RDX_RETURN_IF_ERROR(set_nonblocking(listen_channel_->fd));
  if (rdma_create_id(listen_channel_, &listen_id_, nullptr, RDMA_PS_TCP) != 0)
    return error(Code::kInternal, "rdma_create_id: {}", strerror(errno));
  // Listen on the RDMA interface's address (the one the device was resolved from), not on listen_host: the two
  // differ when RDMA runs on a secondary interface.
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(cfg_.listen_port);
  inet_pton(AF_INET, device_->local_ip.c_str(), &sa.sin_addr);
  if (rdma_bind_addr(listen_id_, reinterpret_cast<sockaddr*>(&sa)) != 0)
    return error(Code::kUnavailable, "rdma_bind_addr({}:{}): {}", device_->local_ip, cfg_.listen_port, strerror(errno));
  if (rdma_listen(listen_id_, kListenBacklog) != 0)
    return error(Code::kUnavailable, "rdma_listen({}:{}): {}", device_->local_ip, cfg_.listen_port, strerror(errno));
  port_ = ntohs(rdma_get_src_port(listen_id_));
  stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (stop_fd_ < 0) return error(Code::kInternal, "eventfd: {}", strerror(errno));
  listener_ = start_thread([this] { listen_loop(); });
  spdlog::info("verbs: node {} listening on {}:{} ({})", cfg_.node, device_->local_ip, port_, device_->name);
  return Status::ok();
}

void VerbsTransport::listen_loop() {
  pollfd fds[2] = {{listen_channel_->fd, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  for (;;) {
    int n = ::poll(fds, 2, -1);
    if (n < 0 && errno != EINTR) {
      spdlog::error("verbs: listener poll: {}", strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    rdma_cm_event* ev = nullptr;
    while (rdma_get_cm_event(listen_channel_, &ev) == 0) {
      if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
        on_connect_request(ev);  // acks the event
      } else {
        spdlog::debug("verbs: listener event {}", rdma_event_str(ev->event));
        rdma_ack_cm_event(ev);
      }
    }
  }
}

void VerbsTransport::on_connect_request(rdma_cm_event* ev) {
  rdma_cm_id* id = ev->id;
  auto in = decode_hello(ev->param.conn.private_data, ev->param.conn.private_data_len);
  Incoming req;
  req.id = id;
  req.responder_resources = ev->param.conn.responder_resources;
  req.initiator_depth = ev->param.conn.initiator_depth;
  Code refuse = Code::kOk;
  std::string why;
  if (!in) {
    refuse = Code::kInvalidArgument;
    why = in.status().message();
  } else {
    req.hello = in.value();
    if (req.hello.epoch != cfg_.epoch) {
      refuse = Code::kAborted;
      why = fmt::format("epoch {} (ours {})", req.hello.epoch, cfg_.epoch);
    } else if (req.hello.dst_worker >= cfg_.workers) {
      refuse = Code::kInvalidArgument;
      why = fmt::format("worker {} (we have {})", req.hello.dst_worker, cfg_.workers);
    } else if (req.hello.max_packet != cfg_.max_packet) {
      refuse = Code::kInvalidArgument;
      why = fmt::format("max_packet {} (ours {})", req.hello.max_packet, cfg_.max_packet);
    } else if (id->verbs != device_->ctx) {
      refuse = Code::kUnavailable;
      why = fmt::format("arrived on device {} (this transport uses {})", ibv_get_device_name(id->verbs->device),
                        device_->name);
    }
  }
  WorkerSlot* slot = refuse == Code::kOk ? slots_[req.hello.dst_worker].get() : nullptr;
  if (slot != nullptr) {
    std::lock_guard<std::mutex> lk(slot->mu);
    if (slot->incoming.size() >= kMaxQueuedIncoming) {
      refuse = Code::kResourceExhausted;
      why = "too many connections waiting for the worker's endpoint";
    }
  }
  if (refuse != Code::kOk) {
    spdlog::warn("verbs: node {} refused a connection from node {} worker {}: {}", cfg_.node, req.hello.node,
                 req.hello.src_worker, why);
    Hello reply = hello(req.hello.dst_worker, req.hello.src_worker, refuse);
    rdma_reject(id, &reply, sizeof(reply));
    rdma_ack_cm_event(ev);
    rdma_destroy_id(id);
    return;
  }
  // The event must be acked before the id can move to the worker's channel; the id's later events (ESTABLISHED,
  // DISCONNECTED) go to the endpoint. The slot lock covers the move so the endpoint never sees an event of an id it
  // cannot find in the queue (VerbsEndpoint::adopt_incoming takes the same lock).
  rdma_ack_cm_event(ev);
  {
    std::lock_guard<std::mutex> lk(slot->mu);
    id->context = nullptr;
    if (rdma_migrate_id(id, slot->channel) != 0) {
      spdlog::error("verbs: rdma_migrate_id: {}", strerror(errno));
      rdma_reject(id, nullptr, 0);
      rdma_destroy_id(id);
      return;
    }
    slot->incoming.push_back(req);
    slot->pending.store(true, std::memory_order_release);
  }
  uint64_t one = 1;
  [[maybe_unused]] ssize_t r = ::write(slot->eventfd, &one, sizeof(one));
}

}  // namespace rdx::transport::verbs
