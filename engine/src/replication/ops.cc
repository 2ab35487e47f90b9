#include "replication/ops.h"

#include <limits>

#include "common/parse_int.h"
#include "store/hashtable.h"

namespace rdx::replication {

namespace {
constexpr std::string_view kNotInteger = "value is not an integer or out of range";
constexpr std::string_view kOverflow = "increment or decrement would overflow";
constexpr std::string_view kTooBig = "string exceeds maximum allowed size (rdx stores values up to 1 MiB)";

Applied refuse(std::string_view why) {
  Applied a;
  a.status = Code::kInvalidArgument;
  a.error = std::string(why);
  return a;
}
}  // namespace

Applied apply_rmw(const Rmw& op, const std::optional<std::string>& current) {
  Applied a;
  switch (op.when) {
    case Rmw::When::kAlways:
      break;
    case Rmw::When::kIfAbsent:
      if (current) return a;
      break;
    case Rmw::When::kIfPresent:
      if (!current) return a;
      break;
    case Rmw::When::kIfEquals:
      if (!current || *current != op.expected) return a;
      break;
  }
  a.applied = true;
  a.write = true;
  switch (op.kind) {
    case Rmw::Kind::kPut:
      a.new_value = op.value;
      break;
    case Rmw::Kind::kDelete:
      a.write = current.has_value();  // deleting an absent key changes nothing
      break;
    case Rmw::Kind::kAdd: {
      int64_t v = 0;
      if (current && !parse_int64(*current, &v)) return refuse(kNotInteger);
      if ((op.delta < 0 && v < std::numeric_limits<int64_t>::min() - op.delta) ||
          (op.delta > 0 && v > std::numeric_limits<int64_t>::max() - op.delta))
        return refuse(kOverflow);
      a.number = v + op.delta;
      a.new_value = std::to_string(a.number);
      break;
    }
    case Rmw::Kind::kAppend: {
      size_t len = (current ? current->size() : 0) + op.value.size();
      if (len > store::kMaxValueBytes) return refuse(kTooBig);
      a.new_value = current ? *current + op.value : op.value;
      a.number = static_cast<int64_t>(len);
      break;
    }
  }
  return a;
}

void Rmw::encode(rpc::Writer& w) const {
  w.put(static_cast<uint8_t>(kind)).put(static_cast<uint8_t>(when)).put(static_cast<uint8_t>(return_old));
  w.put(delta).bytes(value).bytes(expected);
}

bool Rmw::decode(rpc::Reader& r, Rmw* out) {
  auto kind = r.get<uint8_t>(), when = r.get<uint8_t>(), old = r.get<uint8_t>();
  out->delta = r.get<int64_t>();
  out->value = std::string(r.bytes(store::kMaxValueBytes));
  out->expected = std::string(r.bytes(store::kMaxValueBytes));
  if (!r.ok() || kind > static_cast<uint8_t>(Kind::kAppend) || when > static_cast<uint8_t>(When::kIfEquals) || old > 1)
    return false;
  out->kind = static_cast<Kind>(kind);
  out->when = static_cast<When>(when);
  out->return_old = old != 0;
  return true;
}

void WriteResult::encode(rpc::Writer& w) const {
  w.put(static_cast<uint8_t>(status)).put(static_cast<uint8_t>(existed)).put(static_cast<uint8_t>(applied));
  w.put(static_cast<uint8_t>(combined)).put(prior_version).put(version).put(number).bytes(old_value).bytes(error);
}

bool WriteResult::decode(rpc::Reader& r, WriteResult* out) {
  auto status = r.get<uint8_t>(), existed = r.get<uint8_t>(), applied = r.get<uint8_t>(), combined = r.get<uint8_t>();
  out->prior_version = r.get<uint64_t>();
  out->version = r.get<uint64_t>();
  out->number = r.get<int64_t>();
  out->old_value = std::string(r.bytes(store::kMaxValueBytes));
  out->error = std::string(r.bytes(4096));
  if (!r.ok() || status > static_cast<uint8_t>(Code::kUnsupported) || existed > 1 || applied > 1 || combined > 1)
    return false;
  out->status = static_cast<Code>(status);
  out->existed = existed != 0;
  out->applied = applied != 0;
  out->combined = combined != 0;
  return true;
}

WriteResult result_of(const Rmw& op, const Applied& a, const std::optional<std::string>& current,
                      uint64_t current_version, uint64_t written) {
  WriteResult r;
  r.status = a.status;
  r.error = a.error;
  r.existed = current.has_value();
  r.applied = a.applied;
  r.number = a.number;
  if (op.return_old && current) r.old_value = *current;
  r.prior_version = current ? current_version : 0;
  r.version = a.write ? written : r.prior_version;
  return r;
}

}  // namespace rdx::replication
