#pragma once
// rdxd follows its topology: Kubernetes updates a mounted ConfigMap in place, and a new membership epoch in it (data
// nodes added or removed) is applied without a restart (Node::apply_topology). Peers spread an epoch too: a node
// that learns from a heartbeat that a peer runs an older epoch hands it its file (cluster::kTopologyPush), so every
// node applies an epoch within a heartbeat of the first one that read it, however late its own copy of the file is
// updated (the kubelet refreshes ConfigMap volumes on its own schedule). A text that does not parse, repeats the
// running epoch with other contents, or changes what only a restart can change is refused with a message and
// changes nothing: the node runs its epoch on. An older epoch (a file not refreshed yet) is ignored.
#include <string>

#include "server/node.h"

namespace rdx::server {

class TopologyFollower {
 public:
  // The node runs the epoch of `path`, whose text it was started from (Node::topology_text).
  TopologyFollower(Node& node, std::string path) : node_(node), path_(std::move(path)) {}

  enum class Outcome { kUnchanged, kApplied, kRefused, kRemoved };
  // Applies a text a peer handed this node, if any, and (when `read_file`) the file's. kRemoved when the new epoch
  // no longer has this node (the caller stops it). A refusal is logged once per distinct text and kept in
  // Node::topology_refusal until a newer epoch is applied.
  Outcome poll(bool read_file);

 private:
  Outcome consider(const std::string& text, const char* source);

  Node& node_;
  std::string path_;
  std::string last_file_text_;     // the file's text last considered
  std::string last_refused_text_;  // (logged once)
};

}  // namespace rdx::server
