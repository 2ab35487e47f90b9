#pragma once
// The single-key protocol interface. One instance per worker thread. Single-key operations enter through the
// coordinator API (get/put/remove), called for client requests arriving at this node; the protocol decides where
// they execute and how they replicate, using only the WorkerContext (RPC, one-sided ops, the local store, the
// topology, the transaction service). "primary-backup" runs them as single-key transactions of the transaction
// layer (Dandelion GetOne/PutOne: consistent with concurrent transactions, replicated to every live backup);
// the Odyssey replication protocols will plug in here too: a folder plus one line in protocols.cc each.
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "rpc/rpc.h"
#include "server/kv_api.h"
#include "server/topology.h"
#include "store/hashtable.h"

namespace rdx::txn {
class TxnService;
}

namespace rdx::server {

class NodeShared;

// What a protocol may use. Implemented by Worker.
class WorkerContext {
 public:
  virtual ~WorkerContext() = default;
  virtual rpc::Rpc& rpc() = 0;
  virtual rpc::Scheduler& sched() = 0;
  virtual store::HashTable& table() = 0;
  virtual store::Session& session() = 0;
  virtual const Topology& topology() const = 0;
  virtual uint16_t self() const = 0;  // this node's id
  virtual uint16_t worker_index() const = 0;
  // This worker's connection to the same-index worker of node `node`, if it is up.
  virtual std::optional<transport::ConnId> peer(uint16_t node) const = 0;
  virtual NodeShared& shared() = 0;
  // The worker's transaction service (coordinator and participant).
  virtual txn::TxnService& txn() = 0;
};

class Protocol {
 public:
  virtual ~Protocol() = default;
  // Registers the protocol's message handlers on ctx.rpc().
  virtual void start() = 0;
  virtual rpc::Task<KvResult> get(std::string key) = 0;
  virtual rpc::Task<KvResult> put(std::string key, std::string value) = 0;
  virtual rpc::Task<KvResult> remove(std::string key) = 0;
  // Called about once per 100 ms on the worker thread (failure detection, background work).
  virtual void tick() {}
};

using ProtocolFactory = std::function<std::unique_ptr<Protocol>(WorkerContext&)>;

// Looks up a replication protocol by its topology name; kUnsupported names what exists.
Result<ProtocolFactory> find_replication_protocol(const std::string& name);

}  // namespace rdx::server
