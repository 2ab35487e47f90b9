#pragma once
// Runs the requests buffered on a connection, in order, one coroutine per batch of requests (not per request):
// commands that complete synchronously (PING, ...) never suspend and allocate no frame of their own.
// Families and keys (engine/src/replication/README.md): single-key commands (GET, SET, INCR, SETNX, GETSET, APPEND,
// DEL of one key, ...) are operations of the cluster's replication protocol, which never fails them because of
// contention; MULTI/EXEC and multi-key commands (MSET, DEL/EXISTS/MGET of several keys) run as one Transaction of its
// transaction protocol, whose writes reach the replicas through that same replication protocol.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cluster/msg_ids.h"
#include "resp/connection.h"
#include "resp/key_commands.h"
#include "rpc/task.h"
#include "server/service.h"

namespace rdx::resp {

// Node-wide client bookkeeping, shared by every worker's front end (client ids, INFO's # Clients section).
struct ClientStats {
  std::atomic<uint64_t> next_client_id{1};
  std::atomic<int64_t> connected{0};
  std::atomic<uint64_t> accepted{0}, rejected{0}, commands{0};
};
ClientStats& client_stats();

inline constexpr size_t kMaxPendingOutput = 1 << 20;  // stop running a client's commands until its replies drain
inline constexpr int kMaxTxnAttempts = 32;            // conflict retries before a transaction (EXEC, MSET) gives up
inline constexpr rpc::MsgType kRespKeyCountMsg = cluster::msgs::kResp.at(0);  // DBSIZE: other shards' key counts
inline constexpr size_t kMaxGetRun = 128;                                     // pipelined GETs issued together

class Executor {
 public:
  // `resumed(c)` is called when a command coroutine that had suspended finishes: the front end then writes the
  // replies and carries on with the connection.
  Executor(server::ServiceEnv& env, std::function<void(Connection&)> resumed);

  // Starts running c's buffered requests (c must not be busy). Returns with c.busy still set if a command suspended.
  void start(Connection& c);
  size_t running() const { return running_; }
  void set_stopping() { stopping_ = true; }
  // Answers kRespKeyCountMsg from other nodes' DBSIZE.
  Status register_handlers();
  // Commands admitted since the last call (the front end adds them to the node's counter once per poll).
  uint64_t take_command_count();

 private:
  rpc::Task<void> drive(Connection& c);
  // Checks a request like Redis does (unknown command, arity, authentication) and queues it inside MULTI. Returns
  // the command to run now, or nullptr when the request has been answered already.
  const CommandSpec* admit(Connection& c, Args args, ReplyWriter& w);
  std::vector<std::string> gather_get_run(Connection& c, std::string_view first_key);
  size_t absorb_pipelined_sets(Connection& c, std::string_view key, std::string* value);
  // True when reads of `key` are served from this node's table.
  bool reads_locally(std::string_view key) const;
  // Commands that never wait.
  bool run_sync(Connection& c, const CommandSpec& spec, Args args, ReplyWriter& w);
  rpc::Task<void> run_async(Connection& c, const CommandSpec& spec, Args args, ReplyWriter& w);
  rpc::Task<void> run_keys(const CommandSpec& spec, Args args, ReplyWriter& w);
  // One multi-key command as one transaction, retried on conflict aborts.
  rpc::Task<void> run_atomic(const CommandSpec& spec, Args args, ReplyWriter& w);
  rpc::Task<void> backoff(int attempt, uint64_t seed);

  // Connection and server commands (server_commands.cc).
  void ping(Args args, ReplyWriter& w);
  void auth(Connection& c, Args args, ReplyWriter& w);
  void hello(Connection& c, Args args, ReplyWriter& w);
  void info(Args args, ReplyWriter& w);
  void client(Connection& c, Args args, ReplyWriter& w);
  void command(Args args, ReplyWriter& w);
  void config(Args args, ReplyWriter& w);
  void select(Args args, ReplyWriter& w);
  void reset(Connection& c, ReplyWriter& w);
  bool password_matches(std::string_view user, std::string_view password) const;
  std::string client_info_line(const Connection& c) const;
  rpc::Task<void> dbsize(ReplyWriter& w);

  // MULTI/EXEC/WATCH (txn_commands.cc).
  void multi(Connection& c, ReplyWriter& w);
  void discard(Connection& c, ReplyWriter& w);
  rpc::Task<void> watch(Connection& c, Args args, ReplyWriter& w);
  rpc::Task<void> exec(Connection& c, ReplyWriter& w);
  rpc::Task<bool> watched_keys_changed(const std::unordered_map<std::string, uint64_t>& watched);
  // The version of `key` now (0: absent), or a failure.
  rpc::Task<Code> version_of(const std::string& key, uint64_t* version);
  bool txn_unavailable(std::string_view what, ReplyWriter& w) const;

  server::ServiceEnv& env_;
  std::function<void(Connection&)> resumed_;
  size_t running_ = 0;
  uint64_t commands_ = 0;
  bool stopping_ = false;
};

// "ERR wrong number of arguments for 'get' command" (subcommands: 'client|setname').
std::string arity_error(std::string_view name);

// The keys a MULTI/EXEC block will read and write, from the command table's key positions (WATCHed keys are reads).
txn::DeclaredKeys declared_keys(const std::vector<QueuedCommand>& queued,
                                const std::unordered_map<std::string, uint64_t>& watched);

}  // namespace rdx::resp
