#pragma once
// The checker's dependency graph: typed edges in compressed sparse rows (4 bytes per edge), strongly connected
// components by an iterative Tarjan (no recursion: histories have millions of nodes), and shortest cycles by BFS.
#include <cstdint>
#include <span>
#include <vector>

#include "checker/checker.h"

namespace rdx::checker::detail {

using EdgeMask = uint8_t;  // bit (1 << EdgeKind)
inline constexpr EdgeMask mask_of(EdgeKind k) { return static_cast<EdgeMask>(1u << static_cast<unsigned>(k)); }
inline constexpr EdgeMask kAllEdges = 0x0f;

class Graph {
 public:
  static constexpr uint32_t kMaxNodes = 1u << 30;  // two bits of each packed edge hold its kind

  explicit Graph(uint32_t nodes) : nodes_(nodes) {}
  uint32_t nodes() const { return nodes_; }
  uint64_t edges() const { return finalized_ ? adj_.size() : pending_.size(); }

  // Before finalize(): records an edge (self-loops are dropped; duplicates are harmless).
  void add_edge(uint32_t from, uint32_t to, EdgeKind kind) {
    if (from == to) return;
    pending_.push_back(uint64_t{from} << 32 | pack(to, kind));
  }
  // Builds the rows (counting sort by source) and frees the pending list.
  void finalize();
  // Orders each row by target, so parallel edges are adjacent and an edge can be found by binary search.
  void sort_rows();
  // The edges from -> to (a sub-range of from's row), after sort_rows().
  std::span<const uint32_t> between(uint32_t from, uint32_t to) const;

  std::span<const uint32_t> out(uint32_t v) const { return {adj_.data() + off_[v], adj_.data() + off_[v + 1]}; }
  static uint32_t target(uint32_t packed) { return packed & (kMaxNodes - 1); }
  static EdgeKind kind(uint32_t packed) { return static_cast<EdgeKind>(packed >> 30); }

 private:
  static uint32_t pack(uint32_t to, EdgeKind k) { return to | static_cast<uint32_t>(k) << 30; }
  uint32_t nodes_;
  bool finalized_ = false;
  std::vector<uint64_t> pending_;
  std::vector<uint64_t> off_;
  std::vector<uint32_t> adj_;
};

struct Components {
  std::vector<uint32_t> comp;  // component id per node
  std::vector<uint32_t> size;  // nodes per component
  bool any_cycle() const;      // some component has more than one node
};

// Strongly connected components over the edges whose kind is in `mask`. With `only`, nodes v with only[v] == 0 are
// left out (each its own component, no edges): restricting later passes to the cyclic part of an earlier one.
Components strongly_connected(const Graph& g, EdgeMask mask, const std::vector<uint8_t>* only = nullptr);

// One hop of a cycle: the node and the kind of the edge leaving it towards the next node.
struct Hop {
  uint32_t node;
  EdgeKind kind;
};

// Finds shortest cycles (in hops) through a node, staying inside its component and using `mask` edges. Reuses its
// scratch arrays across calls, so reporting many small cycles stays linear.
class CycleFinder {
 public:
  explicit CycleFinder(const Graph& g) : g_(g), seen_(g.nodes(), 0), parent_(g.nodes()) {}
  // Empty if no cycle through `start` exists under these constraints.
  std::vector<Hop> shortest_cycle(const Components& c, uint32_t start, EdgeMask mask);

 private:
  const Graph& g_;
  std::vector<uint32_t> seen_;  // BFS stamp per node
  std::vector<Hop> parent_;     // BFS predecessor and the kind of the edge from it
  uint32_t stamp_ = 0;
};

}  // namespace rdx::checker::detail
