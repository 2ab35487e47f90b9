// Sockets of the Redis endpoint: a SO_REUSEPORT listener and edge-triggered epoll per worker, non-blocking
// connections with their own read and write buffers. Per loop iteration a connection gets (at most a few) reads,
// all its complete requests run, and its replies leave in one write.
#include "resp/resp_frontend.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "common/net.h"
#include "resp/connection.h"
#include "resp/executor.h"

namespace rdx::resp {

namespace {

constexpr int64_t kMaxClients = 10000;               // per node, as Redis' maxclients default
constexpr size_t kReadChunk = 16 * 1024;             // Redis' PROTO_IOBUF_LEN
constexpr size_t kMaxReadChunk = 1 << 20;            // reads for a large bulk that is still arriving
constexpr size_t kMaxQueryBuffer = size_t{1} << 30;  // Redis' client-query-buffer-limit
constexpr size_t kIdleBufferKeep = 64 * 1024;        // larger idle buffers are released
constexpr int kReadRoundsPerService = 4;             // reads per connection per poll() (fairness)
constexpr auto kEmptyPollInterval = std::chrono::microseconds(5);

std::string sockaddr_text(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    port = ntohs(a->sin6_port);
  }
  return fmt::format("{}:{}", host, port);
}

Result<net::UniqueFd> listen_reuseport(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0) return error(Code::kInvalidArgument, "redis endpoint: cannot resolve '{}': {}", host, gai_strerror(rc));
  std::string last_error = "no address";
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    net::UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd) continue;
    int one = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd.get(), 511) == 0) {
      freeaddrinfo(res);
      return fd;
    }
    last_error = std::strerror(errno);
  }
  freeaddrinfo(res);
  return error(Code::kUnavailable, "redis endpoint: cannot listen on {}:{}: {}", host, port, last_error);
}

class RespFrontend final : public server::Service {
 public:
  explicit RespFrontend(server::ServiceEnv env)
      : env_(std::move(env)), executor_(env_, [this](Connection& c) { queue_service(c); }) {}

  ~RespFrontend() override {
    for (auto& [ptr, c] : conns_) {
      if (!c->closed) write_out(*c);  // best effort: replies already computed
      if (!c->closed) client_stats().connected.fetch_sub(1, std::memory_order_relaxed);
    }
  }

  Status init() {
    auto l = listen_reuseport(env_.listen_host, env_.redis_port);
    if (!l) return l.status();
    listener_ = std::move(l.value());
    epoll_ = net::UniqueFd(epoll_create1(EPOLL_CLOEXEC));
    if (!epoll_) return error(Code::kInternal, "redis endpoint: epoll_create1: {}", std::strerror(errno));
    epoll_event ev{};
    ev.events = EPOLLIN;  // level-triggered: a refused accept (EMFILE) is retried next poll
    ev.data.ptr = nullptr;
    if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listener_.get(), &ev) != 0)
      return error(Code::kInternal, "redis endpoint: epoll_ctl: {}", std::strerror(errno));
    return executor_.register_handlers();
  }

  size_t poll() override {
    size_t work = 0;
    if (!pending_.empty()) {
      std::vector<Connection*> batch;
      batch.swap(pending_);
      for (Connection* c : batch) {
        c->queued_for_service = false;
        service(*c);
      }
      work += batch.size();
    }
    // The worker calls poll() back to back while it spins between batches of client requests; an epoll_wait that
    // finds nothing is a wasted syscall, so after an empty one the next waits kEmptyPollInterval (when the worker
    // sleeps on wait_fd() instead, far more time than that passes before it wakes).
    auto now = std::chrono::steady_clock::now();
    if (last_poll_found_events_ || now - last_empty_poll_ >= kEmptyPollInterval) {
      epoll_event events[256];
      int n = epoll_wait(epoll_.get(), events, 256, 0);
      last_poll_found_events_ = n > 0;
      if (n <= 0) last_empty_poll_ = now;
      for (int i = 0; i < n; ++i) {
        auto* c = static_cast<Connection*>(events[i].data.ptr);
        if (c == nullptr) {
          accept_clients();
          continue;
        }
        if (events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) c->readable = true;
        if (events[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) c->hangup_seen = true;
        if (events[i].events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) c->writable = true;
        service(*c);
      }
      work += static_cast<size_t>(std::max(n, 0));
    }
    destroy_closed();
    if (uint64_t done = executor_.take_command_count())  // one shared-counter update per poll, not per command
      client_stats().commands.fetch_add(done, std::memory_order_relaxed);
    return work;
  }

  int wait_fd() const override { return epoll_.get(); }

  void stop_accepting() override {
    if (listener_) {
      epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, listener_.get(), nullptr);
      listener_.reset();
    }
    stopping_ = true;
    executor_.set_stopping();
    for (auto& [ptr, c] : conns_) queue_service(*c);  // idle connections flush and close at the next poll
  }

  size_t inflight() const override { return executor_.running() + (pending_.empty() ? 0 : 1); }

 private:
  void queue_service(Connection& c) {
    if (c.queued_for_service) return;
    c.queued_for_service = true;
    pending_.push_back(&c);
  }

  void accept_clients() {
    for (int i = 0; i < 64 && listener_; ++i) {
      sockaddr_storage peer{};
      socklen_t len = sizeof(peer);
      int fd = accept4(listener_.get(), reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) spdlog::warn("redis endpoint: accept: {}", std::strerror(errno));
        return;
      }
      net::UniqueFd sock(fd);
      ClientStats& stats = client_stats();
      if (stats.connected.load(std::memory_order_relaxed) >= kMaxClients) {
        static constexpr std::string_view kFull = "-ERR max number of clients reached\r\n";
        [[maybe_unused]] ssize_t r = ::send(fd, kFull.data(), kFull.size(), MSG_NOSIGNAL);
        stats.rejected.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      net::set_nodelay(fd);
      sockaddr_storage local{};
      socklen_t local_len = sizeof(local);
      getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len);
      auto conn =
          std::make_unique<Connection>(std::move(sock), stats.next_client_id.fetch_add(1, std::memory_order_relaxed),
                                       sockaddr_text(peer), sockaddr_text(local), ParserLimits{});
      conn->authenticated = env_.password.empty();
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
      ev.data.ptr = conn.get();
      if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
        spdlog::warn("redis endpoint: epoll_ctl(add): {}", std::strerror(errno));
        continue;
      }
      stats.connected.fetch_add(1, std::memory_order_relaxed);
      stats.accepted.fetch_add(1, std::memory_order_relaxed);
      Connection* raw = conn.get();
      conns_.emplace(raw, std::move(conn));
    }
  }

  // Reads once into the connection's buffer. True if bytes arrived.
  bool read_some(Connection& c) {
    size_t want = std::clamp(c.parser.bytes_wanted(), kReadChunk, kMaxReadChunk);
    char* dst = c.in.reserve_tail(want);
    size_t space = c.in.tail_free();
    ssize_t n = ::read(c.fd.get(), dst, space);
    if (n > 0) {
      c.in.commit(static_cast<size_t>(n));
      // Edge-triggered: a short read drained the socket (new data raises a new edge); after a hang-up no new edge
      // comes, so read on until the EOF.
      if (static_cast<size_t>(n) < space && !c.hangup_seen) c.readable = false;
      return true;
    }
    if (n == 0) {
      c.peer_closed = true;
      c.readable = false;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      c.readable = false;
    } else if (errno != EINTR) {
      c.io_error = true;
      c.readable = false;
    }
    return false;
  }

  void write_out(Connection& c) {
    while (c.pending_output() > 0 && c.writable && !c.io_error) {
      ssize_t n = ::send(c.fd.get(), c.out.data() + c.out_head, c.pending_output(), MSG_NOSIGNAL);
      if (n > 0) {
        c.out_head += static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        c.writable = false;  // EPOLLOUT brings us back
      } else {
        c.io_error = true;
      }
    }
    if (c.out_head == c.out.size() || c.io_error) {
      c.out.clear();
      c.out_head = 0;
      if (c.out.capacity() > kIdleBufferKeep && !c.busy) std::string().swap(c.out);
    }
  }

  void service(Connection& c) {
    if (c.closed) return;
    c.last_active = std::chrono::steady_clock::now();
    write_out(c);
    if (c.busy) return;  // its command coroutine brings the connection back when it finishes
    for (int round = 0; round < kReadRoundsPerService; ++round) {
      if (c.io_error || c.close_after_reply || stopping_) break;
      if (c.pending_output() >= kMaxPendingOutput) return;  // EPOLLOUT brings us back once the client reads
      bool got = c.readable && !c.peer_closed && read_some(c);
      if (c.in.unconsumed_size() > kMaxQueryBuffer) {
        spdlog::warn("redis endpoint: closing client {} ({}): query buffer over 1 GiB", c.id, c.peer_addr);
        c.io_error = true;
        break;
      }
      if (!got && !c.input_stalled) break;
      c.input_stalled = false;
      executor_.start(c);  // sets input_stalled if it stopped on the output backlog with requests left
      write_out(c);
      if (c.busy) return;
    }
    if (c.io_error || (c.close_after_reply && c.pending_output() == 0) || (stopping_ && c.pending_output() == 0) ||
        (c.peer_closed && !c.input_stalled)) {
      close(c);
      return;
    }
    // More to read, or requests left whose replies can now go out: continue at the next poll.
    if (!stopping_ && ((c.readable && !c.peer_closed) || (c.input_stalled && c.pending_output() < kMaxPendingOutput)))
      queue_service(c);
    if (c.in.empty()) c.in.shrink_if_idle(kIdleBufferKeep);
  }

  void close(Connection& c) {
    epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, c.fd.get(), nullptr);
    c.fd.reset();
    c.closed = true;
    client_stats().connected.fetch_sub(1, std::memory_order_relaxed);
    closed_.push_back(&c);
  }

  void destroy_closed() {
    if (closed_.empty()) return;
    for (Connection* c : closed_) {
      if (c->queued_for_service) std::erase(pending_, c);
      conns_.erase(c);
    }
    closed_.clear();
  }

  server::ServiceEnv env_;
  Executor executor_;
  net::UniqueFd listener_, epoll_;
  std::unordered_map<Connection*, std::unique_ptr<Connection>> conns_;
  std::vector<Connection*> pending_;  // connections to service at the next poll()
  std::vector<Connection*> closed_;
  bool stopping_ = false;
  bool last_poll_found_events_ = true;
  std::chrono::steady_clock::time_point last_empty_poll_{};
};

}  // namespace

Result<std::unique_ptr<server::Service>> make_resp_service(server::ServiceEnv& env) {
  if (env.redis_port == 0) return std::unique_ptr<server::Service>();
  auto fe = std::make_unique<RespFrontend>(env);
  RDX_RETURN_IF_ERROR(fe->init());
  return std::unique_ptr<server::Service>(std::move(fe));
}

}  // namespace rdx::resp
