#include "transport/tcp/tcp_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/net.h"
#include "common/thread.h"
#include "transport/tcp/tcp_endpoint.h"
#include "transport/tcp/wire.h"

namespace rdx::transport::tcp {

namespace {
constexpr int kHandshakeTimeoutMs = 3000;
}

TcpTransport::TcpTransport(TransportConfig cfg) : cfg_(std::move(cfg)) {}

Result<std::unique_ptr<TcpTransport>> TcpTransport::create(const TransportConfig& cfg) {
  if (cfg.workers == 0 || cfg.workers > 256) return error(Code::kInvalidArgument, "workers must be 1..256");
  if (cfg.max_packet < 64 || cfg.max_packet > (1u << 20))
    return error(Code::kInvalidArgument, "max_packet must be 64..1048576 bytes (got {})", cfg.max_packet);
  std::unique_ptr<TcpTransport> t(new TcpTransport(cfg));
  for (uint16_t w = 0; w < cfg.workers; ++w) {
    auto h = std::make_unique<Handoff>();
    h->eventfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (h->eventfd < 0) return error(Code::kInternal, "eventfd: {}", strerror(errno));
    t->handoffs_.push_back(std::move(h));
  }
  if (!cfg.listen_host.empty()) RDX_RETURN_IF_ERROR(t->start_listener());
  return t;
}

TcpTransport::~TcpTransport() {
  if (acceptor_.joinable()) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t r = ::write(stop_fd_, &one, sizeof(one));
    acceptor_.join();
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (stop_fd_ >= 0) ::close(stop_fd_);
  for (auto& h : handoffs_) {
    for (auto& a : h->queue) ::close(a.fd);
    if (h->eventfd >= 0) ::close(h->eventfd);
  }
}

Status TcpTransport::register_region(RegionId id, void* base, size_t len) {
  if (sealed_.load()) return error(Code::kUnsupported, "regions must be registered before the first endpoint");
  if (base == nullptr || len == 0) return error(Code::kInvalidArgument, "region {} is empty", id);
  if (regions_.size() <= id) regions_.resize(id + 1);
  if (regions_[id].base != nullptr) return error(Code::kAlreadyExists, "region {} already registered", id);
  regions_[id] = Region{static_cast<std::byte*>(base), len};
  return Status::ok();
}

Result<std::unique_ptr<Endpoint>> TcpTransport::create_endpoint(uint16_t worker) {
  if (worker >= cfg_.workers) return error(Code::kInvalidArgument, "worker {} >= workers {}", worker, cfg_.workers);
  sealed_.store(true);
  return TcpEndpoint::create(*this, worker);
}

Status TcpTransport::start_listener() {
  uint16_t port = cfg_.listen_port;
  auto fd = net::listen_tcp(cfg_.listen_host, &port);
  if (!fd) return fd.status();
  listen_fd_ = fd->release();
  port_ = port;
  stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  acceptor_ = start_thread([this] { accept_loop(); });
  return Status::ok();
}

void TcpTransport::accept_loop() {
  pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  for (;;) {
    int n = ::poll(fds, 2, -1);
    if (n < 0 && errno != EINTR) break;
    if (fds[1].revents != 0) break;
    if ((fds[0].revents & POLLIN) == 0) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) continue;
    // Handshakes are short and bounded; a peer that stalls costs at most kHandshakeTimeoutMs of acceptor time.
    handshake(fd);
  }
}

void TcpTransport::handshake(int fd) {
  net::set_nodelay(fd);
  Hello in{};
  Status st = net::read_full(fd, &in, sizeof(in), kHandshakeTimeoutMs);
  Hello reply{kMagic, kWireVersion, cfg_.node, cfg_.epoch, 0, 0, static_cast<uint32_t>(cfg_.max_packet), 0};
  Code refuse = Code::kOk;
  if (!st.is_ok()) {
    spdlog::warn("tcp transport: handshake from new connection failed: {}", st.to_string());
    ::close(fd);
    return;
  }
  if (in.magic != kMagic || in.version != kWireVersion) {
    refuse = Code::kInvalidArgument;
  } else if (in.epoch != cfg_.epoch) {
    refuse = Code::kAborted;
  } else if (in.dst_worker >= cfg_.workers) {
    refuse = Code::kInvalidArgument;
  } else if (in.max_packet != cfg_.max_packet) {
    refuse = Code::kInvalidArgument;
  }
  reply.src_worker = in.dst_worker;
  reply.dst_worker = in.src_worker;
  reply.status = static_cast<uint32_t>(refuse);
  st = net::write_full(fd, &reply, sizeof(reply), kHandshakeTimeoutMs);
  if (refuse != Code::kOk || !st.is_ok()) {
    spdlog::warn(
        "tcp transport: refused connection from node {} worker {} (magic {:#x} epoch {} vs {}, dst worker {}, "
        "max_packet {} vs {}): {}",
        in.src_node, in.src_worker, in.magic, in.epoch, cfg_.epoch, in.dst_worker, in.max_packet, cfg_.max_packet,
        code_name(refuse));
    ::close(fd);
    return;
  }
  if (in.src_node < kFirstClientNode) {
    sockaddr_in from{};
    socklen_t len = sizeof(from);
    char ip[INET_ADDRSTRLEN] = {};
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&from), &len) == 0 && from.sin_family == AF_INET &&
        inet_ntop(AF_INET, &from.sin_addr, ip, sizeof(ip)) != nullptr) {
      std::lock_guard<std::mutex> lk(learned_mu_);
      learned_[in.src_node] = ip;
    }
  }
  Handoff& h = *handoffs_[in.dst_worker];
  {
    std::lock_guard<std::mutex> lk(h.mu);
    h.queue.push_back(Accepted{fd, in.src_node, in.src_worker});
  }
  uint64_t one = 1;
  [[maybe_unused]] ssize_t r = ::write(h.eventfd, &one, sizeof(one));
}

std::vector<LearnedAddress> TcpTransport::learned_addresses() const {
  std::lock_guard<std::mutex> lk(learned_mu_);
  std::vector<LearnedAddress> out;
  out.reserve(learned_.size());
  for (const auto& [node, host] : learned_) out.push_back(LearnedAddress{node, host});
  return out;
}

void TcpTransport::suggest_address(NodeId node, const std::string& host) {
  if (node >= kFirstClientNode || node == cfg_.node) return;
  std::lock_guard<std::mutex> lk(learned_mu_);
  suggested_[node] = host;
}

std::string TcpTransport::dial_host(const PeerAddr& peer) {
  std::lock_guard<std::mutex> lk(learned_mu_);
  if (auto it = learned_.find(peer.node); it != learned_.end()) return it->second;
  if (auto it = suggested_.find(peer.node); it != suggested_.end()) return it->second;
  return peer.host;
}

void TcpTransport::dial_failed(NodeId node, const std::string& host) {
  std::lock_guard<std::mutex> lk(learned_mu_);
  if (auto it = learned_.find(node); it != learned_.end() && it->second == host) learned_.erase(it);
  if (auto it = suggested_.find(node); it != suggested_.end() && it->second == host) suggested_.erase(it);
}

}  // namespace rdx::transport::tcp
