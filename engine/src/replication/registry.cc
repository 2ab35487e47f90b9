#include "replication/replication.h"

// Each protocol folder defines its factory; declared here from the list so a new protocol is one line there.
#define RDX_REPLICATION(folder, name, first, transactions, survives, ops, reads, feed, summary) \
  namespace rdx::replication::folder {                                                          \
  std::unique_ptr<ReplicationNode> make_node(const NodeEnv& env);                               \
  }
#include "replication/protocols.def"
#undef RDX_REPLICATION

namespace rdx::replication {

inline constexpr uint16_t kMessagesPerProtocol = 32;

const Registry<ReplicationEntry>& replication_protocols() {
  static const Registry<ReplicationEntry> registry{"replication protocol",
                                                   {
#define RDX_REPLICATION(folder, name, first, transactions, survives, ops, reads, feed, summary) \
  ReplicationEntry{name,                                                                        \
                   rpc::MsgRange{first, kMessagesPerProtocol},                                  \
                   &folder::make_node,                                                          \
                   transactions,                                                                \
                   survives,                                                                    \
                   ops,                                                                         \
                   reads,                                                                       \
                   feed,                                                                        \
                   summary},
#include "replication/protocols.def"
#undef RDX_REPLICATION
                                                   }};
  return registry;
}

}  // namespace rdx::replication
