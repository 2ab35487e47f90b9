// Connection and server commands: PING, AUTH, HELLO, INFO, CLIENT, COMMAND, CONFIG, SELECT, RESET, DBSIZE.
#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "resp/executor.h"
#include "resp/resp_parser.h"
#include "rpc/codec.h"

namespace rdx::resp {

using rpc::Task;

namespace {
constexpr std::string_view kRedisVersion = "7.0.0";  // what INFO's redis_version reports too

std::string unknown_subcommand(std::string_view sub, std::string_view container) {
  return fmt::format("ERR unknown subcommand '{}'. Try {} HELP.", sub.substr(0, 128), container);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out)
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  return out;
}

bool valid_client_name(std::string_view name) {
  for (char ch : name)
    if (ch < '!' || ch > '~') return false;
  return true;
}

// Constant-time comparison: the time taken does not reveal how much of a guessed password matched.
bool constant_time_equal(std::string_view a, std::string_view b) {
  size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() != b.size() ? 1 : 0;
  for (size_t i = 0; i < n; ++i) {
    unsigned x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

void write_help(ReplyWriter& w, const std::vector<std::string_view>& lines) {
  w.array(lines.size());
  for (auto l : lines) w.simple(l);
}

// Writes a space-separated word list as a set of simple strings.
void write_word_set(ReplyWriter& w, const std::vector<std::string_view>& words) {
  w.set(words.size());
  for (auto word : words) w.simple(word);
}

std::vector<std::string_view> split_words(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    size_t sp = s.find(' ');
    if (sp != 0) out.push_back(s.substr(0, sp));
    if (sp == std::string_view::npos) break;
    s.remove_prefix(sp + 1);
  }
  return out;
}

void write_command_info(ReplyWriter& w, const CommandSpec& c) {
  static constexpr std::pair<uint32_t, std::string_view> kFlagNames[] = {
      {kFlagWrite, "write"}, {kFlagReadonly, "readonly"}, {kFlagDenyOom, "denyoom"},
      {kFlagAdmin, "admin"}, {kFlagNoScript, "noscript"}, {kFlagLoading, "loading"},
      {kFlagStale, "stale"}, {kFlagFast, "fast"},         {kFlagNoAuth, "no_auth"}};
  std::vector<std::string_view> flags;
  for (auto [bit, name] : kFlagNames)
    if (c.flags & bit) flags.push_back(name);
  w.array(10);
  w.bulk(c.name);
  w.integer(c.arity);
  write_word_set(w, flags);
  w.integer(c.first_key);
  w.integer(c.last_key);
  w.integer(c.key_step);
  write_word_set(w, split_words(c.acl_categories));
  w.array(0);  // tips
  w.array(0);  // key specifications
  w.array(0);  // subcommands
}

void write_command_docs(ReplyWriter& w, const CommandSpec& c) {
  w.bulk(c.name);
  w.map(3);
  w.bulk("summary");
  w.bulk(c.summary);
  w.bulk("since");
  w.bulk(c.since);
  w.bulk("group");
  w.bulk(c.group);
}
}  // namespace

void Executor::ping(Args args, ReplyWriter& w) {
  if (args.size() > 2) return w.error(arity_error("ping"));
  if (args.size() == 2) return w.bulk(args[1]);
  w.simple("PONG");
}

bool Executor::password_matches(std::string_view user, std::string_view password) const {
  if (user != "default") return false;  // rdx has one user, Redis' default user
  return env_.password.empty() || constant_time_equal(password, env_.password);
}

void Executor::auth(Connection& c, Args args, ReplyWriter& w) {
  if (args.size() > 3) return w.error(kErrSyntax);
  if (args.size() == 2 && env_.password.empty()) {
    return w.error(
        "ERR AUTH <password> called without any password configured for the default user. Are you sure your "
        "configuration is correct?");
  }
  std::string_view user = args.size() == 3 ? args[1] : "default";
  if (!password_matches(user, args.back()))
    return w.error("WRONGPASS invalid username-password pair or user is disabled.");
  c.authenticated = true;
  w.ok();
}

void Executor::hello(Connection& c, Args args, ReplyWriter& w) {
  int64_t version = c.protocol;
  if (args.size() >= 2) {
    if (!parse_int64(args[1], &version)) return w.error("ERR Protocol version is not an integer or out of range");
    if (version < 2 || version > 3) return w.error("NOPROTO unsupported protocol version");
  }
  std::string_view user, password, name;
  bool has_auth = false, has_name = false;
  for (size_t j = 2; j < args.size(); ++j) {
    size_t more = args.size() - 1 - j;
    if (equals_nocase(args[j], "auth") && more >= 2) {
      user = args[j + 1];
      password = args[j + 2];
      has_auth = true;
      j += 2;
    } else if (equals_nocase(args[j], "setname") && more >= 1) {
      name = args[j + 1];
      has_name = true;
      j += 1;
    } else {
      return w.error(fmt::format("ERR Syntax error in HELLO option '{}'", args[j]));
    }
  }
  if (has_auth) {
    if (!password_matches(user, password))
      return w.error("WRONGPASS invalid username-password pair or user is disabled.");
    c.authenticated = true;
  }
  if (!c.authenticated) {
    return w.error(
        "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> "
        "option can be used to authenticate the client and select the RESP protocol version at the same time");
  }
  if (has_name) {
    if (!valid_client_name(name))
      return w.error("ERR Client names cannot contain spaces, newlines or special characters.");
    c.name = std::string(name);
  }
  c.protocol = static_cast<int>(version);
  w.set_protocol(c.protocol);
  w.map(7);
  w.bulk("server");
  w.bulk("redis");
  w.bulk("version");
  w.bulk(kRedisVersion);
  w.bulk("proto");
  w.integer(c.protocol);
  w.bulk("id");
  w.integer(static_cast<int64_t>(c.id));
  w.bulk("mode");
  w.bulk("standalone");
  w.bulk("role");
  w.bulk("master");
  w.bulk("modules");
  w.array(0);
}

void Executor::info(Args args, ReplyWriter& w) {
  // The node's sections, plus the client counters this front end keeps.
  std::string text = env_.info ? env_.info() : std::string();
  ClientStats& cs = client_stats();
  std::vector<std::pair<std::string, std::string>> sections;  // lower-case name, text
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find("\r\n\r\n", pos);
    std::string_view sec = std::string_view(text).substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (sec.starts_with("# ")) {
      size_t eol = sec.find("\r\n");
      while (sec.ends_with("\r\n")) sec.remove_suffix(2);
      sections.emplace_back(lower(sec.substr(2, eol == std::string_view::npos ? std::string_view::npos : eol - 2)),
                            std::string(sec) + "\r\n");
    }
    if (end == std::string::npos) break;
    pos = end + 4;
  }
  sections.emplace_back("clients", fmt::format("# Clients\r\nconnected_clients:{}\r\nmaxclients:10000\r\n",
                                               cs.connected.load(std::memory_order_relaxed)));
  sections.emplace_back(
      "stats", fmt::format("# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}"
                           "\r\nrejected_connections:{}\r\n",
                           cs.accepted.load(std::memory_order_relaxed), cs.commands.load(std::memory_order_relaxed),
                           cs.rejected.load(std::memory_order_relaxed)));
  bool all = args.size() == 1;
  std::string out;
  for (const auto& [name, body] : sections) {
    bool wanted = all;
    for (size_t i = 1; i < args.size() && !wanted; ++i) {
      wanted = equals_nocase(args[i], name) || equals_nocase(args[i], "all") || equals_nocase(args[i], "default") ||
               equals_nocase(args[i], "everything");
    }
    if (!wanted) continue;
    if (!out.empty()) out += "\r\n";
    out += body;
  }
  w.verbatim("txt", out);
}

std::string Executor::client_info_line(const Connection& c) const {
  auto now = std::chrono::steady_clock::now();
  auto secs = [&](auto t) { return std::chrono::duration_cast<std::chrono::seconds>(now - t).count(); };
  return fmt::format(
      "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db=0 sub=0 psub=0 ssub=0 multi={} qbuf={} "
      "qbuf-free={} obl={} oll=0 omem={} events=r cmd={} user=default redir=-1 resp={} lib-name={} lib-ver={}\n",
      c.id, c.peer_addr, c.local_addr, c.fd.get(), c.name, secs(c.created), secs(c.last_active), c.in_multi ? "x" : "N",
      c.in_multi ? static_cast<int64_t>(c.queued.size()) : -1, c.in.unconsumed_size(),
      c.in.capacity() - c.in.unconsumed_size(), c.pending_output(), c.out.capacity(),
      c.last_command.empty() ? "NULL" : c.last_command, c.protocol, c.lib_name, c.lib_version);
}

void Executor::client(Connection& c, Args args, ReplyWriter& w) {
  std::string_view sub = args[1];
  auto arity = [&](size_t want, std::string_view name) {
    if (args.size() == want) return true;
    w.error(arity_error(fmt::format("client|{}", name)));
    return false;
  };
  if (equals_nocase(sub, "id")) {
    if (arity(2, "id")) w.integer(static_cast<int64_t>(c.id));
  } else if (equals_nocase(sub, "getname")) {
    if (!arity(2, "getname")) return;
    if (c.name.empty()) return w.null();
    w.bulk(c.name);
  } else if (equals_nocase(sub, "setname")) {
    if (!arity(3, "setname")) return;
    if (!valid_client_name(args[2]))
      return w.error("ERR Client names cannot contain spaces, newlines or special characters.");
    c.name = std::string(args[2]);
    w.ok();
  } else if (equals_nocase(sub, "info")) {
    if (arity(2, "info")) w.verbatim("txt", client_info_line(c));
  } else if (equals_nocase(sub, "setinfo")) {
    if (!arity(4, "setinfo")) return;
    bool is_name = equals_nocase(args[2], "lib-name");
    if (!is_name && !equals_nocase(args[2], "lib-ver"))
      return w.error(fmt::format("ERR Unrecognized option '{}'", args[2]));
    if (!valid_client_name(args[3]))
      return w.error("ERR lib-name and lib-ver cannot contain spaces, newlines or special characters.");
    (is_name ? c.lib_name : c.lib_version) = std::string(args[3]);
    w.ok();
  } else if (equals_nocase(sub, "help")) {
    write_help(
        w, {"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", "ID",
            "    Return the ID of the current connection.", "GETNAME", "    Return the name of the current connection.",
            "SETNAME <name>", "    Assign the name <name> to the current connection.", "INFO",
            "    Return information about the current client connection.", "SETINFO <option> <value>",
            "    Set LIB-NAME or LIB-VER of the current connection."});
  } else {
    w.error(unknown_subcommand(sub, "CLIENT"));
  }
}

void Executor::command(Args args, ReplyWriter& w) {
  auto commands = all_commands();
  if (args.size() == 1) {
    w.array(commands.size());
    for (const CommandSpec& c : commands) write_command_info(w, c);
    return;
  }
  std::string_view sub = args[1];
  if (equals_nocase(sub, "count")) {
    if (args.size() != 2) return w.error(arity_error("command|count"));
    w.integer(static_cast<int64_t>(commands.size()));
  } else if (equals_nocase(sub, "info")) {
    if (args.size() == 2) return command(args.first(1), w);
    w.array(args.size() - 2);
    for (size_t i = 2; i < args.size(); ++i) {
      const CommandSpec* c = find_command(args[i]);
      if (c == nullptr) {
        w.null_array();
      } else {
        write_command_info(w, *c);
      }
    }
  } else if (equals_nocase(sub, "docs")) {
    std::vector<const CommandSpec*> wanted;
    for (size_t i = 2; i < args.size(); ++i)
      if (const CommandSpec* c = find_command(args[i])) wanted.push_back(c);
    if (args.size() == 2)
      for (const CommandSpec& c : commands) wanted.push_back(&c);
    w.map(wanted.size());
    for (const CommandSpec* c : wanted) write_command_docs(w, *c);
  } else if (equals_nocase(sub, "list")) {
    w.array(commands.size());
    for (const CommandSpec& c : commands) w.bulk(c.name);
  } else if (equals_nocase(sub, "help")) {
    write_help(
        w, {"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", "(no subcommand)",
            "    Return details about all commands.", "COUNT", "    Return the total number of commands.",
            "INFO [<command-name> ...]", "    Return details about the given commands.", "DOCS [<command-name> ...]",
            "    Return documentation of the given commands.", "LIST", "    Return the names of all commands."});
  } else {
    w.error(unknown_subcommand(sub, "COMMAND"));
  }
}

void Executor::config(Args args, ReplyWriter& w) {
  std::string_view sub = args[1];
  if (equals_nocase(sub, "get")) {
    if (args.size() < 3) return w.error(arity_error("config|get"));
    // Parameters clients and tools (redis-benchmark) ask for; anything else matches nothing, as in Redis.
    const std::pair<std::string_view, std::string> params[] = {
        {"save", ""},
        {"appendonly", "no"},
        {"databases", "1"},
        {"maxclients", "10000"},
        {"timeout", "0"},
        {"proto-max-bulk-len", "536870912"},
        {"port", std::to_string(env_.redis_port)},
    };
    std::vector<const std::pair<std::string_view, std::string>*> hits;
    for (const auto& p : params) {
      std::string name(p.first);
      for (size_t i = 2; i < args.size(); ++i) {
        if (fnmatch(std::string(args[i]).c_str(), name.c_str(), FNM_CASEFOLD) == 0) {
          hits.push_back(&p);
          break;
        }
      }
    }
    w.map(hits.size());
    for (const auto* p : hits) {
      w.bulk(p->first);
      w.bulk(p->second);
    }
  } else if (equals_nocase(sub, "set")) {
    w.error("ERR CONFIG SET is not supported by rdx (the cluster is configured through its topology)");
  } else if (equals_nocase(sub, "resetstat")) {
    w.ok();
  } else {
    w.error(unknown_subcommand(sub, "CONFIG"));
  }
}

void Executor::select(Args args, ReplyWriter& w) {
  int64_t db = 0;
  if (!parse_int64(args[1], &db)) return w.error(kErrNotInteger);
  if (db != 0) return w.error("ERR DB index is out of range");  // rdx has one keyspace
  w.ok();
}

void Executor::reset(Connection& c, ReplyWriter& w) {
  c.in_multi = false;
  c.multi_dirty = false;
  c.queued.clear();
  c.watched.clear();
  c.protocol = 2;
  c.name.clear();
  c.authenticated = env_.password.empty();
  w.set_protocol(2);
  w.simple("RESET");
}

Status Executor::register_handlers() {
  return env_.ctx.rpc().on(kRespKeyCountMsg, [this](const rpc::Incoming& in) {
    rpc::Writer out;
    out.put(static_cast<uint64_t>(env_.ctx.table().size()));
    env_.ctx.rpc().respond(in.reply_to(), Code::kOk, out.span());
  });
}

// DBSIZE counts the whole cluster: this node's shard from its own table (every replica of a shard holds the same
// keys), every other shard by asking its primary.
Task<void> Executor::dbsize(ReplyWriter& w) {
  cluster::WorkerContext& ctx = env_.ctx;
  const cluster::Topology& topo = ctx.topology();
  int my_shard = topo.nodes[ctx.self()].shard;
  uint64_t total = 0;
  for (uint32_t s = 0; s < topo.shards.size(); ++s) {
    if (static_cast<int>(s) == my_shard) {
      total += ctx.table().size();
      continue;
    }
    uint16_t primary = ctx.membership().primary(s);
    auto conn = ctx.peer(primary);
    if (!conn) {
      co_return w.error(failure_line(
          Code::kUnavailable, fmt::format("primary {} of shard {} is not connected", topo.nodes[primary].name, s)));
    }
    rpc::Response r = co_await ctx.rpc().call(*conn, kRespKeyCountMsg, {});
    rpc::Reader rd(r.payload);
    uint64_t n = rd.get<uint64_t>();
    if (r.status != Code::kOk || !rd.done()) {
      co_return w.error(failure_line(
          r.status == Code::kOk ? Code::kInternal : r.status,
          fmt::format("primary {} of shard {} did not report its key count", topo.nodes[primary].name, s)));
    }
    total += n;
  }
  w.integer(static_cast<int64_t>(total));
}

}  // namespace rdx::resp
