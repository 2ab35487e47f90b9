// Finding and reporting the cycles of the dependency graph. Only the cyclic part of the graph (the non-trivial
// strongly connected components of the full graph) is searched, so a clean history costs one Tarjan pass.
//   1. Two-transaction cycles, one by one (the common anomalies: lost updates, write skew between two
//      transactions, stale reads against real time), so their counts are exact even when many of them merge into
//      one big component.
//   2. Longer cycles: for each edge set ww, ww+wr, ww+wr+rw, all, one shortest cycle per component that holds no
//      reported cycle yet. A component can merge several anomalies, so these counts are lower bounds; the verdict
//      (any cycle at all) is exact.
#include <algorithm>

#include "checker/checker_impl.h"

namespace rdx::checker::detail {
namespace {

// Weaker dependencies first: a cycle is classified by the weakest kinds that close it.
int strength(EdgeKind k) {
  switch (k) {
    case EdgeKind::kWW:
      return 0;
    case EdgeKind::kWR:
      return 1;
    case EdgeKind::kRW:
      return 2;
    case EdgeKind::kRT:
      return 3;
  }
  return 3;
}

// The weakest dependency kind among parallel edges, or kRT if there is none.
EdgeKind weakest_dependency(std::span<const uint32_t> edges) {
  EdgeKind best = EdgeKind::kRT;
  for (uint32_t e : edges) {
    EdgeKind k = Graph::kind(e);
    if (strength(k) < strength(best)) best = k;
  }
  return best;
}

}  // namespace

void Checker::report_short_cycles(const Graph& g, const Components& all, std::vector<uint8_t>& reported) {
  const auto n = static_cast<uint32_t>(txn_.size());
  for (uint32_t u = 0; u < n; ++u) {
    if (all.size[all.comp[u]] < 2) continue;
    auto row = g.out(u);
    for (size_t i = 0; i < row.size();) {
      const uint32_t v = Graph::target(row[i]);
      size_t j = i;
      while (j < row.size() && Graph::target(row[j]) == v) ++j;
      const EdgeKind forward = weakest_dependency(row.subspan(i, j - i));
      i = j;
      if (v >= n || forward == EdgeKind::kRT || all.comp[v] != all.comp[u]) continue;
      const EdgeKind back = weakest_dependency(g.between(v, u));
      if (back != EdgeKind::kRT) {
        if (u < v) report_cycle({{u, forward}, {v, back}}, reported);  // once per pair
      } else if (opt_.check_real_time && end_[v] + opt_.rt_slack_ns < start_[u]) {
        report_cycle({{u, forward}, {v, EdgeKind::kRT}}, reported);  // u must precede v, but v ended first
      }
    }
  }
}

void Checker::find_cycles(Graph& g) {
  const EdgeMask full = opt_.check_real_time ? kAllEdges : static_cast<EdgeMask>(kAllEdges & ~mask_of(EdgeKind::kRT));
  Components all = strongly_connected(g, full);
  if (!all.any_cycle()) return;  // the common case
  g.sort_rows();
  std::vector<uint8_t> cyclic(g.nodes(), 0), reported(g.nodes(), 0);
  for (uint32_t v = 0; v < g.nodes(); ++v) cyclic[v] = all.size[all.comp[v]] > 1;
  report_short_cycles(g, all, reported);

  const EdgeMask ww = mask_of(EdgeKind::kWW), wr = mask_of(EdgeKind::kWR), rw = mask_of(EdgeKind::kRW);
  std::vector<EdgeMask> passes{ww, static_cast<EdgeMask>(ww | wr), static_cast<EdgeMask>(ww | wr | rw)};
  if (full != passes.back()) passes.push_back(full);
  CycleFinder finder(g);
  const auto n = static_cast<uint32_t>(txn_.size());
  for (EdgeMask mask : passes) {
    // Any cycle over fewer edge kinds lies inside a cyclic component of the full graph: search only there.
    Components c = mask == full ? std::move(all) : strongly_connected(g, mask, &cyclic);
    // Components that hold no reported cycle yet: one shortest cycle from their first transaction.
    std::vector<uint32_t> start(c.size.size(), kNone);
    std::vector<uint8_t> has_reported(c.size.size(), 0);
    for (uint32_t v = 0; v < g.nodes(); ++v) {
      uint32_t comp = c.comp[v];
      if (c.size[comp] < 2) continue;
      has_reported[comp] |= reported[v];
      if (v < n && start[comp] == kNone) start[comp] = v;
    }
    for (size_t comp = 0; comp < start.size(); ++comp) {
      if (start[comp] == kNone || has_reported[comp]) continue;
      std::vector<Hop> cycle = finder.shortest_cycle(c, start[comp], mask);
      if (!cycle.empty()) report_cycle(cycle, reported);
    }
  }
}

}  // namespace rdx::checker::detail
