#include <sys/stat.h>

#include <filesystem>

#include "transport/tcp/tcp_transport.h"
#include "transport/transport.h"
#ifdef RDX_HAVE_VERBS
#include "transport/verbs/verbs_transport.h"
#endif

namespace rdx::transport {

namespace {
Result<std::unique_ptr<Transport>> make_tcp(const TransportConfig& cfg) {
  auto t = tcp::TcpTransport::create(cfg);
  if (!t) return t.status();
  return std::unique_ptr<Transport>(std::move(t.value()));
}
}  // namespace

const Registry<TransportEntry>& transports() {
  static const Registry<TransportEntry> registry{
      "transport",
      {
          {"tcp", make_tcp, "TCP sockets: works everywhere; one-sided operations are executed by the target's CPU"},
#ifdef RDX_HAVE_VERBS
          {"verbs", verbs::make_verbs_transport, "RDMA through rdma-core (InfiniBand, RoCE, soft-RoCE): RC QPs"},
#endif
      }};
  return registry;
}

Result<std::unique_ptr<Transport>> make_transport(const TransportConfig& cfg) {
  auto entry = transports().lookup(cfg.kind);
  if (!entry) return Status(Code::kInvalidArgument, entry.status().message());
  return entry.value()->make(cfg);
}

bool verbs_available(std::string* why_not) {
#ifdef RDX_HAVE_VERBS
  return verbs::verbs_devices_present(why_not);
#else
  if (why_not != nullptr) *why_not = "built without the verbs transport";
  return false;
#endif
}

}  // namespace rdx::transport
