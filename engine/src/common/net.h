#pragma once
// Socket helpers shared by the tcp transport and the servers (HTTP, Redis endpoint).
#include <cstdint>
#include <string>

#include "common/status.h"

namespace rdx::net {

// Closes the fd on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.release();
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset(int fd = -1);
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Listening TCP socket on host:port (port 0 = any); SO_REUSEADDR, non-blocking. Returns the bound port in *port.
Result<UniqueFd> listen_tcp(const std::string& host, uint16_t* port, int backlog = 128);
// Starts a non-blocking connect; resolves `host` (numeric or DNS). Completion is signalled by writability.
Result<UniqueFd> connect_tcp_nonblocking(const std::string& host, uint16_t port);
Status set_nonblocking(int fd);
void set_nodelay(int fd);
// Reads/writes exactly n bytes on a (possibly non-blocking) fd, waiting up to timeout_ms in total.
Status read_full(int fd, void* buf, size_t n, int timeout_ms);
Status write_full(int fd, const void* buf, size_t n, int timeout_ms);

}  // namespace rdx::net
