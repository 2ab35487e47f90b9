#include <sys/stat.h>

#include <filesystem>

#include "transport/tcp/tcp_transport.h"
#include "transport/transport.h"
#ifdef RDX_HAVE_VERBS
#include "transport/verbs/verbs_transport.h"
#endif

namespace rdx::transport {

Result<std::unique_ptr<Transport>> make_transport(const TransportConfig& cfg) {
  if (cfg.kind == "tcp") {
    auto t = tcp::TcpTransport::create(cfg);
    if (!t) return t.status();
    return std::unique_ptr<Transport>(std::move(t.value()));
  }
  if (cfg.kind == "verbs") {
#ifdef RDX_HAVE_VERBS
    return verbs::make_verbs_transport(cfg);
#else
    return error(Code::kUnsupported, "this rdxd was built without the verbs transport (RDX_WITH_VERBS=OFF)");
#endif
  }
  return error(Code::kInvalidArgument, "unknown transport '{}' (expected tcp or verbs)", cfg.kind);
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
