// verbs_lat: latency of one-sided READ, WRITE and CAS through the rdx verbs backend, measured the way perftest's
// ib_read_lat / ib_write_lat / ib_atomic_lat measure them, so the two can be compared on the same device:
//   read, cas: one operation in flight, post + flush + poll until its completion, per-iteration time;
//   write:     ping-pong of unsignaled WRITEs, each side spinning on its memory; reports half the round trip.
// Two transports in one process (client node 1, server node 2) on the same RDMA address. Prints one line per op
// with the median of the per-run medians (emulated RDMA is noisy) and writes JSON with --json.
// Steady state: before its runs each op is repeated for --warmup-ms (300 ms). Under qemu's emulation a process
// measured right after its setup often runs at about half speed for its first 50-200 ms (sometimes all along),
// user-space code included (clock reads, empty polls), more often after an idle pause; the warmup takes it past that.
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/memory.h"
#include "transport/verbs/tests/verbs_env.h"
#include "transport/verbs/verbs_transport.h"

namespace rdx::transport::verbs {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<std::string> ops = {"read", "write", "cas"};
  int iters = 1000;
  int runs = 5;
  int warmup = 50;      // untimed iterations at the start of every run
  int warmup_ms = 300;  // the op repeated this long before the first run (steady state)
  uint32_t size = 8;
  bool hugepages = true;
  int client_cpu = -1;  // pin the measuring thread / the server thread (same placement as the perftest processes)
  int server_cpu = -1;
  std::string json;
};

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "verbs_lat: %s\nusage: verbs_lat [--ops read,write,cas] [--iters N] [--runs R] [--size BYTES] "
               "[--warmup N] [--warmup-ms MS] [--no-hugepages] [--client-cpu N] [--server-cpu N] [--json FILE]\n"
               "  RDMA address: $RDX_VERBS_ADDR or the first usable RDMA port\n",
               msg);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value for " + a).c_str());
      return argv[++i];
    };
    auto number = [&](int lo, int hi) {
      std::string v = next();
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || n < lo || n > hi)
        usage((a + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]").c_str());
      return static_cast<int>(n);
    };
    if (a == "--ops") {
      o.ops.clear();
      std::string v = next();
      for (size_t s = 0; s <= v.size();) {
        size_t e = v.find(',', s);
        if (e == std::string::npos) e = v.size();
        std::string op = v.substr(s, e - s);
        if (op != "read" && op != "write" && op != "cas") usage(("unknown op '" + op + "'").c_str());
        o.ops.push_back(op);
        s = e + 1;
      }
    } else if (a == "--iters") {
      o.iters = number(1, 10'000'000);
    } else if (a == "--runs") {
      o.runs = number(1, 1000);
    } else if (a == "--warmup") {
      o.warmup = number(0, 1'000'000);
    } else if (a == "--warmup-ms") {
      o.warmup_ms = number(0, 60'000);
    } else if (a == "--size") {
      o.size = static_cast<uint32_t>(number(8, 1 << 20));
    } else if (a == "--client-cpu") {
      o.client_cpu = number(0, 1023);
    } else if (a == "--server-cpu") {
      o.server_cpu = number(0, 1023);
    } else if (a == "--no-hugepages") {
      o.hugepages = false;
    } else if (a == "--json") {
      o.json = next();
    } else {
      usage(("unknown argument " + a).c_str());
    }
  }
  return o;
}

void pin_to(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set); rc != 0)
    std::fprintf(stderr, "verbs_lat: cannot pin to CPU %d: %s\n", cpu, std::strerror(rc));
}

// Per CPU (guest view) busy and total jiffies, from /proc/stat: shows where the time of a run went.
std::vector<std::pair<uint64_t, uint64_t>> cpu_jiffies() {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  std::ifstream f("/proc/stat");
  std::string line, name;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    in >> name;
    if (name.size() <= 3 || name.rfind("cpu", 0) != 0) continue;  // "cpuN" lines only, not the "cpu" total
    uint64_t total = 0, idle = 0, x = 0;
    for (int field = 0; in >> x; ++field) {
      total += x;
      if (field == 3 || field == 4) idle += x;  // idle, iowait
    }
    out.emplace_back(total - idle, total);
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Side {
  std::unique_ptr<Transport> t;
  MemoryBlock region;
  std::unique_ptr<Endpoint> ep;
  ConnId conn = 0;
};

Side make_side(NodeId node, bool hugepages) {
  Side s;
  TransportConfig cfg = verbs_test_config(node, 1);
  cfg.hugepages = hugepages;
  auto t = make_verbs_transport(cfg);
  if (!t) {
    std::fprintf(stderr, "verbs_lat: %s\n", t.status().to_string().c_str());
    std::exit(1);
  }
  s.t = std::move(t.value());
  s.region = std::move(MemoryBlock::allocate(1 << 20, hugepages).value());
  if (!s.t->register_region(1, s.region.data(), s.region.size()).is_ok()) std::exit(1);
  s.ep = std::move(s.t->create_endpoint(0).value());
  return s;
}

// Waits (polling) for a completion of `kind` on `ep`; returns it and counts the poll() calls. Exits on connection
// loss or a 30 s stall (the clock is read every 1024 polls only: clock reads are costly under emulation).
Completion wait_kind(Endpoint& ep, CompletionKind kind, uint64_t* polls = nullptr) {
  Completion cs[16];
  auto until = Clock::now() + std::chrono::seconds(30);
  for (uint64_t k = 1;; ++k) {
    size_t n = ep.poll(cs);
    for (size_t i = 0; i < n; ++i) {
      if (cs[i].kind == kind) {
        if (polls != nullptr) *polls += k;
        return cs[i];
      }
      if (cs[i].kind == CompletionKind::kConnDown) {
        std::fprintf(stderr, "verbs_lat: connection lost\n");
        std::exit(1);
      }
    }
    if (k % 1024 == 0 && Clock::now() > until) {
      std::fprintf(stderr, "verbs_lat: no completion within 30 s\n");
      std::exit(1);
    }
  }
}

struct RunResult {
  std::vector<double> lat;   // per-iteration latency, us
  std::vector<double> post;  // time in the backend's post path (op call + flush) during warmup, us
  uint64_t polls = 0;        // poll() calls until the completion, summed
};

// One run of `op`: warmup iterations, then `iters` measured ones. Like perftest, one timestamp per iteration (taken
// before posting; an iteration's latency is the distance to the next one's): clock reads are not free under emulation.
// The post path (op call + flush) is timed during warmup only, for the same reason.
RunResult run_once(const std::string& op, Side& cli, const Options& o, std::atomic<uint64_t>& round) {
  Endpoint& ep = *cli.ep;
  std::byte* local = ep.scratch().data();
  RunResult r;
  r.lat.reserve(o.iters);
  r.post.reserve(o.warmup);
  const int total = o.warmup + o.iters;
  std::vector<Clock::time_point> stamps;
  stamps.reserve(o.iters + 1);
  auto* mine = reinterpret_cast<volatile uint64_t*>(cli.region.data());
  auto* src = reinterpret_cast<uint64_t*>(local);
  auto* result = reinterpret_cast<uint64_t*>(local + 64);
  Completion cs[4];
  for (int i = 0; i < total; ++i) {
    const bool measured = i >= o.warmup;
    uint64_t n = 0;
    auto t0 = Clock::now();
    if (measured) stamps.push_back(t0);
    Status st;
    if (op == "write") {  // ping-pong: we write n into the server's word, its thread writes n back into ours
      n = round.fetch_add(1) + 1;
      *src = n;
      st = ep.write(cli.conn, {2, 1, 0}, src, o.size, 0, false);
    } else if (op == "read") {
      st = ep.read(cli.conn, {2, 1, 4096}, local + 128, o.size, i);
    } else {
      st = ep.cas(cli.conn, {2, 1, 4096}, uint64_t(i), uint64_t(i) + 1, result, i);
    }
    if (!st.is_ok()) {
      std::fprintf(stderr, "verbs_lat: %s: %s\n", op.c_str(), st.to_string().c_str());
      std::exit(1);
    }
    ep.flush();
    if (!measured) r.post.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    if (op == "write") {
      uint64_t k = 0;
      for (; *mine != n; ++k) ep.poll(cs);
      if (measured) r.polls += k;
    } else {
      Completion c =
          wait_kind(ep, op == "read" ? CompletionKind::kRead : CompletionKind::kCas, measured ? &r.polls : nullptr);
      if (c.status != Code::kOk) {
        std::fprintf(stderr, "verbs_lat: %s failed: %s\n", op.c_str(), code_name(c.status));
        std::exit(1);
      }
    }
  }
  stamps.push_back(Clock::now());
  const double div = op == "write" ? 2 : 1;  // ping-pong: half the round trip, as ib_write_lat reports
  for (size_t i = 0; i + 1 < stamps.size(); ++i)
    r.lat.push_back(std::chrono::duration<double, std::micro>(stamps[i + 1] - stamps[i]).count() / div);
  return r;
}

int main_impl(int argc, char** argv) {
  Options o = parse(argc, argv);
  if (verbs_env().addr.empty()) {
    std::fprintf(stderr, "verbs_lat: no RDMA device: %s\n", verbs_env().why_not.c_str());
    return 3;
  }
  Side srv = make_side(2, o.hugepages);
  Side cli = make_side(1, o.hugepages);
  auto c = cli.ep->connect(verbs_peer(2, srv.t->listen_port()), 0);
  if (!c) {
    std::fprintf(stderr, "verbs_lat: connect: %s\n", c.status().to_string().c_str());
    return 1;
  }
  cli.conn = c.value();
  // Server thread: accepts, then either echoes writes (ping-pong mode) or sleeps on its wait_fd so it does not compete
  // with the client for the CPU (perftest's passive side idles too).
  std::atomic<bool> stop{false}, pingpong{false}, srv_up{false};
  std::atomic<uint64_t> round{0};
  std::atomic<uint64_t> server_wakeups{0};
  std::thread server([&] {
    pin_to(o.server_cpu);
    Endpoint& ep = *srv.ep;
    Completion cs[16];
    auto* mine = reinterpret_cast<volatile uint64_t*>(srv.region.data());
    auto* src = reinterpret_cast<uint64_t*>(ep.scratch().data());
    uint64_t seen = 0, wakeups = 0;
    while (!stop.load()) {
      server_wakeups.store(++wakeups, std::memory_order_relaxed);  // a plain store: this loop is WRITE's echo path
      size_t n = ep.poll(cs);
      for (size_t i = 0; i < n; ++i)
        if (cs[i].kind == CompletionKind::kConnUp) {
          srv.conn = cs[i].conn;
          srv_up.store(true);
        }
      if (!srv_up.load()) continue;
      if (pingpong.load()) {
        uint64_t v = *mine;
        if (v != seen) {
          seen = v;
          *src = v;
          if (!ep.write(srv.conn, {1, 1, 0}, src, o.size, 0, false).is_ok()) std::exit(1);
          ep.flush();
        }
      } else {
        ep.arm();
        if (ep.poll(cs) == 0) {
          pollfd p{ep.wait_fd(), POLLIN, 0};
          ::poll(&p, 1, 20);
        }
      }
    }
  });
  pin_to(o.client_cpu);
  wait_kind(*cli.ep, CompletionKind::kConnUp);
  while (!srv_up.load()) std::this_thread::yield();

  {  // The cost of one empty poll(): the granularity at which a completion is noticed.
    Completion cs[16];
    constexpr int kPolls = 20000;
    auto t0 = Clock::now();
    for (int i = 0; i < kPolls; ++i) cli.ep->poll(cs);
    std::printf("rdx_lat empty_poll_us=%.3f\n",
                std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / kPolls);
  }
  {  // The cost of one clock read, paid once per iteration (a guest without a usable TSC reads a slow clocksource).
    constexpr int kReads = 2000;
    auto t0 = Clock::now();
    for (int i = 0; i < kReads; ++i) (void)Clock::now();
    std::printf("rdx_lat clock_read_us=%.3f\n",
                std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / kReads);
  }
  std::string json = "{\"addr\":\"" + verbs_env().addr + "\",\"size\":" + std::to_string(o.size) +
                     ",\"iters\":" + std::to_string(o.iters) + ",\"runs\":" + std::to_string(o.runs) + ",\"ops\":{";
  for (size_t k = 0; k < o.ops.size(); ++k) {
    const std::string& op = o.ops[k];
    pingpong.store(op == "write");
    std::vector<double> medians, all, posts;
    uint64_t polls = 0;
    if (o.warmup_ms > 0) {
      Options w = o;
      w.iters = 100;
      w.warmup = 0;
      const auto until = Clock::now() + std::chrono::milliseconds(o.warmup_ms);
      while (Clock::now() < until) run_once(op, cli, w, round);
    }
    const auto jiffies0 = cpu_jiffies();
    const uint64_t wakeups0 = server_wakeups.load();
    rusage ru0{};
    getrusage(RUSAGE_THREAD, &ru0);
    const auto wall0 = Clock::now();
    for (int r = 0; r < o.runs; ++r) {
      RunResult res = run_once(op, cli, o, round);
      medians.push_back(median(res.lat));
      all.insert(all.end(), res.lat.begin(), res.lat.end());
      posts.insert(posts.end(), res.post.begin(), res.post.end());
      polls += res.polls;
    }
    {  // Where the runs' time went: preemptions of the measuring thread (READ's responder runs in ksoftirqd on the
       // requester's CPU), wakeups of the passive side, each CPU's busy/total jiffies.
      const auto jiffies1 = cpu_jiffies();
      rusage ru1{};
      getrusage(RUSAGE_THREAD, &ru1);
      std::printf("rdx_lat diag op=%s wall_ms=%.1f client_preempted=%ld server_wakeups=%lu cpu_busy_jiffies=",
                  op.c_str(), std::chrono::duration<double, std::milli>(Clock::now() - wall0).count(),
                  ru1.ru_nivcsw - ru0.ru_nivcsw, static_cast<unsigned long>(server_wakeups.load() - wakeups0));
      for (size_t cpu = 0; cpu < jiffies1.size() && cpu < jiffies0.size(); ++cpu)
        std::printf("%s%lu/%lu", cpu ? "," : "", static_cast<unsigned long>(jiffies1[cpu].first - jiffies0[cpu].first),
                    static_cast<unsigned long>(jiffies1[cpu].second - jiffies0[cpu].second));
      std::printf("\n");
    }
    std::sort(all.begin(), all.end());
    double med = median(medians);
    double p99 = all[std::min(all.size() - 1, all.size() * 99 / 100)];
    double polls_per_op = static_cast<double>(polls) / static_cast<double>(all.size());
    std::printf(
        "rdx_lat op=%s size=%u iters=%d runs=%d median_us=%.2f min_us=%.2f p99_us=%.2f post_us=%.2f "
        "polls_per_op=%.1f run_medians_us=",
        op.c_str(), o.size, o.iters, o.runs, med, all.front(), p99, median(posts), polls_per_op);
    std::string runs_json;
    for (size_t r = 0; r < medians.size(); ++r) {
      std::printf("%s%.2f", r ? "," : "", medians[r]);
      runs_json += (r ? "," : "") + std::to_string(medians[r]);
    }
    std::printf("\n");
    std::fflush(stdout);
    json += (k ? "," : "") + std::string("\"") + op + "\":{\"median_us\":" + std::to_string(med) +
            ",\"min_us\":" + std::to_string(all.front()) + ",\"p99_us\":" + std::to_string(p99) +
            ",\"post_us\":" + std::to_string(median(posts)) + ",\"polls_per_op\":" + std::to_string(polls_per_op) +
            ",\"run_medians_us\":[" + runs_json + "]}";
  }
  json += "}}\n";
  stop.store(true);
  server.join();
  if (!o.json.empty()) {
    std::ofstream f(o.json);
    f << json;
    if (!f) {
      std::fprintf(stderr, "verbs_lat: cannot write %s\n", o.json.c_str());
      return 1;
    }
  }
  const EndpointStats& s = cli.ep->stats();
  std::printf("rdx_lat stats: onesided_issued=%lu doorbells=%lu inline_sends=%lu\n",
              static_cast<unsigned long>(s.onesided_issued), static_cast<unsigned long>(s.doorbells),
              static_cast<unsigned long>(s.inline_sends));
  return 0;
}

}  // namespace
}  // namespace rdx::transport::verbs

int main(int argc, char** argv) { return rdx::transport::verbs::main_impl(argc, argv); }
