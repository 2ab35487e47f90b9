#pragma once
// The replication family: how the replicas of a shard stay consistent. A protocol is one folder under
// engine/src/replication/ plus one line in registry.cc; the family's conformance suite
// (engine/tests/conformance/replication_conformance.cc) then runs on it. See README.md in this folder.
//
// A protocol has two parts:
//   ReplicationNode      one per node: state its workers share, recovery state, the node's log feed;
//   ReplicationProtocol  one per worker thread, made by the node part: the single-key operations of clients on this
//                        worker, the protocol's message handlers, and the hooks the worker calls.
// Every write of a key reaches its replicas through the cluster's replication protocol: single-key operations here,
// transactions through ReplicaLog (cluster/replica_log.h), which only protocols registered with
// `carries_transactions` implement.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cluster/kv_api.h"
#include "cluster/log_feed.h"
#include "cluster/replica_log.h"
#include "cluster/worker_context.h"
#include "common/registry.h"
#include "replication/ops.h"
#include "rpc/task.h"

namespace rdx::replication {

// Faults a test may plant to show that the checks catch them. Never set in production (they are not reachable from
// the topology file; rdxd --test-fault plants them for multi-process tests).
struct TestFaults {
  bool ack_before_replication = false;  // acknowledge writes before the other replicas have them (zab: a follower
                                        // also reports a write it forwarded before it holds it)
  bool reads_without_lease = false;     // backups read their own copy without holding leases (cluster/leases.h)
  bool unilateral_exclusion = false;    // a node excludes a replica without telling the others (primary_backup)
  bool slow_readable_notices = false;   // primary-backup: a backup pauses inside "make readable" (not a bug)
  bool unconditional_writes = false;    // hermes: plain puts and deletes as the paper has them (never refused)
  // primary-backup: a node's first replicate of writes of two or more shards delivers them, then fails without
  // asking the backups that took them to copy again (as if those requests were lost): they keep them hidden.
  bool failed_replicate_keeps_writes = false;
};

// What the node-wide part gets when the node starts.
struct NodeEnv {
  uint16_t self;
  cluster::Membership& membership;
  rpc::MsgRange msgs;  // this protocol's message types (its registry line)
  bool local_backup_reads =
      true;  // a replica that is not the primary may answer reads (topology txn.local_backup_reads)
  TestFaults faults;
};

class ReplicationProtocol {
 public:
  virtual ~ReplicationProtocol() = default;
  // Registers the protocol's message handlers (only types in its range).
  virtual Status start() = 0;

  // Single-key operations of clients of this worker (sessions, FAA/CAS variants and the asynchronous form come with
  // the Odyssey protocols; Rmw already carries FAA and compare-and-set).
  // get: kOk (value, version), kNotFound, or a failure with `error`.
  virtual rpc::Task<cluster::KvResult> get(std::string key) = 0;
  virtual rpc::Task<WriteResult> write(std::string key, Rmw op) = 0;

  // Recovery of this node as a joining member: brings its copy of the shard up to date, then marks it in sync
  // (Membership::set_in_sync), from when on the node serves. The worker starts it once, on worker 0; it runs until
  // the node stops, and recovers again whenever the protocol finds that this node may have missed writes.
  virtual rpc::Task<void> recover() = 0;

  // Hooks the worker calls on its thread.
  virtual void on_peer_lost(uint16_t node) = 0;  // this worker's connection to `node` broke
  virtual void on_peer_back(uint16_t node) = 0;  // it is up again
  virtual void on_membership_change() = 0;       // Membership's generation changed (any worker or message did it)
  // This worker adopted a new epoch (ctx.topology() is new): data nodes were added (excluded until they join, as a
  // restarted node is) or removed (Role::kRemoved: excluded already; a shard whose primary was removed needs
  // another).
  virtual void on_topology_change() = 0;
  virtual void tick() = 0;  // about every 100 ms

  // The protocol's transaction log when it carries transactions (the registry line says so), else null.
  virtual cluster::ReplicaLog* replica_log() = 0;
};

class ReplicationNode {
 public:
  virtual ~ReplicationNode() = default;
  virtual std::unique_ptr<ReplicationProtocol> make_worker(cluster::WorkerContext& ctx) = 0;
  // Every write this node applies as a key's primary (read replicas subscribe here), when the registry line says
  // complete_feed.
  virtual cluster::LogFeed& log_feed() = 0;
  // One line for /readyz and INFO when the node is not serving: why (e.g. "copying shard 0 from n1").
  virtual std::string recovery_state() const = 0;
};

// Which member losses a protocol survives while it keeps serving every key (the conformance suite checks it).
enum class Survives : uint8_t {
  kNoLoss,      // any member's loss stops writes of its shard
  kBackupLoss,  // the loss of a member that is not the shard's primary
  kMinority,    // any minority of the shard's members
};

// Which single-key operations a protocol offers (the others get kUnsupported and change nothing).
enum class Ops : uint8_t {
  kReadWrite,        // reads, plain puts and deletes
  kReadModifyWrite,  // also every other Rmw: add, append, conditional puts, compare-and-set, the old value returned
};

// What a read guarantees (the conformance suite and the history tests check reads against it).
enum class Reads : uint8_t {
  kLinearizable,  // a read returns the newest completed write, or a concurrent one
  kSequential,    // a read may return an older value of the key, never older than what its session last wrote or
                  // read of it, nor a write that began after it returned (zab's local reads)
};

struct ReplicationEntry {
  std::string_view name;
  rpc::MsgRange msgs;  // inside cluster::msgs::kReplicationBlock, disjoint from every other line's
  std::unique_ptr<ReplicationNode> (*make)(const NodeEnv& env);
  bool carries_transactions;  // replica_log() is not null: a transaction protocol may run over it
  Survives survives;
  Ops ops;
  Reads reads;
  bool complete_feed;  // a node's log_feed() carries every write of its shard once, in version order per key (the
                       // writes it orders as the primary); false: the protocol publishes no feed
  std::string_view summary;
};

const Registry<ReplicationEntry>& replication_protocols();

}  // namespace rdx::replication
