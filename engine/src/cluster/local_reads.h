#pragma once
// Reads of this node's table, batched per worker-loop iteration (Dandelion's batched hashtable): every read a
// coroutine or a remote request asks for during one iteration goes to the table as one prefetched batch when the
// worker calls run_batch(). Shared by every family: transactions read through it at execution time, replication
// protocols for single-key GETs; remote readers get their answer in one encoding (encode_read_reply).
//
// A record's lock word (cluster/lockword.h) decides what a read returns:
//   kLatest     the current value even if a writer holds it (optimistic execution: commit-time checks catch it)
//   kCommitted  the value only if it is readable (not locked, not a replicated write waiting for its commit): else
//               kBusy, and the caller waits or asks the primary
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "rpc/rpc.h"
#include "store/hashtable.h"

namespace rdx::cluster {

struct Read {
  Code status = Code::kOk;  // kOk or kNotFound; kBusy (kCommitted mode: held by a writer); kUnavailable on failure
  std::string value;
  uint64_t version = 0;  // 0 when absent
};

enum class ReadMode : uint8_t { kLatest, kCommitted };

struct LocalReadStats {
  uint64_t batches = 0, batched_reads = 0;
};

class LocalReads {
 public:
  LocalReads(rpc::Rpc& rpc, rpc::Scheduler& sched, store::HashTable& table, store::Session& session);
  ~LocalReads();

  class Awaiter;
  // co_await reads.read(key, mode) -> Read. Without batching the read runs at once.
  Awaiter read(std::string key, ReadMode mode);
  // Reads for a remote requester: answered with encode_read_reply's encoding when the batch runs.
  void read_for(const rpc::ReplyTo& to, std::string key, ReadMode mode);
  // A read of the table right now (no batch).
  Read read_now(std::string_view key, ReadMode mode);

  // Worker loop: runs the reads queued since the last call as one batch. Returns how many ran.
  size_t run_batch();
  void set_batching(bool on) { batching_ = on; }
  bool batching() const { return batching_; }
  const LocalReadStats& stats() const { return stats_; }
  // A time no earlier than the end of every read this worker has run (one clock read per batch): a read resumed
  // afterwards may compare it with a lease's end (Leases::held).
  std::chrono::steady_clock::time_point reads_done_by() const { return done_by_; }
  void reset_stats() { stats_ = {}; }

  // What a record image means for a reader in `mode` (kBusy: replaced under the reader, or not readable).
  static Read interpret(store::OpStatus s, std::string&& value, uint64_t version, uint64_t lock, ReadMode mode);

 private:
  struct Pending;
  rpc::Rpc& rpc_;
  rpc::Scheduler& sched_;
  store::HashTable& table_;
  store::Session& session_;
  bool batching_ = true;
  std::vector<std::unique_ptr<Pending>> batch_;
  LocalReadStats stats_;
  std::chrono::steady_clock::time_point done_by_;
};

class LocalReads::Awaiter {
 public:
  Awaiter(LocalReads* r, std::string key, ReadMode mode) : reads_(r), key_(std::move(key)), mode_(mode) {}
  bool await_ready();
  void await_suspend(std::coroutine_handle<> h);
  Read await_resume() { return std::move(result_); }

 private:
  LocalReads* reads_;
  std::string key_;
  ReadMode mode_;
  Read result_;
};

// The reply of a remote read: status in the message header; on kOk the payload is u64 version + bytes value.
void respond_read(rpc::Rpc& rpc, const rpc::ReplyTo& to, const Read& r);
// Decodes a response of that form (kInternal for a malformed payload).
Read decode_read_reply(const rpc::Response& resp);

}  // namespace rdx::cluster
