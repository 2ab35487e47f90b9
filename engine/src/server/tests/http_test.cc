#include "server/http.h"

#include <gtest/gtest.h>

#include <string>

#include "common/net.h"

namespace rdx::server {
namespace {

std::string request(uint16_t port, const std::string& raw) {
  auto fd = net::connect_tcp_nonblocking("127.0.0.1", port).value();
  EXPECT_TRUE(net::write_full(fd.get(), raw.data(), raw.size(), 2000).is_ok());
  std::string out;
  char buf[4096];
  for (;;) {
    Status st = net::read_full(fd.get(), buf, 1, 2000);
    if (!st.is_ok()) break;
    out.push_back(buf[0]);
  }
  return out;
}

TEST(Http, RoutesAndRejects) {
  HttpServer s;
  s.route("/healthz", [] { return HttpResponse{200, "text/plain", "ok\n"}; });
  s.route("/readyz", [] { return HttpResponse{503, "text/plain", "not yet\n"}; });
  ASSERT_TRUE(s.start("127.0.0.1", 0).is_ok());
  std::string r = request(s.port(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("\r\n\r\nok\n"), std::string::npos);
  EXPECT_EQ(request(s.port(), "GET /readyz?verbose=1 HTTP/1.0\r\n\r\n").rfind("HTTP/1.1 503", 0), 0u);
  EXPECT_EQ(request(s.port(), "GET /nope HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(request(s.port(), "POST /healthz HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0), 0u);
  EXPECT_EQ(request(s.port(), "garbage\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(request(s.port(), "GET /" + std::string(10000, 'a') + " HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 431", 0), 0u);
  std::string head = request(s.port(), "HEAD /healthz HTTP/1.1\r\n\r\n");
  EXPECT_EQ(head.find("ok\n"), std::string::npos);
  s.stop();
}

}  // namespace
}  // namespace rdx::server
