#include "server/topology_follower.h"

#include <spdlog/spdlog.h>

namespace rdx::server {

TopologyFollower::Outcome TopologyFollower::poll(bool read_file) {
  if (std::string offered = node_.take_offered_topology(); !offered.empty()) {
    Outcome o = consider(offered, "a peer's topology");
    if (o == Outcome::kRemoved) return o;
  }
  if (!read_file) return Outcome::kUnchanged;
  // (A ConfigMap update swaps a symlink: the file may be missing for a moment; the next poll reads it.)
  auto text = cluster::read_topology_file(path_);
  if (!text || text.value().empty() || text.value() == last_file_text_) return Outcome::kUnchanged;
  last_file_text_ = text.value();
  return consider(text.value(), "the topology file");
}

TopologyFollower::Outcome TopologyFollower::consider(const std::string& text, const char* source) {
  if (text == node_.topology_text()) return Outcome::kUnchanged;
  const uint32_t running = node_.topology().epoch;
  auto refuse = [&](const std::string& why) {
    if (text != last_refused_text_)
      spdlog::error("rdxd: {} changed; not applied, epoch {} runs on: {}", source, running, why);
    last_refused_text_ = text;
    node_.set_topology_refusal(why);
    return Outcome::kRefused;
  };
  auto next = cluster::parse_topology(text);
  if (!next) return refuse(next.status().message());
  if (next.value().epoch < running) return Outcome::kUnchanged;  // not refreshed yet, or a late hand-over
  if (next.value().epoch == running)
    return refuse(fmt::format("its contents differ from the running epoch {}'s", running));
  auto applied = node_.apply_topology(next.value(), text);
  if (!applied) return refuse(applied.status().message());
  node_.set_topology_refusal("");
  if (applied.value()) {
    spdlog::warn("rdxd: epoch {} removes this node ({}) from the cluster", next.value().epoch, node_.spec().name);
    return Outcome::kRemoved;
  }
  spdlog::info("rdxd: epoch {} from {} applied", next.value().epoch, source);
  return Outcome::kApplied;
}

}  // namespace rdx::server
