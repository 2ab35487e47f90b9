#pragma once
// The commands the endpoint knows: Redis 7's names, arities (n: exactly n arguments counting the name; -n: at least
// n), key positions and documentation, plus the execution traits rdx needs. COMMAND, COMMAND INFO/DOCS/COUNT and the
// arity and unknown-command errors are all generated from this one table.
#include <cstdint>
#include <span>
#include <string_view>

namespace rdx::resp {

enum class Cmd : uint8_t {
  // keys (operations of the replication protocol, or inside a transaction)
  kGet,
  kSet,
  kSetNx,
  kGetSet,
  kGetDel,
  kDel,
  kExists,
  kMGet,
  kMSet,
  kIncr,
  kIncrBy,
  kDecr,
  kDecrBy,
  kAppend,
  kStrlen,
  kType,
  kTtl,
  kPTtl,
  kPersist,
  kExpiry,
  // transactions
  kMulti,
  kExec,
  kDiscard,
  kWatch,
  kUnwatch,
  // connection and server
  kPing,
  kEcho,
  kAuth,
  kHello,
  kInfo,
  kClient,
  kCommand,
  kConfig,
  kQuit,
  kReset,
  kDbSize,
  kSelect,
};

enum CmdFlag : uint32_t {
  kFlagWrite = 1u << 0,
  kFlagReadonly = 1u << 1,
  kFlagDenyOom = 1u << 2,
  kFlagFast = 1u << 3,
  kFlagNoAuth = 1u << 4,  // allowed before AUTH
  kFlagLoading = 1u << 5,
  kFlagStale = 1u << 6,
  kFlagNoScript = 1u << 7,
  kFlagAdmin = 1u << 8,
  // rdx execution traits (not shown by COMMAND)
  kFlagKeys = 1u << 16,       // reads or writes keys: runs inside EXEC's transaction
  kFlagImmediate = 1u << 17,  // runs at once even inside MULTI (MULTI, EXEC, DISCARD, WATCH, QUIT, RESET)
};

struct CommandSpec {
  std::string_view name;  // lower case, as Redis reports it
  Cmd id;
  int arity;
  uint32_t flags;
  int first_key, last_key, key_step;
  std::string_view group, since, summary, acl_categories;  // acl_categories: space-separated, e.g. "@read @string"
};

// Case-insensitive; nullptr if unknown.
const CommandSpec* find_command(std::string_view name);
std::span<const CommandSpec> all_commands();
inline bool arity_ok(const CommandSpec& c, size_t argc) {
  return c.arity >= 0 ? argc == static_cast<size_t>(c.arity) : argc >= static_cast<size_t>(-c.arity);
}
// ASCII case-insensitive equality (command names, options, subcommands).
bool equals_nocase(std::string_view a, std::string_view b);

}  // namespace rdx::resp
