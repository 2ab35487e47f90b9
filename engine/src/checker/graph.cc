#include "checker/graph.h"

#include <algorithm>
#include <limits>

namespace rdx::checker::detail {
namespace {
constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
}

void Graph::finalize() {
  off_.assign(uint64_t{nodes_} + 1, 0);
  for (uint64_t e : pending_) ++off_[(e >> 32) + 1];
  for (uint32_t v = 0; v < nodes_; ++v) off_[v + 1] += off_[v];
  adj_.resize(pending_.size());
  std::vector<uint64_t> fill(off_.begin(), off_.end() - 1);
  for (uint64_t e : pending_) adj_[fill[e >> 32]++] = static_cast<uint32_t>(e);
  pending_.clear();
  pending_.shrink_to_fit();
  finalized_ = true;
}

void Graph::sort_rows() {
  for (uint32_t v = 0; v < nodes_; ++v) {
    std::sort(adj_.begin() + static_cast<ptrdiff_t>(off_[v]), adj_.begin() + static_cast<ptrdiff_t>(off_[v + 1]),
              [](uint32_t a, uint32_t b) { return target(a) < target(b); });
  }
}

std::span<const uint32_t> Graph::between(uint32_t from, uint32_t to) const {
  auto row = out(from);
  auto lo = std::lower_bound(row.begin(), row.end(), to, [](uint32_t e, uint32_t t) { return target(e) < t; });
  auto hi = std::upper_bound(lo, row.end(), to, [](uint32_t t, uint32_t e) { return t < target(e); });
  return {lo, hi};
}

bool Components::any_cycle() const {
  return std::any_of(size.begin(), size.end(), [](uint32_t s) { return s > 1; });
}

Components strongly_connected(const Graph& g, EdgeMask mask, const std::vector<uint8_t>* only) {
  const uint32_t n = g.nodes();
  Components r;
  r.comp.assign(n, kNone);
  std::vector<uint32_t> index(n, kNone), low(n, 0);
  std::vector<uint32_t> stack;
  struct Frame {
    uint32_t v;
    uint32_t next;  // position in v's edge row
  };
  std::vector<Frame> calls;
  uint32_t next_index = 0;
  auto visit = [&](uint32_t v) {
    index[v] = low[v] = next_index++;
    stack.push_back(v);
    calls.push_back({v, 0});
  };
  auto excluded = [only](uint32_t v) { return only != nullptr && (*only)[v] == 0; };
  for (uint32_t root = 0; root < n; ++root) {
    if (index[root] != kNone) continue;
    if (excluded(root)) {
      index[root] = next_index++;
      r.comp[root] = static_cast<uint32_t>(r.size.size());
      r.size.push_back(1);
      continue;
    }
    visit(root);
    while (!calls.empty()) {
      const uint32_t v = calls.back().v;
      auto row = g.out(v);
      if (calls.back().next < row.size()) {
        uint32_t packed = row[calls.back().next++];
        uint32_t w = Graph::target(packed);
        if (!(mask & mask_of(Graph::kind(packed))) || excluded(w)) continue;
        if (index[w] == kNone) {
          visit(w);
        } else if (r.comp[w] == kNone) {  // visited and still on the stack
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        auto id = static_cast<uint32_t>(r.size.size());
        uint32_t count = 0, w;
        do {
          w = stack.back();
          stack.pop_back();
          r.comp[w] = id;
          ++count;
        } while (w != v);
        r.size.push_back(count);
      }
      calls.pop_back();
      if (!calls.empty()) {
        uint32_t p = calls.back().v;
        low[p] = std::min(low[p], low[v]);
      }
    }
  }
  return r;
}

std::vector<Hop> CycleFinder::shortest_cycle(const Components& c, uint32_t start, EdgeMask mask) {
  if (++stamp_ == 0) {  // wrapped: clear the stamps once
    std::fill(seen_.begin(), seen_.end(), 0);
    stamp_ = 1;
  }
  const uint32_t comp = c.comp[start];
  std::vector<uint32_t> queue{start};
  seen_[start] = stamp_;
  for (size_t head = 0; head < queue.size(); ++head) {
    uint32_t v = queue[head];
    for (uint32_t packed : g_.out(v)) {
      EdgeKind k = Graph::kind(packed);
      uint32_t w = Graph::target(packed);
      if (!(mask & mask_of(k)) || c.comp[w] != comp) continue;
      if (w == start) {  // closes the cycle: walk the predecessors back to start
        std::vector<Hop> cycle{{v, k}};
        for (uint32_t x = v; x != start; x = parent_[x].node) cycle.push_back(parent_[x]);
        std::reverse(cycle.begin(), cycle.end());
        return cycle;
      }
      if (seen_[w] == stamp_) continue;
      seen_[w] = stamp_;
      parent_[w] = {v, k};
      queue.push_back(w);
    }
  }
  return {};
}

}  // namespace rdx::checker::detail
