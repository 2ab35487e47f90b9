// Odyssey's client API (client/sessions.h) over every registered replication protocol, through a real client on
// tcp loopback: session order with several sessions in flight at once, FAA and compare-and-set where the protocol
// offers them (else refused, nothing applied), the synchronous form, and bad input refused with nothing applied.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "client/sessions.h"
#include "cluster/kv_api.h"
#include "replication/replication.h"
#include "store/hashtable.h"
#include "test_cluster.h"

namespace rdx::conformance {
namespace {

using namespace std::chrono_literals;
using client::Reply;
using client::Request;

class SessionsConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    cluster_ = std::make_unique<TestCluster>(replication_options(GetParam()),
                                             [](int, server::ServiceEnv&) -> std::unique_ptr<server::Service> {
                                               return std::make_unique<server::Service>();
                                             });
    ASSERT_TRUE(cluster_->start());
    auto ct = client::ClientTransport::create(cluster_->node(0).topology(), 1);
    ASSERT_TRUE(ct.is_ok()) << ct.status().to_string();
    transport_ = std::move(ct.value());
    auto c = client::Client::create(*transport_, 0);
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    client_ = std::move(c.value());
    ASSERT_TRUE(client_->connect(10s).is_ok());
  }
  void TearDown() override {
    client_.reset();
    transport_.reset();
    cluster_.reset();
  }
  bool offers_rmw() const {
    return replication::replication_protocols().find(GetParam())->ops == replication::Ops::kReadModifyWrite;
  }
  // A synchronous read on a fresh session.
  Reply read(const std::string& key) {
    client::Sessions s(*client_, 1);
    auto r = s.run(0, Request::read(key, true));
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    return r.is_ok() ? r.value() : Reply{};
  }

  std::unique_ptr<TestCluster> cluster_;
  std::unique_ptr<client::ClientTransport> transport_;
  std::unique_ptr<client::Client> client_;
};

// Four sessions, each with many requests in flight in its ROB: FAA and reads of one counter. Replies come in
// session order; within a session each read sees at least the session's previous FAA, and the FAAs' results
// increase (session order is execution order); the counter ends at the number of FAAs.
TEST_P(SessionsConformance, SessionOrderAcrossManyRequestsInFlight) {
  constexpr uint32_t kSessions = 4, kPerSession = 60;
  client::Sessions sessions(*client_, kSessions, 32);
  std::vector<std::vector<Request::Kind>> issued(kSessions);
  std::vector<std::vector<Reply>> replies(kSessions);
  std::vector<uint32_t> next(kSessions, 0);
  for (bool busy = true; busy;) {
    busy = false;
    for (uint32_t s = 0; s < kSessions; ++s) {
      while (next[s] < kPerSession && sessions.outstanding(s) < 32) {
        Request r = next[s] % 3 == 2 ? Request::read("ctr", next[s] % 2 == 0) : Request::faa("ctr", 1);
        issued[s].push_back(r.kind);
        auto id = sessions.issue(s, std::move(r));
        ASSERT_TRUE(id.is_ok()) << id.status().to_string();
        ASSERT_EQ(id.value(), ++next[s]) << "request ids increase by one within a session";
      }
      auto got = sessions.poll_all(s);
      ASSERT_TRUE(got.is_ok());
      for (Reply& r : got.value()) replies[s].push_back(std::move(r));
      busy = busy || replies[s].size() < kPerSession;
    }
  }
  uint64_t faas = 0;
  for (uint32_t s = 0; s < kSessions; ++s) {
    int64_t last = 0;
    for (uint32_t i = 0; i < kPerSession; ++i) {
      const Reply& r = replies[s][i];
      ASSERT_EQ(r.id, i + 1) << "polled in session order";
      if (issued[s][i] == Request::Kind::kFaa) {
        if (!offers_rmw()) {
          ASSERT_EQ(r.status, Code::kUnsupported) << r.error;
          continue;
        }
        ASSERT_EQ(r.status, Code::kOk) << r.error;
        ASSERT_TRUE(r.applied);
        ASSERT_GT(r.number, last) << "session " << s << " request " << r.id;
        last = r.number;
        ++faas;
      } else if (offers_rmw()) {
        ASSERT_EQ(r.status, Code::kOk) << r.error;
        ASSERT_GE(std::stoll(r.value), last) << "a read sees its session's earlier FAA";
        last = std::stoll(r.value);
      } else {
        ASSERT_EQ(r.status, Code::kNotFound) << "a refused FAA applied nothing";
      }
    }
  }
  Reply end = read("ctr");
  if (offers_rmw()) {
    EXPECT_EQ(end.status, Code::kOk);
    EXPECT_EQ(end.value, std::to_string(faas));
  } else {
    EXPECT_EQ(end.status, Code::kNotFound);
  }
}

// Sessions increment a counter by read + CAS (strong on even sessions, weak on odd ones): only CASes whose expected
// value was current apply, so the counter ends at the number applied; a failed CAS returns the value it found.
TEST_P(SessionsConformance, CompareAndSetIncrements) {
  constexpr uint32_t kSessions = 4, kApplied = 15;
  client::Sessions sessions(*client_, kSessions);
  ASSERT_EQ(sessions.run(0, Request::write("n", "0")).value().status, Code::kOk);
  if (!offers_rmw()) {
    Reply r = sessions.run(1, Request::cas("n", "0", "1")).value();
    EXPECT_EQ(r.status, Code::kUnsupported) << r.error;
    EXPECT_EQ(read("n").value, "0") << "a refused CAS changed nothing";
    return;
  }
  std::vector<uint32_t> applied(kSessions, 0);
  std::vector<std::optional<std::string>> seen(kSessions);  // the value the session's next CAS expects
  uint32_t failed = 0;
  for (bool busy = true; busy;) {
    busy = false;
    for (uint32_t s = 0; s < kSessions; ++s) {
      if (applied[s] < kApplied && sessions.outstanding(s) == 0) {
        Request r = seen[s] ? Request::cas("n", *seen[s], std::to_string(std::stoll(*seen[s]) + 1), s % 2 == 1)
                            : Request::read("n");
        ASSERT_TRUE(sessions.issue(s, std::move(r)).is_ok());
      }
      auto got = sessions.poll(s);
      ASSERT_TRUE(got.is_ok());
      if (auto& r = got.value()) {
        ASSERT_EQ(r->status, Code::kOk) << r->error;
        if (!seen[s]) {
          seen[s] = r->value;
        } else if (r->applied) {
          ++applied[s];
          seen[s].reset();
        } else {
          ++failed;
          ASSERT_NE(r->value, *seen[s]) << "a failed CAS returns the value that differed";
          seen[s] = r->value;
        }
      }
      busy = busy || applied[s] < kApplied || sessions.outstanding(s) > 0;
    }
  }
  EXPECT_EQ(read("n").value, std::to_string(kSessions * kApplied)) << failed << " CASes failed on the way";
}

// Bad input gets a clear error and applies nothing: a session id out of range (every call), an empty or oversized
// key, an oversized value or CAS expected value, a full ROB, a synchronous call on a session with requests
// outstanding, and a malformed write on the wire.
TEST_P(SessionsConformance, BadInputIsRefusedAndAppliesNothing) {
  client::Sessions sessions(*client_, 2, 2);
  const auto refused = [](const Status& st, Code code, std::string_view says) {
    EXPECT_EQ(st.code(), code) << st.to_string();
    EXPECT_NE(st.message().find(says), std::string::npos) << st.message();
  };
  refused(sessions.issue(2, Request::write("k", "v")).status(), Code::kInvalidArgument, "session 2 out of range");
  refused(sessions.poll(7).status(), Code::kInvalidArgument, "out of range");
  refused(sessions.poll_all(7).status(), Code::kInvalidArgument, "out of range");
  refused(sessions.run(9, Request::read("k")).status(), Code::kInvalidArgument, "out of range");
  refused(sessions.issue(0, Request::write("", "v")).status(), Code::kInvalidArgument, "key must be");
  refused(sessions.issue(0, Request::write(std::string(cluster::kMaxKeyBytes + 1, 'k'), "v")).status(),
          Code::kInvalidArgument, "key must be");
  refused(sessions.issue(0, Request::cas("k", std::string(store::kMaxValueBytes + 1, 'e'), "v")).status(),
          Code::kInvalidArgument, "expected value");
  refused(sessions.issue(0, Request::write("k", std::string(store::kMaxValueBytes + 1, 'v'))).status(),
          Code::kInvalidArgument, "value");
  EXPECT_EQ(sessions.outstanding(0), 0u) << "nothing refused was issued";

  ASSERT_TRUE(sessions.issue(1, Request::write("full", "1")).is_ok());
  ASSERT_TRUE(sessions.issue(1, Request::write("full", "2")).is_ok());
  refused(sessions.issue(1, Request::write("full", "3")).status(), Code::kResourceExhausted, "poll first");
  refused(sessions.run(1, Request::read("full")).status(), Code::kInvalidArgument, "not polled");
  std::vector<Reply> done;
  while (done.size() < 2) {
    auto got = sessions.poll_all(1);
    ASSERT_TRUE(got.is_ok());
    for (Reply& r : got.value()) done.push_back(std::move(r));
  }
  EXPECT_EQ(read("full").value, "2") << "the refused third write was not applied";

  // On the wire: a write whose operation has an unknown kind, and one with bytes after it.
  for (int variant = 0; variant < 2; ++variant) {
    rpc::Writer w;
    w.bytes("k");
    if (variant == 0) {
      w.put(uint8_t{9}).put(uint8_t{0}).put(uint8_t{0}).put(int64_t{0}).bytes("v").bytes("");
    } else {
      replication::Rmw::put("v").encode(w);
      w.put(uint8_t{1});
    }
    std::optional<rpc::Response> resp;
    auto call = [&]() -> rpc::Task<void> {
      resp = co_await client_->rpc().call(*client_->connection(0), cluster::kKvWrite, w.span());
    };
    rpc::spawn(call());
    while (!resp) client_->run_once();
    EXPECT_EQ(resp->status, Code::kInvalidArgument);
    EXPECT_NE(resp->payload.find("malformed write"), std::string::npos) << resp->payload;
  }
  EXPECT_EQ(read("k").status, Code::kNotFound) << "no refused request wrote the key";
}

std::vector<std::string> protocols() {
  std::vector<std::string> out;
  for (const auto& e : replication::replication_protocols().entries()) out.emplace_back(e.name);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Registry, SessionsConformance, ::testing::ValuesIn(protocols()), param_name);

}  // namespace
}  // namespace rdx::conformance
