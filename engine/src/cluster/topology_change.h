#pragma once
// Membership epochs a running node applies without restarting: rdxd follows its topology file, and a new epoch that
// only adds or removes data nodes (a scale-out, a scale-in) is applied live. Everything else in the file (transport,
// protocols, workers, memory, shards...) needs new processes: such an epoch is refused here with the fields named.
//
// Node ids are indices in `nodes` and name the same node in every epoch a process sees: a new node is appended, a
// removed one keeps its slot as Role::kRemoved (so an id that an in-flight message or a lock carries never comes to
// mean another node), and a node that comes back takes its old slot.
//
// Majorities (leases, elections) are counted over the data nodes of each node's own epoch, and nodes learn a new
// epoch at different times: a change is accepted only when every majority of the old data nodes intersects every
// majority of the new ones (one node at a time in small clusters, as in Raft's single-server changes), so two nodes
// in different epochs can never each count a majority that excludes the other's.
#include <cstdint>
#include <string>
#include <vector>

#include "cluster/topology.h"

namespace rdx::cluster {

struct TopologyChange {
  Topology merged;                // what the node runs from now on (`next`, plus removed nodes kept as kRemoved)
  std::vector<uint16_t> added;    // data nodes this epoch adds (new, or back after a removal)
  std::vector<uint16_t> removed;  // data nodes this epoch removes
  bool self_removed = false;      // `self` is not in `next`: it leaves the cluster
  // `next` skips epochs this node missed, and from what it runs a majority could have moved on without it (3 -> 5
  // through an epoch it never saw): it takes `next` as its own, but as a node that may have missed writes: it leaves
  // sync (no authority as a primary, no reads) and copies its shard again.
  bool rejoin = false;
};

// Plans the change from `running` (what node `self` runs) to `next` (a newer file). kInvalidArgument when `next`
// is not newer, kUnsupported (with the fields named) when it changes more than the data members, or changes them in
// one epoch in a way majorities could not survive (across skipped epochs: `rejoin`).
Result<TopologyChange> plan_topology_change(const Topology& running, const Topology& next, uint16_t self);

// A fingerprint of what a running node cannot change: the settings, not the epoch nor the members. Nodes with
// different fingerprints refuse each other (the transport's and the RPC layer's epoch check), so a process started
// from a file it cannot share a cluster with is refused, while nodes of two membership epochs talk.
uint32_t restart_fingerprint(const Topology& t);

}  // namespace rdx::cluster
