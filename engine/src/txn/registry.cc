#include "txn/cc.h"

// Each protocol folder defines its factories; declared here from the list so a new protocol is one line there.
#define RDX_CC(folder, factory, name, first, onesided, hybrid, summary) \
  namespace rdx::txn::folder {                                          \
  std::unique_ptr<ConcurrencyControl> factory(const CcEnv& env);        \
  }
#include "txn/protocols.def"
#undef RDX_CC

namespace rdx::txn {

inline constexpr uint16_t kMessagesPerProtocol = 32;

const Registry<CcEntry>& cc_protocols() {
  static const Registry<CcEntry> registry{"transaction protocol",
                                          {
#define RDX_CC(folder, factory, name, first, onesided, hybrid, summary) \
  CcEntry{name, rpc::MsgRange{first, kMessagesPerProtocol}, &folder::factory, onesided, hybrid, summary},
#include "txn/protocols.def"
#undef RDX_CC
                                          }};
  return registry;
}

Result<Primitives> primitives_for(const CcEntry& cc, std::string_view mode) {
  Primitives p;
  p.mode = std::string(mode);
  if (mode == "rpc") return p;
  if (mode != "onesided" && mode != "hybrid")
    return error(Code::kInvalidArgument, "transport.primitives '{}' is not one of rpc, onesided, hybrid", mode);
  p.onesided = mode == "onesided" ? cc.onesided_phases : cc.hybrid_phases;
  if (p.onesided == 0) {
    return error(Code::kUnsupported,
                 "transaction protocol '{}' runs every phase over RPC: transport.primitives '{}' is not honoured by "
                 "it (use rpc)",
                 cc.name, mode);
  }
  return p;
}

}  // namespace rdx::txn
