// The checker: index the committed history by key and version, resolve every read to the version (or absent state)
// it saw and build the dependency graph with real-time edges (cycles.cc searches it). See checker.h for the model.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <unordered_map>

#include "checker/checker_impl.h"

namespace rdx::checker {
namespace detail {
namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Result<CheckReport> Checker::run() {
  const std::clock_t cpu0 = std::clock();
  auto t0 = std::chrono::steady_clock::now();
  RDX_RETURN_IF_ERROR(validate_and_select());
  index_operations();
  index_versions();
  apply_load_records();
  infer_initial_versions();
  resolve_reads();
  out_.stats.index_ms = ms_since(t0);

  t0 = std::chrono::steady_clock::now();
  const auto n = static_cast<uint32_t>(txn_.size());
  Graph g(opt_.check_real_time ? 2 * n : n);
  build_graph(g);
  g.finalize();
  out_.stats.edges = g.edges();
  out_.stats.graph_ms = ms_since(t0);

  t0 = std::chrono::steady_clock::now();
  find_cycles(g);
  out_.stats.cycles_ms = ms_since(t0);
  out_.stats.cpu_ms = 1000.0 * static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
  for (auto& list : examples_) {
    for (auto& v : list) out_.violations.push_back(std::move(v));
  }
  return std::move(out_);
}

std::vector<uint8_t> Checker::settle_unknown_outcomes() const {
  std::vector<uint8_t> promoted(history_.size(), 0);
  // (key, version) -> the unknown records that wrote it.
  std::unordered_map<std::string, std::unordered_map<uint64_t, std::vector<size_t>>> unknown_writes;
  for (size_t i = 0; i < history_.size(); ++i)
    if (history_[i].unknown && !history_[i].committed)
      for (const auto& w : history_[i].writes) unknown_writes[w.key][w.version].push_back(i);
  if (unknown_writes.empty()) return promoted;
  // An unknown record that wrote a version a committed record created did not commit (one writer per version).
  std::vector<uint8_t> ruled_out(history_.size(), 0);
  for (const auto& r : history_) {
    if (!r.committed) continue;
    for (const auto& w : r.writes) {
      auto k = unknown_writes.find(w.key);
      if (k == unknown_writes.end()) continue;
      auto v = k->second.find(w.version);
      if (v == k->second.end()) continue;
      for (size_t u : v->second) ruled_out[u] = 1;
      k->second.erase(v);
    }
  }
  // A read proves the one unknown writer of its version; with several (at most one committed) it proves none.
  std::vector<size_t> proven;
  auto prove_by = [&](const txn::TxRecord& reader) {
    for (const auto& rd : reader.reads) {
      auto k = unknown_writes.find(rd.key);
      if (k == unknown_writes.end()) continue;
      auto v = k->second.find(rd.version);
      if (v == k->second.end()) continue;
      size_t candidate = 0, candidates = 0;
      for (size_t u : v->second)
        if (!ruled_out[u]) {
          candidate = u;
          ++candidates;
        }
      if (candidates == 1 && !promoted[candidate]) {
        promoted[candidate] = 1;
        proven.push_back(candidate);
      }
    }
  };
  for (const auto& r : history_)
    if (r.committed) prove_by(r);
  while (!proven.empty()) {  // what a proven record read proves in turn
    const size_t u = proven.back();
    proven.pop_back();
    prove_by(history_[u]);
  }
  return promoted;
}

Status Checker::validate_and_select() {
  std::vector<uint64_t> ids;
  ids.reserve(history_.size());
  const std::vector<uint8_t> promoted = settle_unknown_outcomes();
  for (size_t i = 0; i < history_.size(); ++i) {
    const txn::TxRecord& r = history_[i];
    ids.push_back(r.id);
    if (r.end_ns < r.start_ns) {
      return error(Code::kInvalidArgument, "transaction {} ends ({}) before it starts ({})", r.id, r.end_ns,
                   r.start_ns);
    }
    if (r.unknown) {
      if (r.committed) return error(Code::kInvalidArgument, "transaction {} is committed and unknown", r.id);
      ++out_.stats.unknown;
      if (!promoted[i]) continue;  // nothing committed read what it wrote: left out
      ++out_.stats.unknown_committed;
    } else if (!r.committed) {
      aborted_.push_back(&r);
      continue;
    }
    for (const auto& w : r.writes) {
      if (w.version == 0) return error(Code::kInvalidArgument, "committed transaction {} wrote version 0", r.id);
    }
    if (r.type == opt_.load_type) {
      load_.push_back(&r);
    } else {
      txn_.push_back(&r);
    }
  }
  std::sort(ids.begin(), ids.end());
  auto dup = std::adjacent_find(ids.begin(), ids.end());
  if (dup != ids.end()) return error(Code::kInvalidArgument, "transaction id {} appears more than once", *dup);
  if (txn_.size() * 2 >= Graph::kMaxNodes) {
    return error(Code::kInvalidArgument, "history too large: {} committed transactions", txn_.size());
  }
  start_.reserve(txn_.size());
  end_.reserve(txn_.size());
  for (const auto* r : txn_) {
    start_.push_back(r->start_ns);
    // A transaction of unknown outcome may have taken effect after its coordinator gave up (a recovery or a new
    // primary decides it later): it has no end, so nothing follows it in real time.
    end_.push_back(r->unknown ? kNeverEnded : r->end_ns);
  }
  out_.stats.committed = txn_.size();
  out_.stats.aborted = aborted_.size();
  out_.stats.load = load_.size();
  return Status::ok();
}

void Checker::index_operations() {
  const size_t n = txn_.size();
  read_off_.assign(n + 1, 0);
  write_off_.assign(n + 1, 0);
  for (size_t t = 0; t < n; ++t) {
    read_off_[t + 1] = read_off_[t] + txn_[t]->reads.size();
    write_off_[t + 1] = write_off_[t] + txn_[t]->writes.size();
  }
  read_key_.resize(read_off_[n]);
  read_ver_.resize(read_off_[n]);
  write_key_.resize(write_off_[n]);
  write_ver_.resize(write_off_[n]);
  write_del_.resize(write_off_[n]);
  for (size_t t = 0; t < n; ++t) {
    uint64_t r = read_off_[t], w = write_off_[t];
    for (const auto& op : txn_[t]->reads) {
      read_key_[r] = keys_.intern(op.key);
      read_ver_[r++] = op.version;
    }
    for (const auto& op : txn_[t]->writes) {
      write_key_[w] = keys_.intern(op.key);
      write_ver_[w] = op.version;
      write_del_[w++] = op.deleted;
    }
  }
  out_.stats.keys = keys_.size();
  out_.stats.reads = read_key_.size();
}

void Checker::index_versions() {
  const size_t n = txn_.size();
  vers_.reserve(write_key_.size());
  for (uint32_t t = 0; t < n; ++t) {
    for (uint64_t w = write_off_[t]; w < write_off_[t + 1]; ++w) {
      vers_.push_back({write_ver_[w], write_key_[w], t, static_cast<uint32_t>(w), write_del_[w] != 0});
    }
  }
  std::sort(vers_.begin(), vers_.end(), [](const Version& a, const Version& b) {
    if (a.key != b.key) return a.key < b.key;
    if (a.version != b.version) return a.version < b.version;
    return a.node < b.node;
  });
  // One writer per version: report the others and drop them, so the version order stays a sequence.
  size_t kept = 0;
  for (size_t i = 0; i < vers_.size(); ++i) {
    if (kept > 0 && vers_[kept - 1].key == vers_[i].key && vers_[kept - 1].version == vers_[i].version) {
      const Version& first = vers_[kept - 1];
      if (first.node != vers_[i].node) {
        report(Anomaly::kDuplicateWrite,
               fmt::format("{} and {} both created version {} of key {}", ref(first.node), ref(vers_[i].node),
                           first.version, keys_.name(first.key)),
               {first.node, vers_[i].node});
      }
      continue;
    }
    vers_[kept++] = vers_[i];
  }
  vers_.resize(kept);
  out_.stats.versions = kept;
  write_pos_.assign(write_key_.size(), kNone);
  for (size_t i = 0; i < kept; ++i) write_pos_[vers_[i].op] = static_cast<uint32_t>(i);

  const size_t nkeys = keys_.size();
  key_off_.assign(nkeys + 1, 0);
  del_off_.assign(nkeys + 1, 0);
  for (const Version& v : vers_) {
    ++key_off_[v.key + 1];
    if (v.deleted) ++del_off_[v.key + 1];
  }
  for (size_t k = 0; k < nkeys; ++k) {
    key_off_[k + 1] += key_off_[k];
    del_off_[k + 1] += del_off_[k];
  }
  del_pos_.reserve(del_off_[nkeys]);
  for (size_t i = 0; i < vers_.size(); ++i) {
    if (vers_[i].deleted) del_pos_.push_back(static_cast<uint32_t>(i));  // in key order, as del_off_ expects
  }
  initial_version_.assign(nkeys, 0);
  initial_seen_by_.assign(nkeys, kNone);
}

void Checker::apply_load_records() {
  for (const auto* r : load_) {
    for (const auto& w : r->writes) {
      uint32_t k = keys_.find(w.key);
      if (k == KeyTable::kMissing) continue;  // no committed transaction touched it
      initial_version_[k] = w.deleted ? 0 : std::max(initial_version_[k], w.version);
    }
  }
}

void Checker::infer_initial_versions() {
  if (!opt_.infer_initial) return;
  for (uint32_t t = 0; t < txn_.size(); ++t) {
    for (uint64_t r = read_off_[t]; r < read_off_[t + 1]; ++r) {
      uint32_t k = read_key_[r];
      uint64_t v = read_ver_[r];
      if (v == 0 || initial_version_[k] != 0 || find_version(k, v) != kNone) continue;
      bool below_all = key_off_[k] == key_off_[k + 1] || v < vers_[key_off_[k]].version;
      if (!below_all || aborted_writer(k, v) != nullptr) continue;
      initial_version_[k] = v;
      initial_seen_by_[k] = t;
    }
  }
}

uint32_t Checker::find_version(uint32_t key, uint64_t version) const {
  auto first = vers_.begin() + static_cast<ptrdiff_t>(key_off_[key]);
  auto last = vers_.begin() + static_cast<ptrdiff_t>(key_off_[key + 1]);
  auto it = std::lower_bound(first, last, version, [](const Version& a, uint64_t v) { return a.version < v; });
  if (it == last || it->version != version) return kNone;
  return static_cast<uint32_t>(it - vers_.begin());
}

const txn::TxRecord* Checker::aborted_writer(uint32_t key, uint64_t version) {
  if (!aborted_indexed_) {
    for (const auto* r : aborted_) {
      for (const auto& w : r->writes) {
        uint32_t k = keys_.find(w.key);
        if (k != KeyTable::kMissing) aborted_by_key_[k].push_back(r);
      }
    }
    aborted_indexed_ = true;
  }
  auto it = aborted_by_key_.find(key);
  if (it == aborted_by_key_.end()) return nullptr;
  for (const auto* r : it->second) {
    for (const auto& w : r->writes) {
      if (w.version == version && w.key == keys_.name(key)) return r;
    }
  }
  return nullptr;
}

void Checker::resolve_reads() {
  read_pos_.assign(read_key_.size(), kNone);
  for (uint32_t t = 0; t < txn_.size(); ++t) {
    for (uint64_t r = read_off_[t]; r < read_off_[t + 1]; ++r) {
      const uint32_t k = read_key_[r];
      const uint64_t v = read_ver_[r];
      const auto key = keys_.name(k);
      if (v == 0) {
        read_pos_[r] = resolve_absent_read(t, k);
        continue;
      }
      uint32_t p = find_version(k, v);
      if (p != kNone) {
        if (vers_[p].deleted) {
          report(Anomaly::kDeletedRead,
                 fmt::format("{} read key {} at version {} as a value, but {} created that version by deleting it",
                             ref(t), key, v, ref(vers_[p].node)),
                 {t, vers_[p].node});
        } else if (vers_[p].node == t) {
          report(Anomaly::kOwnWriteRead,
                 fmt::format("{} read key {} at version {}, the version its own write created", ref(t), key, v), {t});
        } else {
          read_pos_[r] = p;
        }
      } else if (v == initial_version_[k]) {
        read_pos_[r] = kInitialPos;
      } else if (const txn::TxRecord* a = aborted_writer(k, v)) {
        std::string what = fmt::format("{} read key {} at version {}, written only by aborted transaction T{} ({})",
                                       ref(t), key, v, a->id, a->type);
        Violation* kept = report(Anomaly::kAbortedRead, std::move(what), {t});
        if (kept != nullptr) kept->txns.push_back({a->id, a->type});
      } else {
        std::string initial = "the key started absent";
        if (initial_version_[k] != 0) {
          initial = initial_seen_by_[k] == kNone ? fmt::format("its initial version (load) is {}", initial_version_[k])
                                                 : fmt::format("its initial version is {}, as read by {}",
                                                               initial_version_[k], ref(initial_seen_by_[k]));
        }
        report(Anomaly::kUnwrittenRead,
               fmt::format("{} read key {} at version {}, which no transaction wrote ({})", ref(t), key, v, initial),
               {t});
      }
    }
  }
}

bool Checker::excluded_by_real_time(uint32_t reader, uint32_t deleter, uint32_t next_writer) const {
  if (!opt_.check_real_time) return false;
  if (deleter != kNone && end_[reader] + opt_.rt_slack_ns < start_[deleter]) return true;
  if (next_writer != kNone && end_[next_writer] + opt_.rt_slack_ns < start_[reader]) return true;
  return false;
}

uint32_t Checker::resolve_absent_read(uint32_t t, uint32_t k) {
  const auto key = keys_.name(k);
  const uint64_t first = key_off_[k], last = key_off_[k + 1];
  // Read-modify-write: the read saw exactly the state the transaction's own (lowest) write replaced.
  uint32_t own = kNone;
  for (uint64_t w = write_off_[t]; w < write_off_[t + 1]; ++w) {
    uint32_t p = write_pos_[w];
    if (write_key_[w] == k && p != kNone && (own == kNone || p < own)) own = p;
  }
  if (own != kNone) {
    if (own == first) {
      if (initially_absent(k)) return kInitialPos;
      report(Anomaly::kAbsentRead,
             fmt::format("{} read key {} as absent, but its write (version {}) replaced the initial version {}", ref(t),
                         key, vers_[own].version, initial_version_[k]),
             {t});
      return kNone;
    }
    const Version& prev = vers_[own - 1];
    if (prev.deleted) return own - 1;
    report(Anomaly::kAbsentRead,
           fmt::format("{} read key {} as absent, but its write (version {}) replaced version {} written by {}", ref(t),
                       key, vers_[own].version, prev.version, ref(prev.node)),
           {t, prev.node});
    return kNone;
  }
  // Otherwise: the initial state if the key started absent, or one of its deletes, narrowed by real time.
  const uint64_t deletes = del_off_[k + 1] - del_off_[k];
  if (!initially_absent(k) && deletes == 0) {
    report(Anomaly::kAbsentRead,
           fmt::format("{} read key {} as absent, but it existed from the initial state (version {}) and no committed "
                       "transaction deleted it",
                       ref(t), key, initial_version_[k]),
           {t});
    return kNone;
  }
  uint32_t found = kNone;
  size_t valid = 0, examined = 0;
  if (initially_absent(k) && !excluded_by_real_time(t, kNone, first < last ? vers_[first].node : kNone)) {
    found = kInitialPos;
    ++valid;
  }
  for (uint64_t d = del_off_[k]; d < del_off_[k + 1] && valid < 2; ++d) {
    if (++examined > kMaxAbsentCandidates) {
      ++out_.stats.unresolved_absent_reads;
      return kNone;
    }
    uint32_t p = del_pos_[d];
    uint32_t next = p + 1 < last ? vers_[p + 1].node : kNone;
    if (excluded_by_real_time(t, vers_[p].node, next)) continue;
    found = p;
    ++valid;
  }
  if (valid == 1) return found;
  if (valid > 1) {
    ++out_.stats.unresolved_absent_reads;
    return kNone;
  }
  report(Anomaly::kAbsentRead,
         fmt::format("{} read key {} as absent, but real time excludes every absent state of the key ({} deletes{}): "
                     "each delete started after {} ended or was followed by a write that ended before it started",
                     ref(t), key, deletes, initially_absent(k) ? ", the initial state" : "", ref(t)),
         {t});
  return kNone;
}

void Checker::build_graph(Graph& g) {
  for (size_t k = 0; k < keys_.size(); ++k) {
    for (uint64_t i = key_off_[k]; i + 1 < key_off_[k + 1]; ++i) {
      g.add_edge(vers_[i].node, vers_[i + 1].node, EdgeKind::kWW);
    }
  }
  for (uint32_t t = 0; t < txn_.size(); ++t) {
    for (uint64_t r = read_off_[t]; r < read_off_[t + 1]; ++r) {
      uint32_t p = read_pos_[r];
      if (p == kNone) continue;
      const uint32_t k = read_key_[r];
      uint64_t next = key_off_[k];
      if (p != kInitialPos) {
        g.add_edge(vers_[p].node, t, EdgeKind::kWR);
        next = p + 1;
      }
      if (next < key_off_[k + 1]) g.add_edge(t, vers_[next].node, EdgeKind::kRW);
    }
  }
  if (!opt_.check_real_time) return;
  // Time chain: node n+i stands for "after the i-th transaction in end order ended". T -> chain(pos(T)) -> ... ->
  // chain(j) -> U, where j is the last position whose end is before U's start: a path exists iff T.end < U.start.
  const auto n = static_cast<uint32_t>(txn_.size());
  std::vector<uint32_t> by_end(n);
  for (uint32_t t = 0; t < n; ++t) by_end[t] = t;
  std::sort(by_end.begin(), by_end.end(), [&](uint32_t a, uint32_t b) { return end_[a] < end_[b]; });
  std::vector<int64_t> ends(n);
  for (uint32_t i = 0; i < n; ++i) {
    ends[i] = end_[by_end[i]];
    g.add_edge(by_end[i], n + i, EdgeKind::kRT);
    if (i + 1 < n) g.add_edge(n + i, n + i + 1, EdgeKind::kRT);
  }
  for (uint32_t u = 0; u < n; ++u) {
    int64_t limit = start_[u] - opt_.rt_slack_ns;  // T precedes U iff T.end < limit
    auto before = static_cast<uint32_t>(std::lower_bound(ends.begin(), ends.end(), limit) - ends.begin());
    if (before > 0) g.add_edge(n + before - 1, u, EdgeKind::kRT);
  }
}

}  // namespace detail

Result<CheckReport> check_history(const std::vector<txn::TxRecord>& history, const CheckOptions& options) {
  return detail::Checker(history, options).run();
}

}  // namespace rdx::checker
