#include "metrics/metrics.h"

#include <gtest/gtest.h>

namespace rdx::metrics {

TEST(Metrics, RendersPrometheusText) {
  Registry r;
  r.add([](Writer& w) {
    w.counter("rdx_requests_total", "Requests served.", 42, {{"op", "get"}});
    w.counter("rdx_requests_total", "Requests served.", 7, {{"op", "put\"x"}});
    w.gauge("rdx_ready", "1 when ready.", 1);
    Histogram h;
    h.record(2'000);      // 2 us
    h.record(3'000'000);  // 3 ms
    w.histogram_ns("rdx_latency_seconds", "Latency.", h, {{"op", "get"}});
  });
  std::string out = r.render();
  EXPECT_NE(out.find("# TYPE rdx_requests_total counter\n"), std::string::npos);
  EXPECT_EQ(out.find("# TYPE rdx_requests_total counter"), out.rfind("# TYPE rdx_requests_total counter"));
  EXPECT_NE(out.find("rdx_requests_total{op=\"get\"} 42\n"), std::string::npos);
  EXPECT_NE(out.find("rdx_requests_total{op=\"put\\\"x\"} 7\n"), std::string::npos);
  EXPECT_NE(out.find("rdx_ready 1\n"), std::string::npos);
  EXPECT_NE(out.find("rdx_latency_seconds_bucket{op=\"get\",le=\"1e-06\"} 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("rdx_latency_seconds_bucket{op=\"get\",le=\"5e-06\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("rdx_latency_seconds_bucket{op=\"get\",le=\"0.005\"} 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("rdx_latency_seconds_bucket{op=\"get\",le=\"+Inf\"} 2\n"), std::string::npos);
  EXPECT_NE(out.find("rdx_latency_seconds_count{op=\"get\"} 2\n"), std::string::npos);
}

}  // namespace rdx::metrics
