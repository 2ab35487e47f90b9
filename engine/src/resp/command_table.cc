#include "resp/command_table.h"

#include <array>
#include <string>
#include <unordered_map>

namespace rdx::resp {

namespace {
constexpr uint32_t kKeysR = kFlagKeys | kFlagReadonly;
constexpr uint32_t kKeysW = kFlagKeys | kFlagWrite;
constexpr uint32_t kConn = kFlagNoScript | kFlagLoading | kFlagStale | kFlagFast;
constexpr uint32_t kTxCtl = kFlagNoScript | kFlagLoading | kFlagStale | kFlagImmediate;

// Expiry: rdx's store keeps no TTLs, so these commands exist only to fail with a clear message (see commands).
constexpr std::string_view kNoExpiry = "(rejected by rdx: keys never expire)";

const std::array kCommands = {
    CommandSpec{"get", Cmd::kGet, 2, kKeysR | kFlagFast, 1, 1, 1, "string", "1.0.0", "Get the value of a key",
                "@read @string @fast"},
    CommandSpec{"set", Cmd::kSet, -3, kKeysW | kFlagDenyOom, 1, 1, 1, "string", "1.0.0",
                "Set the string value of a key", "@write @string @slow"},
    CommandSpec{"setnx", Cmd::kSetNx, 3, kKeysW | kFlagDenyOom | kFlagFast, 1, 1, 1, "string", "1.0.0",
                "Set the value of a key, only if the key does not exist", "@write @string @fast"},
    CommandSpec{"getset", Cmd::kGetSet, 3, kKeysW | kFlagDenyOom | kFlagFast, 1, 1, 1, "string", "1.0.0",
                "Set the string value of a key and return its old value", "@write @string @fast"},
    CommandSpec{"getdel", Cmd::kGetDel, 2, kKeysW | kFlagFast, 1, 1, 1, "string", "6.2.0",
                "Get the value of a key and delete the key", "@write @string @fast"},
    CommandSpec{"del", Cmd::kDel, -2, kKeysW, 1, -1, 1, "generic", "1.0.0", "Delete a key", "@keyspace @write @slow"},
    CommandSpec{"exists", Cmd::kExists, -2, kKeysR | kFlagFast, 1, -1, 1, "generic", "3.0.3",
                "Determine if a key exists", "@keyspace @read @fast"},
    CommandSpec{"mget", Cmd::kMGet, -2, kKeysR | kFlagFast, 1, -1, 1, "string", "1.0.0",
                "Get the values of all the given keys", "@read @string @fast"},
    CommandSpec{"mset", Cmd::kMSet, -3, kKeysW | kFlagDenyOom, 1, -1, 2, "string", "1.0.1",
                "Set multiple keys to multiple values", "@write @string @slow"},
    CommandSpec{"incr", Cmd::kIncr, 2, kKeysW | kFlagDenyOom | kFlagFast, 1, 1, 1, "string", "1.0.0",
                "Increment the integer value of a key by one", "@write @string @fast"},
    CommandSpec{"incrby", Cmd::kIncrBy, 3, kKeysW | kFlagDenyOom | kFlagFast, 1, 1, 1, "string", "1.0.0",
                "Increment the integer value of a key by the given amount", "@write @string @fast"},
    CommandSpec{"decr", Cmd::kDecr, 2, kKeysW | kFlagDenyOom | kFlagFast, 1, 1, 1, "string", "1.0.0",
                "Decrement the integer value of a key by one", "@write @string @fast"},
    CommandSpec{"decrby", Cmd::kDecrBy, 3, kKeysW | kFlagDenyOom | kFlagFast, 1, 1, 1, "string", "1.0.0",
                "Decrement the integer value of a key by the given number", "@write @string @fast"},
    CommandSpec{"append", Cmd::kAppend, 3, kKeysW | kFlagDenyOom | kFlagFast, 1, 1, 1, "string", "2.0.0",
                "Append a value to a key", "@write @string @fast"},
    CommandSpec{"strlen", Cmd::kStrlen, 2, kKeysR | kFlagFast, 1, 1, 1, "string", "2.2.0",
                "Get the length of the value stored in a key", "@read @string @fast"},
    CommandSpec{"type", Cmd::kType, 2, kKeysR | kFlagFast, 1, 1, 1, "generic", "1.0.0",
                "Determine the type stored at key", "@keyspace @read @fast"},
    CommandSpec{"ttl", Cmd::kTtl, 2, kKeysR | kFlagFast, 1, 1, 1, "generic", "1.0.0",
                "Get the time to live for a key in seconds", "@keyspace @read @fast"},
    CommandSpec{"pttl", Cmd::kPTtl, 2, kKeysR | kFlagFast, 1, 1, 1, "generic", "2.6.0",
                "Get the time to live for a key in milliseconds", "@keyspace @read @fast"},
    CommandSpec{"persist", Cmd::kPersist, 2, kKeysW | kFlagFast, 1, 1, 1, "generic", "2.2.0",
                "Remove the expiration from a key", "@keyspace @write @fast"},
    CommandSpec{"expire", Cmd::kExpiry, -3, kKeysW | kFlagFast, 1, 1, 1, "generic", "1.0.0", kNoExpiry,
                "@keyspace @write @fast"},
    CommandSpec{"pexpire", Cmd::kExpiry, -3, kKeysW | kFlagFast, 1, 1, 1, "generic", "2.6.0", kNoExpiry,
                "@keyspace @write @fast"},
    CommandSpec{"expireat", Cmd::kExpiry, -3, kKeysW | kFlagFast, 1, 1, 1, "generic", "1.2.0", kNoExpiry,
                "@keyspace @write @fast"},
    CommandSpec{"pexpireat", Cmd::kExpiry, -3, kKeysW | kFlagFast, 1, 1, 1, "generic", "2.6.0", kNoExpiry,
                "@keyspace @write @fast"},
    CommandSpec{"setex", Cmd::kExpiry, 4, kKeysW | kFlagDenyOom, 1, 1, 1, "string", "2.0.0", kNoExpiry,
                "@write @string @slow"},
    CommandSpec{"psetex", Cmd::kExpiry, 4, kKeysW | kFlagDenyOom, 1, 1, 1, "string", "2.6.0", kNoExpiry,
                "@write @string @slow"},
    CommandSpec{"multi", Cmd::kMulti, 1, kTxCtl | kFlagFast, 0, 0, 0, "transactions", "1.2.0",
                "Mark the start of a transaction block", "@fast @transaction"},
    CommandSpec{"exec", Cmd::kExec, 1, kTxCtl, 0, 0, 0, "transactions", "1.2.0",
                "Execute all commands issued after MULTI", "@slow @transaction"},
    CommandSpec{"discard", Cmd::kDiscard, 1, kTxCtl | kFlagFast, 0, 0, 0, "transactions", "2.0.0",
                "Discard all commands issued after MULTI", "@fast @transaction"},
    CommandSpec{"watch", Cmd::kWatch, -2, kTxCtl | kFlagFast, 1, -1, 1, "transactions", "2.2.0",
                "Watch the given keys to determine execution of the MULTI/EXEC block", "@fast @transaction"},
    CommandSpec{"unwatch", Cmd::kUnwatch, 1, kTxCtl | kFlagFast, 0, 0, 0, "transactions", "2.2.0",
                "Forget about all watched keys", "@fast @transaction"},
    CommandSpec{"ping", Cmd::kPing, -1, kFlagFast, 0, 0, 0, "connection", "1.0.0", "Ping the server",
                "@fast @connection"},
    CommandSpec{"echo", Cmd::kEcho, 2, kFlagFast, 0, 0, 0, "connection", "1.0.0", "Echo the given string",
                "@fast @connection"},
    CommandSpec{"auth", Cmd::kAuth, -2, kConn | kFlagNoAuth, 0, 0, 0, "connection", "1.0.0",
                "Authenticate to the server", "@fast @connection"},
    CommandSpec{"hello", Cmd::kHello, -1, kConn | kFlagNoAuth, 0, 0, 0, "connection", "6.0.0", "Handshake with Redis",
                "@fast @connection"},
    CommandSpec{"info", Cmd::kInfo, -1, kFlagLoading | kFlagStale, 0, 0, 0, "server", "1.0.0",
                "Get information and statistics about the server", "@slow @dangerous"},
    CommandSpec{"client", Cmd::kClient, -2, 0, 0, 0, 0, "connection", "2.4.0",
                "A container for client connection commands", "@slow"},
    CommandSpec{"command", Cmd::kCommand, -1, kFlagLoading | kFlagStale, 0, 0, 0, "server", "2.8.13",
                "Get array of Redis command details", "@slow @connection"},
    CommandSpec{"config", Cmd::kConfig, -2, 0, 0, 0, 0, "server", "2.0.0",
                "A container for server configuration commands", "@slow"},
    CommandSpec{"quit", Cmd::kQuit, -1, kConn | kFlagNoAuth | kFlagImmediate, 0, 0, 0, "connection", "1.0.0",
                "Close the connection", "@fast @connection"},
    CommandSpec{"reset", Cmd::kReset, 1, kConn | kFlagNoAuth | kFlagImmediate, 0, 0, 0, "connection", "6.2.0",
                "Reset the connection", "@fast @connection"},
    CommandSpec{"dbsize", Cmd::kDbSize, 1, kFlagReadonly | kFlagFast, 0, 0, 0, "server", "1.0.0",
                "Return the number of keys in the selected database", "@keyspace @read @fast"},
    CommandSpec{"select", Cmd::kSelect, 2, kFlagLoading | kFlagStale | kFlagFast, 0, 0, 0, "connection", "1.0.0",
                "Change the selected database for the current connection", "@fast @connection"},
};

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

const std::unordered_map<std::string_view, const CommandSpec*>& index() {
  static const auto* map = [] {
    auto* m = new std::unordered_map<std::string_view, const CommandSpec*>();
    for (const CommandSpec& c : kCommands) m->emplace(c.name, &c);
    return m;
  }();
  return *map;
}
}  // namespace

bool equals_nocase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

const CommandSpec* find_command(std::string_view name) {
  char buf[16];
  if (name.size() > sizeof(buf)) return nullptr;  // longer than any command name
  for (size_t i = 0; i < name.size(); ++i) buf[i] = lower(name[i]);
  const auto& idx = index();
  auto it = idx.find(std::string_view(buf, name.size()));
  return it == idx.end() ? nullptr : it->second;
}

std::span<const CommandSpec> all_commands() { return kCommands; }

}  // namespace rdx::resp
