#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>

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

namespace {
constexpr std::array<std::string_view, 9> kPhaseNames = {
    "read", "lock", "validate", "log", "commit", "release", "renew", "input_broadcast", "value_forward"};
}  // namespace

std::optional<Phase> phase_named(std::string_view name) {
  for (size_t i = 0; i < kPhaseNames.size(); ++i)
    if (kPhaseNames[i] == name) return static_cast<Phase>(i);
  return std::nullopt;
}

std::vector<std::string> phase_names(uint32_t bits) {
  std::vector<std::string> out;
  for (size_t i = 0; i < kPhaseNames.size(); ++i)
    if ((bits & phase_bit(static_cast<Phase>(i))) != 0) out.emplace_back(kPhaseNames[i]);
  return out;
}

Result<Primitives> primitives_for(const CcEntry& cc, std::string_view mode,
                                  const std::optional<std::vector<std::string>>& phases) {
  Primitives p;
  p.mode = std::string(mode);
  if (phases && mode != "hybrid")
    return error(Code::kInvalidArgument, "transport.onesided_phases chooses the phases of primitives hybrid, not {}",
                 mode);
  if (mode == "rpc") return p;
  if (mode != "onesided" && mode != "hybrid")
    return error(Code::kInvalidArgument, "transport.primitives '{}' is not one of rpc, onesided, hybrid", mode);
  p.onesided = mode == "onesided" ? cc.onesided_phases : cc.hybrid_phases;
  if (phases) {
    p.onesided = 0;
    for (const std::string& name : *phases) {
      const std::optional<Phase> phase = phase_named(name);
      if (!phase)
        return error(Code::kInvalidArgument, "transport.onesided_phases: '{}' is not a phase (phases: {})", name,
                     fmt::join(kPhaseNames, ", "));
      if ((cc.onesided_phases & phase_bit(*phase)) == 0) {
        const std::vector<std::string> can = phase_names(cc.onesided_phases);
        return error(Code::kUnsupported,
                     "transport.onesided_phases: transaction protocol '{}' runs phase '{}' over RPC only ({})", cc.name,
                     name,
                     can.empty() ? std::string("it runs every phase over RPC")
                                 : fmt::format("one-sided: {}", fmt::join(can, ", ")));
      }
      p.onesided |= phase_bit(*phase);
    }
  }
  if (p.onesided == 0) {
    return error(Code::kUnsupported,
                 "transaction protocol '{}' runs every phase over RPC: transport.primitives '{}' is not honoured by "
                 "it (use rpc)",
                 cc.name, mode);
  }
  return p;
}

}  // namespace rdx::txn
