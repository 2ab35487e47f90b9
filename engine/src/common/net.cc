#include "common/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace rdx::net {

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Status set_nonblocking(int fd) {
  int fl = fcntl(fd, F_GETFL, 0);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return error(Code::kInternal, "fcntl: {}", strerror(errno));
  return Status::ok();
}

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

namespace {
Result<addrinfo*> resolve(const std::string& host, uint16_t port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_INET;  // the cluster network is IPv4 (pod IPs, rxe's IPv4-mapped GIDs)
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0) return error(Code::kUnavailable, "resolve {}:{}: {}", host, port, gai_strerror(rc));
  return res;
}
}  // namespace

Result<UniqueFd> listen_tcp(const std::string& host, uint16_t* port, int backlog) {
  auto res = resolve(host, *port, true);
  if (!res) return res.status();
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) {
    freeaddrinfo(*res);
    return error(Code::kInternal, "socket: {}", strerror(errno));
  }
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc = bind(fd.get(), (*res)->ai_addr, (*res)->ai_addrlen);
  freeaddrinfo(*res);
  // A port in use gets its own code: a caller that picked the port itself may pick another.
  if (rc < 0)
    return error(errno == EADDRINUSE ? Code::kAlreadyExists : Code::kUnavailable, "bind {}:{}: {}", host, *port,
                 strerror(errno));
  if (::listen(fd.get(), backlog) < 0) return error(Code::kInternal, "listen: {}", strerror(errno));
  sockaddr_in sa{};
  socklen_t sl = sizeof(sa);
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &sl);
  *port = ntohs(sa.sin_port);
  return fd;
}

Result<UniqueFd> connect_tcp_nonblocking(const std::string& host, uint16_t port) {
  auto res = resolve(host, port, false);
  if (!res) return res.status();
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) {
    freeaddrinfo(*res);
    return error(Code::kInternal, "socket: {}", strerror(errno));
  }
  set_nodelay(fd.get());
  int rc = ::connect(fd.get(), (*res)->ai_addr, (*res)->ai_addrlen);
  freeaddrinfo(*res);
  if (rc < 0 && errno != EINPROGRESS)
    return error(Code::kUnavailable, "connect {}:{}: {}", host, port, strerror(errno));
  return fd;
}

namespace {
template <typename Op>
Status io_full(int fd, size_t n, int timeout_ms, short events, Op op, const char* what) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  size_t done = 0;
  while (done < n) {
    ssize_t r = op(done);
    if (r > 0) {
      done += static_cast<size_t>(r);
      continue;
    }
    if (r == 0) return error(Code::kUnavailable, "{}: connection closed", what);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return error(Code::kUnavailable, "{}: {}", what, strerror(errno));
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return error(Code::kTimeout, "{}: timed out after {} ms", what, timeout_ms);
    pollfd p{fd, events, 0};
    ::poll(&p, 1, static_cast<int>(left.count()));
  }
  return Status::ok();
}
}  // namespace

Status read_full(int fd, void* buf, size_t n, int timeout_ms) {
  auto* b = static_cast<char*>(buf);
  return io_full(
      fd, n, timeout_ms, POLLIN, [&](size_t off) { return ::read(fd, b + off, n - off); }, "read");
}

Status write_full(int fd, const void* buf, size_t n, int timeout_ms) {
  auto* b = static_cast<const char*>(buf);
  return io_full(
      fd, n, timeout_ms, POLLOUT, [&](size_t off) { return ::send(fd, b + off, n - off, MSG_NOSIGNAL); }, "write");
}

}  // namespace rdx::net
