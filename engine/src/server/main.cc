// rdxd: the rdx node daemon.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <string>

#include "server/node.h"
#include "server/resp/resp_frontend.h"
#include "server/topology.h"

int main(int argc, char** argv) {
  CLI::App app{"rdxd: the rdx node daemon (one replica of one shard)"};
  std::string config, node_name, listen = "0.0.0.0", log_level = "info";
  bool busy_poll = false;
  app.add_option("--config", config, "topology file (JSON; see engine/docs/topology.md)")->required();
  app.add_option("--node", node_name, "this node's name in the topology (default: $RDX_NODE, else the hostname)");
  app.add_option("--listen", listen, "address the transport, Redis and HTTP listeners bind to");
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  app.add_flag("--busy-poll", busy_poll, "workers never sleep (lowest latency; one core per worker)");
  CLI11_PARSE(app, argc, argv);

  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  if (node_name.empty()) {
    if (const char* env = std::getenv("RDX_NODE"); env != nullptr && *env != '\0') {
      node_name = env;
    } else {
      char host[256] = {};
      gethostname(host, sizeof(host) - 1);
      node_name = host;
    }
  }

  // Signals are handled synchronously by this thread; every other thread inherits the blocked mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto topo = rdx::server::load_topology(config);
  if (!topo) {
    spdlog::error("rdxd: invalid configuration: {}", topo.status().message());
    return 2;
  }
  rdx::server::NodeOptions opts;
  opts.node_name = node_name;
  opts.listen_host = listen;
  opts.http_host = listen;
  opts.busy_poll = busy_poll;
  auto node = rdx::server::Node::create(std::move(topo.value()), opts);
  if (!node) {
    spdlog::error("rdxd: {}", node.status().message());
    return 2;
  }
  node.value()->set_frontend_factory(rdx::resp::make_resp_frontend);
  if (auto st = node.value()->start(); !st.is_ok()) {
    spdlog::error("rdxd: failed to start: {}", st.to_string());
    return 1;
  }
  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("rdxd: signal {} received, stopping", sig);
  node.value()->stop();
  spdlog::info("rdxd: stopped");
  return 0;
}
