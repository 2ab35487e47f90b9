// The registry of replication protocols: one line per protocol.
#include <map>

#include "server/protocol.h"
#include "server/replication/primary_backup.h"

namespace rdx::server {

namespace {
template <typename P>
ProtocolFactory factory() {
  return [](WorkerContext& ctx) { return std::make_unique<P>(ctx); };
}

const std::map<std::string, ProtocolFactory>& registry() {
  static const std::map<std::string, ProtocolFactory> r = {
      {"primary-backup", factory<PrimaryBackup>()},
  };
  return r;
}
}  // namespace

Result<ProtocolFactory> find_replication_protocol(const std::string& name) {
  auto it = registry().find(name);
  if (it != registry().end()) return it->second;
  std::string known;
  for (const auto& [k, v] : registry()) known += (known.empty() ? "" : ", ") + k;
  return error(Code::kUnsupported, "replication protocol '{}' is not implemented by this rdxd (available: {})", name,
               known);
}

}  // namespace rdx::server
