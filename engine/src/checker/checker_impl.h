#pragma once
// Internal to the checker: its state while checking one history (checker.cc builds and searches the graph,
// report.cc turns findings into violations).
#include <array>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "checker/checker.h"
#include "checker/graph.h"
#include "checker/key_table.h"

namespace rdx::checker::detail {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kInitialPos = kNone - 1;  // a read resolved to the key's initial state
constexpr size_t kMaxAbsentCandidates = 4096;
constexpr int64_t kNeverEnded = std::numeric_limits<int64_t>::max() / 2;  // (end + slack must not overflow)

struct Version {
  uint64_t version;
  uint32_t key;
  uint32_t node;
  uint32_t op;  // index of the write operation (write_key_ etc.)
  bool deleted;
};

class Checker {
 public:
  Checker(const std::vector<txn::TxRecord>& history, const CheckOptions& options)
      : history_(history), opt_(options), keys_(history.size() * 2) {}

  Result<CheckReport> run();

 private:
  Status validate_and_select();
  // Per history record: 1 when its outcome is unknown and a committed read proves it committed (see checker.h).
  std::vector<uint8_t> settle_unknown_outcomes() const;
  void index_operations();
  void index_versions();
  void apply_load_records();
  void infer_initial_versions();
  void resolve_reads();
  uint32_t resolve_absent_read(uint32_t t, uint32_t key);
  void build_graph(Graph& g);
  void find_cycles(Graph& g);
  // Two-transaction cycles, counted one by one: dependencies both ways, or a dependency against real time.
  void report_short_cycles(const Graph& g, const Components& all, std::vector<uint8_t>& reported);

  uint32_t find_version(uint32_t key, uint64_t version) const;
  bool initially_absent(uint32_t key) const { return initial_version_[key] == 0; }
  bool excluded_by_real_time(uint32_t reader, uint32_t deleter, uint32_t next_writer) const;
  std::string ref(uint32_t node) const;
  TxnRef txn_ref(uint32_t node) const { return {txn_[node]->id, txn_[node]->type}; }
  // Counts a violation and keeps it as an example while under max_examples (then returns it, else nullptr).
  Violation* report(Anomaly kind, std::string message, std::vector<uint32_t> nodes);
  // Reports the cycle (classified by its edges) and marks its nodes in `reported`.
  void report_cycle(const std::vector<Hop>& hops, std::vector<uint8_t>& reported);
  CycleStep justify(uint32_t from, uint32_t to, EdgeKind kind) const;
  const txn::TxRecord* aborted_writer(uint32_t key, uint64_t version);

  const std::vector<txn::TxRecord>& history_;
  const CheckOptions& opt_;
  CheckReport out_;
  std::array<std::vector<Violation>, kAnomalyKinds> examples_;

  std::vector<const txn::TxRecord*> txn_;  // graph node -> committed, non-load record
  std::vector<int64_t> start_, end_;       // per node (dense copies: real-time checks touch them at random)
  std::vector<const txn::TxRecord*> load_;
  std::vector<const txn::TxRecord*> aborted_;
  KeyTable keys_;
  // Operations of node t: reads [read_off_[t], read_off_[t+1]), writes likewise; keys as ids.
  std::vector<uint64_t> read_off_, write_off_;
  std::vector<uint32_t> read_key_, write_key_, read_pos_;  // read_pos_: index in vers_, kInitialPos or kNone
  std::vector<uint64_t> read_ver_, write_ver_;
  std::vector<uint8_t> write_del_;
  std::vector<uint32_t> write_pos_;  // write op -> its index in vers_ (kNone for a dropped duplicate)
  // Committed versions sorted by (key, version); key k's are [key_off_[k], key_off_[k+1]). Deletes likewise.
  std::vector<Version> vers_;
  std::vector<uint64_t> key_off_, del_off_;
  std::vector<uint32_t> del_pos_;
  std::vector<uint64_t> initial_version_;  // 0: the key started absent
  std::vector<uint32_t> initial_seen_by_;  // node that first read an inferred initial version, kNone for load
  std::unordered_map<uint64_t, std::vector<const txn::TxRecord*>> aborted_by_key_;  // built on first use
  bool aborted_indexed_ = false;
};

}  // namespace rdx::checker::detail
