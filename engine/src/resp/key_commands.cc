#include "resp/key_commands.h"

#include <fmt/format.h>

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "replication/ops.h"
#include "resp/resp_parser.h"
#include "store/hashtable.h"

namespace rdx::resp {

using rpc::Task;

namespace {

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

Task<void> set_command(Args args, KeyOps& ops, ReplyWriter& w) {
  SetOptions o;
  if (auto err = parse_set_options(args, &o)) co_return w.error(*err);
  if (o.has_expiry) {
    co_return w.error(
        "ERR rdx does not support key expiry: SET with EX/PX/EXAT/PXAT is refused (keys never expire; set the key "
        "without a TTL)");
  }
  replication::Rmw op = replication::Rmw::put(std::string(args[2]));
  op.when = o.nx   ? replication::Rmw::When::kIfAbsent
            : o.xx ? replication::Rmw::When::kIfPresent
                   : replication::Rmw::When::kAlways;
  op.return_old = o.get;
  replication::WriteResult r;
  Code c = co_await ops.write(args[1], std::move(op), &r);
  if (c != Code::kOk) co_return w.error(ops.error_line());
  if (o.get) {
    if (r.existed) {
      w.bulk(r.old_value);
    } else {
      w.null();
    }
  } else if (r.applied) {
    w.ok();
  } else {
    w.null();
  }
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
  replication::WriteResult r;
  Code c = co_await ops.write(args[1], replication::Rmw::add(delta), &r);
  if (c != Code::kOk) co_return w.error(ops.error_line());
  w.integer(r.number);
}

// APPEND, SETNX, GETSET, GETDEL: one operation on the key (replication/ops.h), never a read and a later write.
Task<void> read_modify_write(Cmd id, Args args, KeyOps& ops, ReplyWriter& w) {
  replication::Rmw op;
  switch (id) {
    case Cmd::kAppend:
      op = replication::Rmw::append(std::string(args[2]));
      break;
    case Cmd::kSetNx:
      op = replication::Rmw::put(std::string(args[2]));
      op.when = replication::Rmw::When::kIfAbsent;
      break;
    case Cmd::kGetSet:
      op = replication::Rmw::put(std::string(args[2]));
      op.return_old = true;
      break;
    case Cmd::kGetDel:
      op = replication::Rmw::remove();
      op.return_old = true;
      break;
    default:
      co_return w.error("ERR internal: not a read-modify-write command");
  }
  replication::WriteResult r;
  Code c = co_await ops.write(args[1], std::move(op), &r);
  if (c != Code::kOk) co_return w.error(ops.error_line());
  if (id == Cmd::kAppend) co_return w.integer(r.number);
  if (id == Cmd::kSetNx) co_return w.integer(r.applied ? 1 : 0);
  if (r.existed) {
    w.bulk(r.old_value);
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

bool needs_transaction(const CommandSpec& spec, Args args) { return spec.id == Cmd::kMSet && args.size() > 3; }

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
