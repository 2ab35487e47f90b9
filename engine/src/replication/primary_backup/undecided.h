#pragma once
// A backup's undecided transaction writes: the kApply writes of transactions across shards that it applied hidden
// and has not seen decided (made readable, or superseded by a newer write of the key), with the transaction id, its
// participants and the value each replaced. Together they are the state of those transactions' participant at this
// shard: when this node becomes the shard's primary it inherits them (election.cc) instead of showing them, since their
// coordinator may have aborted them at the other shards, and hands them to the transaction layer
// (cluster::ReplicaLog::take_inherited), which decides each with the transaction's other participants.
// Shared by the node's workers (a key's writes may arrive on any of them).
#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster/replica_log.h"
#include "cluster/worker_context.h"
#include "replication/primary_backup/heard.h"

namespace rdx::replication::primary_backup {

class UndecidedWrites {
 public:
  // Which transactions' writes this node heard of (heard.h).
  HeardTransactions& heard() { return heard_; }

  // A write applied hidden here; it supersedes an older write of its key.
  void note(cluster::InheritedWrite w) {
    std::lock_guard<std::mutex> lk(mu_);
    auto [it, fresh] = undecided_.try_emplace(w.write.key);
    if (fresh || it->second.write.version < w.write.version) it->second = std::move(w);
  }
  // The write of `key` at `version` (or an older one) is decided, or superseded by that version.
  void decided(const std::string& key, uint64_t version) {
    std::lock_guard<std::mutex> lk(mu_);
    if (auto it = undecided_.find(key); it != undecided_.end() && it->second.write.version <= version)
      undecided_.erase(it);
  }
  // Every undecided write, emptied (a new primary inherits them; a member that copies its shard again drops them).
  std::vector<cluster::InheritedWrite> take() {
    std::lock_guard<std::mutex> lk(mu_);
    std::vector<cluster::InheritedWrite> out;
    for (auto& [key, w] : undecided_) out.push_back(std::move(w));
    undecided_.clear();
    return out;
  }

  // A member that copies its shard again forgets both kinds: what it copies replaces them. (Inherited writes not
  // taken yet belong to a win whose view was not installed: the records they locked are gone with the copy, and
  // handing them over if this node won later would decide writes it no longer holds.)
  void clear() {
    std::lock_guard<std::mutex> lk(mu_);
    undecided_.clear();
    inherited_.clear();
  }

  // Every undecided write (a member that copies the shard from this node notes them too).
  std::vector<cluster::InheritedWrite> copy() const {
    std::lock_guard<std::mutex> lk(mu_);
    std::vector<cluster::InheritedWrite> out;
    for (const auto& [key, w] : undecided_) out.push_back(w);
    return out;
  }

  // The new primary's inherited writes (locked for their transactions), until the worker that decides each (the
  // same-index worker as its coordinator's, where the transaction's other participants keep it) takes them.
  void inherit(std::vector<cluster::InheritedWrite> ws) {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& w : ws) inherited_.push_back(std::move(w));
  }
  std::vector<cluster::InheritedWrite> take_inherited(uint16_t worker, uint32_t workers) {
    std::lock_guard<std::mutex> lk(mu_);
    std::vector<cluster::InheritedWrite> out;
    const auto mine = [&](const cluster::InheritedWrite& w) {
      return cluster::writer_worker(w.txid) % std::max<uint32_t>(workers, 1) == worker;
    };
    for (auto& w : inherited_)
      if (mine(w)) out.push_back(std::move(w));
    std::erase_if(inherited_, mine);
    return out;
  }

 private:
  HeardTransactions heard_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, cluster::InheritedWrite> undecided_;  // by key
  std::vector<cluster::InheritedWrite> inherited_;
};

}  // namespace rdx::replication::primary_backup
