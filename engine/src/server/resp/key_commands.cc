#include "server/resp/key_commands.h"

#include <fmt/format.h>

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "server/resp/resp_parser.h"
#include "store/hashtable.h"

namespace rdx::resp {

using rpc::Task;

namespace {

constexpr std::string_view kErrOverflow = "ERR increment or decrement would overflow";
constexpr std::string_view kErrTooBig = "ERR string exceeds maximum allowed size (rdx stores values up to 1 MiB)";

bool ok_or_absent(Code c) { return c == Code::kOk || c == Code::kNotFound; }

// SET's options, parsed exactly like Redis 7 (same conflicts, same error texts).
struct SetOptions {
  bool nx = false, xx = false, get = false, keepttl = false;
  bool has_expiry = false;
};

std::optional<std::string_view> parse_set_options(Args args, SetOptions* o) {
  bool ex = false, px = false, exat = false, pxat = false;
  std::string_view expiry;
  for (size_t j = 3; j < args.size(); ++j) {
    std::string_view opt = args[j];
    bool has_next = j + 1 < args.size();
    bool any_expiry = ex || px || exat || pxat;
    if (equals_nocase(opt, "nx") && !o->xx) {
      o->nx = true;
    } else if (equals_nocase(opt, "xx") && !o->nx) {
      o->xx = true;
    } else if (equals_nocase(opt, "get")) {
      o->get = true;
    } else if (equals_nocase(opt, "keepttl") && !any_expiry) {
      o->keepttl = true;
    } else if (has_next && !o->keepttl &&
               ((equals_nocase(opt, "ex") && !px && !exat && !pxat) ||
                (equals_nocase(opt, "px") && !ex && !exat && !pxat) ||
                (equals_nocase(opt, "exat") && !ex && !px && !pxat) ||
                (equals_nocase(opt, "pxat") && !ex && !px && !exat))) {
      ex = ex || equals_nocase(opt, "ex");
      px = px || equals_nocase(opt, "px");
      exat = exat || equals_nocase(opt, "exat");
      pxat = pxat || equals_nocase(opt, "pxat");
      expiry = args[++j];
    } else {
      return kErrSyntax;
    }
  }
  if (ex || px || exat || pxat) {
    int64_t v = 0;
    if (!parse_int64(expiry, &v)) return kErrNotInteger;
    if (v <= 0) return "ERR invalid expire time in 'set' command";
    o->has_expiry = true;
  }
  return std::nullopt;
}

bool set_has_condition_or_get(Args args) {
  for (size_t j = 3; j < args.size(); ++j)
    if (equals_nocase(args[j], "nx") || equals_nocase(args[j], "xx") || equals_nocase(args[j], "get")) return true;
  return false;
}

Task<void> set_command(Args args, KeyOps& ops, ReplyWriter& w) {
  SetOptions o;
  if (auto err = parse_set_options(args, &o)) co_return w.error(*err);
  if (o.has_expiry) {
    co_return w.error(
        "ERR rdx does not support key expiry: SET with EX/PX/EXAT/PXAT is refused (keys never expire; set the key "
        "without a TTL)");
  }
  std::string old;
  bool exists = false;
  if (o.nx || o.xx || o.get) {
    Code c = co_await ops.get(args[1], &old);
    if (!ok_or_absent(c)) co_return w.error(ops.error_line());
    exists = c == Code::kOk;
  }
  bool apply = !(o.nx && exists) && !(o.xx && !exists);
  if (apply) {
    Code c = co_await ops.put(args[1], std::string(args[2]));
    if (c != Code::kOk) co_return w.error(ops.error_line());
  }
  if (o.get) {
    if (exists) {
      w.bulk(old);
    } else {
      w.null();
    }
  } else if (apply) {
    w.ok();
  } else {
    w.null();
  }
}

Task<void> incr_by(std::string_view key, int64_t delta, KeyOps& ops, ReplyWriter& w) {
  std::string value;
  Code c = co_await ops.get(key, &value);
  if (!ok_or_absent(c)) co_return w.error(ops.error_line());
  int64_t current = 0;
  if (c == Code::kOk && !parse_int64(value, &current)) co_return w.error(kErrNotInteger);
  if ((delta < 0 && current < std::numeric_limits<int64_t>::min() - delta) ||
      (delta > 0 && current > std::numeric_limits<int64_t>::max() - delta))
    co_return w.error(kErrOverflow);
  int64_t next = current + delta;
  Code put_status = co_await ops.put(key, std::to_string(next));
  if (put_status != Code::kOk) co_return w.error(ops.error_line());
  w.integer(next);
}

Task<void> incr_command(Cmd id, Args args, KeyOps& ops, ReplyWriter& w) {
  int64_t delta = 1;
  if (id == Cmd::kIncrBy || id == Cmd::kDecrBy) {
    if (!parse_int64(args[2], &delta)) co_return w.error(kErrNotInteger);
    if (id == Cmd::kDecrBy) {
      if (delta == std::numeric_limits<int64_t>::min()) co_return w.error("ERR decrement would overflow");
      delta = -delta;
    }
  } else if (id == Cmd::kDecr) {
    delta = -1;
  }
  co_await incr_by(args[1], delta, ops, w);
}

Task<void> read_modify_write(Cmd id, Args args, KeyOps& ops, ReplyWriter& w) {
  std::string old;
  Code c = co_await ops.get(args[1], &old);
  if (!ok_or_absent(c)) co_return w.error(ops.error_line());
  bool exists = c == Code::kOk;
  switch (id) {
    case Cmd::kAppend: {
      if (old.size() + args[2].size() > store::kMaxValueBytes) co_return w.error(kErrTooBig);
      old.append(args[2]);
      size_t len = old.size();
      Code put_status = co_await ops.put(args[1], std::move(old));
      if (put_status != Code::kOk) co_return w.error(ops.error_line());
      co_return w.integer(static_cast<int64_t>(len));
    }
    case Cmd::kSetNx: {
      if (exists) co_return w.integer(0);
      Code put_status = co_await ops.put(args[1], std::string(args[2]));
      if (put_status != Code::kOk) co_return w.error(ops.error_line());
      co_return w.integer(1);
    }
    case Cmd::kGetSet: {
      Code put_status = co_await ops.put(args[1], std::string(args[2]));
      if (put_status != Code::kOk) co_return w.error(ops.error_line());
      break;
    }
    case Cmd::kGetDel:
      if (exists) {  // (no co_await inside && or ?: : GCC 12 miscompiles it)
        Code removed = co_await ops.remove(args[1]);
        if (!ok_or_absent(removed)) co_return w.error(ops.error_line());
      }
      break;
    default:
      co_return w.error("ERR internal: not a read-modify-write command");
  }
  if (exists) {
    w.bulk(old);
  } else {
    w.null();
  }
}

Task<void> multi_key_command(Cmd id, Args args, KeyOps& ops, ReplyWriter& w) {
  if (id == Cmd::kMSet) {
    if (args.size() % 2 == 0) co_return w.error("ERR wrong number of arguments for 'mset' command");
    for (size_t i = 1; i + 1 < args.size(); i += 2) {
      Code put_status = co_await ops.put(args[i], std::string(args[i + 1]));
      if (put_status != Code::kOk) co_return w.error(ops.error_line());
    }
    co_return w.ok();
  }
  if (id == Cmd::kMGet) {
    // Collected first: a failure half-way must not leave a half-written array in the reply.
    std::vector<std::optional<std::string>> values(args.size() - 1);
    for (size_t i = 1; i < args.size(); ++i) {
      std::string v;
      Code c = co_await ops.get(args[i], &v);
      if (!ok_or_absent(c)) co_return w.error(ops.error_line());
      if (c == Code::kOk) values[i - 1] = std::move(v);
    }
    w.array(values.size());
    for (const auto& v : values) {
      if (v) {
        w.bulk(*v);
      } else {
        w.null();
      }
    }
    co_return;
  }
  int64_t count = 0;  // DEL, EXISTS
  for (size_t i = 1; i < args.size(); ++i) {
    std::string ignored;
    Code c;
    if (id == Cmd::kDel) {
      c = co_await ops.remove(args[i]);
    } else {
      c = co_await ops.get(args[i], &ignored);
    }
    if (!ok_or_absent(c)) co_return w.error(ops.error_line());
    if (c == Code::kOk) ++count;
  }
  w.integer(count);
}

}  // namespace

bool needs_transaction(const CommandSpec& spec, Args args) {
  if (spec.flags & kFlagAtomic) return true;
  if (spec.id == Cmd::kSet) return set_has_condition_or_get(args);
  if (spec.id == Cmd::kMSet) return args.size() > 3;
  return false;
}

bool prefers_transaction(const CommandSpec& spec, Args args) {
  return (spec.id == Cmd::kDel || spec.id == Cmd::kExists || spec.id == Cmd::kMGet) && args.size() > 2;
}

Task<void> run_key_command(const CommandSpec& spec, Args args, KeyOps& ops, ReplyWriter& w) {
  switch (spec.id) {
    case Cmd::kSet:
      co_return co_await set_command(args, ops, w);
    case Cmd::kIncr:
    case Cmd::kIncrBy:
    case Cmd::kDecr:
    case Cmd::kDecrBy:
      co_return co_await incr_command(spec.id, args, ops, w);
    case Cmd::kAppend:
    case Cmd::kSetNx:
    case Cmd::kGetSet:
    case Cmd::kGetDel:
      co_return co_await read_modify_write(spec.id, args, ops, w);
    case Cmd::kDel:
    case Cmd::kExists:
    case Cmd::kMGet:
    case Cmd::kMSet:
      co_return co_await multi_key_command(spec.id, args, ops, w);
    case Cmd::kPersist:
      co_return w.integer(0);  // no key has a TTL to remove
    case Cmd::kExpiry:
      co_return w.error(
          fmt::format("ERR rdx does not support key expiry: {} is refused (keys never expire)", spec.name));
    default:
      break;
  }
  // Single-key reads: GET, STRLEN, TYPE, TTL, PTTL.
  std::string value;
  Code c = co_await ops.get(args[1], &value);
  if (!ok_or_absent(c)) co_return w.error(ops.error_line());
  bool exists = c == Code::kOk;
  switch (spec.id) {
    case Cmd::kGet:
      if (exists) {
        w.bulk(value);
      } else {
        w.null();
      }
      break;
    case Cmd::kStrlen:
      w.integer(static_cast<int64_t>(value.size()));
      break;
    case Cmd::kType:
      w.simple(exists ? "string" : "none");
      break;
    case Cmd::kTtl:
    case Cmd::kPTtl:
      w.integer(exists ? -1 : -2);
      break;
    default:
      w.error(fmt::format("ERR internal: '{}' is not a key command", spec.name));
      break;
  }
}

}  // namespace rdx::resp
