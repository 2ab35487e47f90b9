#pragma once
// A minimal HTTP/1.1 server for /metrics, /healthz and /readyz: its own thread, GET/HEAD only, one request per
// connection, bounded request size and time, so a slow or hostile client cannot stall it for long.
#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "common/net.h"
#include "common/status.h"

namespace rdx::server {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse()>;
  HttpServer() = default;
  ~HttpServer();
  void route(const std::string& path, Handler h) { routes_[path] = std::move(h); }
  // Binds host:port (port 0 = any) and starts serving.
  Status start(const std::string& host, uint16_t port);
  void stop();
  uint16_t port() const { return port_; }

 private:
  void serve();
  void handle(int fd);
  std::map<std::string, Handler> routes_;
  net::UniqueFd listen_;
  net::UniqueFd stop_;
  uint16_t port_ = 0;
  std::thread thread_;
};

}  // namespace rdx::server
