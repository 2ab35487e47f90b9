#pragma once
// The key commands (GET, SET, DEL, INCR, ...), written once against KeyOps so the same code runs directly on the
// replication protocol and inside a transaction. Each writes exactly one reply.
#include <span>
#include <string_view>

#include "resp/command_table.h"
#include "resp/key_ops.h"
#include "resp/resp_writer.h"
#include "rpc/task.h"

namespace rdx::resp {

using Args = std::span<const std::string_view>;

// spec.flags has kFlagKeys; arity already checked.
rpc::Task<void> run_key_command(const CommandSpec& spec, Args args, KeyOps& ops, ReplyWriter& w);

// The command writes several keys at once (MSET): it is only correct as one transaction. (Single-key
// read-modify-writes such as INCR are one operation of the replication protocol.)
bool needs_transaction(const CommandSpec& spec, Args args);
// Touches several keys: a transaction makes it atomic (Redis' DEL/MGET/EXISTS are), so it runs as one when the
// cluster offers transactions.
bool prefers_transaction(const CommandSpec& spec, Args args);

inline constexpr std::string_view kErrNotInteger = "ERR value is not an integer or out of range";
inline constexpr std::string_view kErrSyntax = "ERR syntax error";

}  // namespace rdx::resp
