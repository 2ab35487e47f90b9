#pragma once
// The key commands (GET, SET, DEL, INCR, ...), written once against KeyOps so the same code runs directly on the
// Protocol and inside a transaction. Each writes exactly one reply.
#include <span>
#include <string_view>

#include "rpc/task.h"
#include "server/resp/command_table.h"
#include "server/resp/key_ops.h"
#include "server/resp/resp_writer.h"

namespace rdx::resp {

using Args = std::span<const std::string_view>;

// spec.flags has kFlagKeys; arity already checked.
rpc::Task<void> run_key_command(const CommandSpec& spec, Args args, KeyOps& ops, ReplyWriter& w);

// The command reads and then writes (INCR, APPEND, SET NX/XX/GET, ...) or writes several keys at once (MSET): it is
// only correct as one transaction.
bool needs_transaction(const CommandSpec& spec, Args args);
// Touches several keys: a transaction makes it atomic (Redis' DEL/MGET/EXISTS are), so it runs as one when the
// cluster offers transactions.
bool prefers_transaction(const CommandSpec& spec, Args args);

inline constexpr std::string_view kErrNotInteger = "ERR value is not an integer or out of range";
inline constexpr std::string_view kErrSyntax = "ERR syntax error";

}  // namespace rdx::resp
