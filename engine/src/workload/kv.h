#pragma once
// Key-space workloads: a fixed set of keys with opaque values, read and overwritten by multi-key transactions.
//   keys    <prefix><index>, index in [0, keys) decimal (og:17, yc:17)
//   values  value_size random letters 'a'-'z'; a value of another size or with other bytes is corrupt
// O(G,P) (FaSST's and Dandelion's microbenchmarks): G gets, then P puts, on distinct keys. With rmw=1 (default) the
// puts overwrite the first min(G, P) keys read (read-modify-write) and any further puts go to other keys; rmw=0
// writes P other keys blindly. One transaction type, named "O(G,P)".
// Transactional YCSB (A, B, C, F): each transaction runs `ops` operations on distinct keys, each drawn independently
// from the workload's operation mix: A 50% read / 50% update, B 95/5, C 100% read, F 50% read / 50%
// read-modify-write. Updates are blind overwrites of the whole value; reads are issued first, then the writes.
// Types: "Read" (every op a read) and "Update" (A, B) or "ReadModifyWrite" (F, RCC).
// RCC's YCSB (ycsb-rcc, the RCC seed's workload): `ops` (default 10) operations, each a read-modify-write with
// probability write_percent (default 10), else a read, and compute_us (default 5) microseconds of computation per
// transaction, done on the worker between the reads and the commit (while a 2PL transaction holds its locks); keys
// uniform unless dist=zipfian. Every YCSB takes compute_us (default 0 but for RCC's).
// Keys are drawn uniformly or Zipfian (theta), scattered over the key space (distributions.h).
#include <string>
#include <vector>

#include "workload/base.h"
#include "workload/distributions.h"

namespace rdx::workload {

// The keys and writes of one transaction attempt.
struct KvPlan {
  uint16_t type = 0;
  std::vector<uint64_t> reads;   // key indexes read (in order)
  std::vector<uint64_t> writes;  // key indexes written (may repeat reads: read-modify-write)
};

class KeySpaceWorkload : public WorkloadBase {
 public:
  uint64_t load_units() const override { return keys_; }
  void load(uint64_t begin, uint64_t end, const LoadSink& sink) const override;
  rpc::Task<TxOutcome> run_one(txn::TxnService& svc, Rng& rng, Ledger& ledger) const override;

  virtual KvPlan plan(Rng& rng) const = 0;
  std::string key(uint64_t index) const;
  bool valid_value(std::string_view v) const;
  uint64_t keys() const { return keys_; }
  const KeyChooser& chooser() const { return chooser_; }

 protected:
  KeySpaceWorkload(std::string name, std::vector<std::string> types, std::string prefix)
      : WorkloadBase(std::move(name), std::move(types)), prefix_(std::move(prefix)) {}
  // Reads keys (count, default), value_size, dist and theta.
  void read_key_space(ParamReader& p, const char* count_name, uint64_t default_keys, uint64_t default_value_size,
                      const char* default_dist);
  // `n` distinct key indexes appended to `out`.
  void pick_distinct(Rng& rng, size_t n, std::vector<uint64_t>& out) const;

  std::string prefix_;
  uint64_t compute_us_ = 0;  // busy computation per transaction, after its reads
  uint64_t keys_ = 0;
  size_t value_size_ = 0;
  KeyChooser chooser_;
};

class Ogp final : public KeySpaceWorkload {
 public:
  explicit Ogp(ParamReader& p);
  KvPlan plan(Rng& rng) const override;

 private:
  uint64_t gets_ = 0, puts_ = 0;
  bool rmw_ = true;
};

class Ycsb final : public KeySpaceWorkload {
 public:
  Ycsb(char letter, ParamReader& p);  // 'a', 'b', 'c', 'f', or 'r' (RCC's)
  KvPlan plan(Rng& rng) const override;
  double read_fraction() const { return read_fraction_; }

 private:
  double read_fraction_ = 1;
  bool rmw_ = false;  // F, RCC: the non-read operations read, then write
  uint64_t ops_ = 1;
};

}  // namespace rdx::workload
