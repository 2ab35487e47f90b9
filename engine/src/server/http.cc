#include "server/http.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/thread.h"

namespace rdx::server {

namespace {
constexpr size_t kMaxRequest = 8192;
constexpr int kIoTimeoutMs = 2000;

const char* reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}
}  // namespace

HttpServer::~HttpServer() { stop(); }

Status HttpServer::start(const std::string& host, uint16_t port) {
  auto fd = net::listen_tcp(host, &port);
  if (!fd) return fd.status();
  listen_ = std::move(fd.value());
  port_ = port;
  stop_ = net::UniqueFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  thread_ = start_thread([this] { serve(); });
  return Status::ok();
}

void HttpServer::stop() {
  if (!thread_.joinable()) return;
  uint64_t one = 1;
  [[maybe_unused]] ssize_t r = ::write(stop_.get(), &one, sizeof(one));
  thread_.join();
}

void HttpServer::serve() {
  pollfd fds[2] = {{listen_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    int c = accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0) continue;
    handle(c);
    ::close(c);
  }
}

void HttpServer::handle(int fd) {
  std::string req;
  char buf[2048];
  // Read until the end of the headers, within size and time bounds.
  auto deadline_ok = [&] {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, kIoTimeoutMs) > 0;
  };
  while (req.find("\r\n\r\n") == std::string::npos) {
    if (req.size() > kMaxRequest) break;
    if (!deadline_ok()) return;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return;
    req.append(buf, static_cast<size_t>(n));
  }
  HttpResponse resp;
  bool head = false;
  size_t eol = req.find("\r\n");
  if (req.size() > kMaxRequest) {
    resp = {431, "text/plain", "request too large\n"};
  } else if (eol == std::string::npos) {
    resp = {400, "text/plain", "bad request\n"};
  } else {
    std::string line = req.substr(0, eol);
    size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
    if (sp1 == std::string::npos || sp2 == sp1 || line.compare(sp2 + 1, 5, "HTTP/") != 0) {
      resp = {400, "text/plain", "bad request line\n"};
    } else {
      std::string method = line.substr(0, sp1);
      std::string path = line.substr(sp1 + 1, sp2 - sp1 - 1);
      if (size_t q = path.find('?'); q != std::string::npos) path.resize(q);
      head = method == "HEAD";
      auto it = routes_.find(path);
      if (method != "GET" && !head)
        resp = {405, "text/plain", "only GET and HEAD\n"};
      else if (it == routes_.end())
        resp = {404, "text/plain", "not found\n"};
      else
        resp = it->second();
    }
  }
  std::string out = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                                resp.status, reason(resp.status), resp.content_type, resp.body.size());
  if (!head) out += resp.body;
  (void)net::write_full(fd, out.data(), out.size(), kIoTimeoutMs);
}

}  // namespace rdx::server
