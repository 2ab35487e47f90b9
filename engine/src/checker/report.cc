// Turning findings into violations: names, cycle justification (which key and versions make each edge), and the text
// report rdx-check prints.
#include <fmt/format.h>

#include "checker/checker_impl.h"

namespace rdx::checker {

const char* anomaly_name(Anomaly a) {
  switch (a) {
    case Anomaly::kG0:
      return "G0";
    case Anomaly::kG1c:
      return "G1c";
    case Anomaly::kGSingle:
      return "G-single";
    case Anomaly::kG2:
      return "G2";
    case Anomaly::kRealTime:
      return "real-time";
    case Anomaly::kAbortedRead:
      return "aborted-read (G1a)";
    case Anomaly::kUnwrittenRead:
      return "unwritten-read";
    case Anomaly::kDeletedRead:
      return "deleted-version-read";
    case Anomaly::kOwnWriteRead:
      return "own-write-read";
    case Anomaly::kAbsentRead:
      return "impossible-absent-read";
    case Anomaly::kDuplicateWrite:
      return "duplicate-version";
  }
  return "unknown";
}

const char* anomaly_description(Anomaly a) {
  switch (a) {
    case Anomaly::kG0:
      return "cycle of write-write dependencies";
    case Anomaly::kG1c:
      return "cycle of write and read dependencies (circular information flow)";
    case Anomaly::kGSingle:
      return "cycle with one anti-dependency (lost update, read skew, fractured read)";
    case Anomaly::kG2:
      return "cycle with several anti-dependencies (write skew)";
    case Anomaly::kRealTime:
      return "serializable only against real time (a transaction saw the past)";
    case Anomaly::kAbortedRead:
      return "read a version only an aborted transaction wrote";
    case Anomaly::kUnwrittenRead:
      return "read a version no transaction wrote";
    case Anomaly::kDeletedRead:
      return "read a delete's version as a value";
    case Anomaly::kOwnWriteRead:
      return "read the version its own write created";
    case Anomaly::kAbsentRead:
      return "read a key as absent where no absent state fits";
    case Anomaly::kDuplicateWrite:
      return "two committed transactions created the same version";
  }
  return "unknown";
}

const char* edge_name(EdgeKind e) {
  switch (e) {
    case EdgeKind::kWW:
      return "ww";
    case EdgeKind::kWR:
      return "wr";
    case EdgeKind::kRW:
      return "rw";
    case EdgeKind::kRT:
      return "rt";
  }
  return "?";
}

bool CheckReport::ok() const { return total() == 0; }

uint64_t CheckReport::total() const {
  uint64_t sum = 0;
  for (uint64_t c : counts) sum += c;
  return sum;
}

namespace {

std::string txn_text(const TxnRef& t) {
  return t.type.empty() ? fmt::format("T{}", t.id) : fmt::format("T{} ({})", t.id, t.type);
}

std::string step_text(const CycleStep& s) {
  switch (s.kind) {
    case EdgeKind::kWW:
      return fmt::format("-ww[{}: v{} -> v{}]->", s.key, s.from_version, s.to_version);
    case EdgeKind::kWR:
      return fmt::format("-wr[{}: v{}]->", s.key, s.from_version);
    case EdgeKind::kRW:
      return fmt::format("-rw[{}: read v{}, overwritten by v{}]->", s.key, s.from_version, s.to_version);
    case EdgeKind::kRT:
      return fmt::format("-rt[ended {} < started {}]->", s.from_end_ns, s.to_start_ns);
  }
  return "->";
}

}  // namespace

namespace detail {

std::string Checker::ref(uint32_t node) const { return txn_text(txn_ref(node)); }

Violation* Checker::report(Anomaly kind, std::string message, std::vector<uint32_t> nodes) {
  auto i = static_cast<size_t>(kind);
  ++out_.counts[i];
  if (examples_[i].size() >= opt_.max_examples) return nullptr;
  Violation v{kind, std::move(message), {}, {}};
  for (uint32_t n : nodes) v.txns.push_back(txn_ref(n));
  examples_[i].push_back(std::move(v));
  return &examples_[i].back();
}

CycleStep Checker::justify(uint32_t from, uint32_t to, EdgeKind kind) const {
  CycleStep s{txn_ref(from), txn_ref(to), kind};
  switch (kind) {
    case EdgeKind::kWW:
      for (uint64_t w = write_off_[to]; w < write_off_[to + 1]; ++w) {
        uint32_t k = write_key_[w];
        uint32_t p = write_pos_[w];
        if (p != kNone && p > key_off_[k] && vers_[p - 1].node == from) {
          s.key = keys_.name(k);
          s.from_version = vers_[p - 1].version;
          s.to_version = vers_[p].version;
          break;
        }
      }
      break;
    case EdgeKind::kWR:
      for (uint64_t r = read_off_[to]; r < read_off_[to + 1]; ++r) {
        uint32_t p = read_pos_[r];
        if (p != kNone && p != kInitialPos && vers_[p].node == from) {
          s.key = keys_.name(read_key_[r]);
          s.from_version = s.to_version = read_ver_[r];
          break;
        }
      }
      break;
    case EdgeKind::kRW:
      for (uint64_t r = read_off_[from]; r < read_off_[from + 1]; ++r) {
        uint32_t p = read_pos_[r];
        if (p == kNone) continue;
        uint32_t k = read_key_[r];
        uint64_t next = p == kInitialPos ? key_off_[k] : uint64_t{p} + 1;
        if (next < key_off_[k + 1] && vers_[next].node == to) {
          s.key = keys_.name(k);
          s.from_version = read_ver_[r];
          s.to_version = vers_[next].version;
          break;
        }
      }
      break;
    case EdgeKind::kRT:
      s.from_end_ns = txn_[from]->end_ns;
      s.to_start_ns = txn_[to]->start_ns;
      break;
  }
  return s;
}

void Checker::report_cycle(const std::vector<Hop>& hops, std::vector<uint8_t>& reported) {
  for (const Hop& h : hops) reported[h.node] = 1;
  const auto n = static_cast<uint32_t>(txn_.size());
  const size_t len = hops.size();
  std::vector<CycleStep> steps;
  std::vector<uint32_t> nodes;
  size_t rw = 0, wr = 0, rt = 0;
  for (size_t i = 0; i < len; ++i) {
    uint32_t from = hops[i].node;
    if (from >= n) continue;  // a time-chain node: folded into the rt step that entered it
    size_t j = (i + 1) % len;
    while (hops[j].node >= n) j = (j + 1) % len;  // an rt edge continues through the chain to the next transaction
    EdgeKind kind = hops[i].kind;
    rw += kind == EdgeKind::kRW;
    wr += kind == EdgeKind::kWR;
    rt += kind == EdgeKind::kRT;
    steps.push_back(justify(from, hops[j].node, kind));
    nodes.push_back(from);
  }
  Anomaly kind = rt > 0    ? Anomaly::kRealTime
                 : rw > 1  ? Anomaly::kG2
                 : rw == 1 ? Anomaly::kGSingle
                 : wr > 0  ? Anomaly::kG1c
                           : Anomaly::kG0;
  std::string text = fmt::format("cycle of {} transactions: {}", steps.size(), txn_text(steps.front().from));
  for (const auto& s : steps) text += fmt::format(" {} {}", step_text(s), txn_text(s.to));
  Violation* v = report(kind, std::move(text), std::move(nodes));
  if (v != nullptr) v->cycle = std::move(steps);
}

}  // namespace detail

std::string format_report(const CheckReport& r) {
  const auto& s = r.stats;
  std::string out;
  if (r.ok()) {
    out += fmt::format("OK: {} committed transactions are strictly serializable\n", s.committed);
  } else {
    out += fmt::format("VIOLATIONS: {} found in {} committed transactions\n", r.total(), s.committed);
    for (size_t i = 0; i < kAnomalyKinds; ++i) {
      if (r.counts[i] == 0) continue;
      auto a = static_cast<Anomaly>(i);
      out += fmt::format("  {:<24} {:>10}  {}\n", anomaly_name(a), r.counts[i], anomaly_description(a));
    }
    for (const auto& v : r.violations) out += fmt::format("- {}: {}\n", anomaly_name(v.kind), v.message);
  }
  out += fmt::format(
      "stats: committed={} aborted={} load={} unknown={} (committed: {}) keys={} versions={} reads={} edges={} "
      "unresolved_absent_reads={}\n",
      s.committed, s.aborted, s.load, s.unknown, s.unknown_committed, s.keys, s.versions, s.reads, s.edges,
      s.unresolved_absent_reads);
  out += fmt::format("time: index {:.0f} ms, graph {:.0f} ms, cycles {:.0f} ms (wall); {:.0f} ms cpu\n", s.index_ms,
                     s.graph_ms, s.cycles_ms, s.cpu_ms);
  return out;
}

}  // namespace rdx::checker
