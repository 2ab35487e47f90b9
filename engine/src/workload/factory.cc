// Workload specs ("smallbank:accounts=1000,hot_percent=4") and the registry of workloads.
#include <fmt/format.h>

#include <cctype>
#include <charconv>

#include "workload/kv.h"
#include "workload/smallbank.h"
#include "workload/tatp.h"
#include "workload/tpcc.h"

namespace rdx::workload {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

const Registry<WorkloadEntry>& workloads() {
  static const Registry<WorkloadEntry> registry{
      "workload",
      {
          {"smallbank", "SmallBank banking transactions (write-intensive); invariant: total balance",
           [](ParamReader& p) -> std::unique_ptr<Workload> { return std::make_unique<SmallBank>(p); }},
          {"tatp", "TATP telecom transactions (read-intensive); invariant: referential integrity",
           [](ParamReader& p) -> std::unique_ptr<Workload> { return std::make_unique<Tatp>(p); }},
          {"ogp", "O(G,P): G gets then P puts on random keys (also written o(G,P), e.g. o(4,2))",
           [](ParamReader& p) -> std::unique_ptr<Workload> { return std::make_unique<Ogp>(p); }},
          {"ycsb-a", "transactional YCSB A: 50% read, 50% update",
           [](ParamReader& p) -> std::unique_ptr<Workload> { return std::make_unique<Ycsb>('a', p); }},
          {"ycsb-b", "transactional YCSB B: 95% read, 5% update",
           [](ParamReader& p) -> std::unique_ptr<Workload> { return std::make_unique<Ycsb>('b', p); }},
          {"ycsb-c", "transactional YCSB C: 100% read",
           [](ParamReader& p) -> std::unique_ptr<Workload> { return std::make_unique<Ycsb>('c', p); }},
          {"ycsb-f", "transactional YCSB F: 50% read, 50% read-modify-write",
           [](ParamReader& p) -> std::unique_ptr<Workload> { return std::make_unique<Ycsb>('f', p); }},
          {"tpcc-lite",
           "TPC-C-lite: NewOrder and Payment over warehouses, each on one shard; invariant: consistency "
           "conditions 1-5",
           [](ParamReader& p) -> std::unique_ptr<Workload> { return std::make_unique<TpccLite>(p); }},
          {"ycsb-rcc", "RCC's YCSB: 10 operations, 10% read-modify-write, 5 us of computation per transaction",
           [](ParamReader& p) -> std::unique_ptr<Workload> { return std::make_unique<Ycsb>('r', p); }},
      }};
  return registry;
}

namespace {

// "o(4,2)" -> g=4, p=2.
bool parse_ogp_alias(std::string_view name, uint64_t& g, uint64_t& p) {
  if (name.size() < 6 || name.substr(0, 2) != "o(" || name.back() != ')') return false;
  std::string_view inner = name.substr(2, name.size() - 3);
  size_t comma = inner.find(',');
  if (comma == std::string_view::npos) return false;
  auto parse = [](std::string_view s, uint64_t& v) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return !s.empty() && ec == std::errc() && end == s.data() + s.size();
  };
  return parse(inner.substr(0, comma), g) && parse(inner.substr(comma + 1), p);
}

}  // namespace

Result<WorkloadSpec> parse_workload_spec(std::string_view text) {
  text = trim(text);
  WorkloadSpec spec;
  size_t colon = text.find(':');
  for (char c : trim(text.substr(0, colon))) {
    spec.name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (spec.name.empty()) return error(Code::kInvalidArgument, "workload spec \"{}\" has no name", text);
  if (colon == std::string_view::npos) return spec;
  std::string_view rest = text.substr(colon + 1);
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos || trim(item.substr(0, eq)).empty()) {
      return error(Code::kInvalidArgument, "workload spec \"{}\": \"{}\" is not key=value", text, item);
    }
    spec.params.emplace_back(std::string(trim(item.substr(0, eq))), std::string(trim(item.substr(eq + 1))));
  }
  return spec;
}

Result<std::unique_ptr<Workload>> make_workload(const WorkloadSpec& spec) {
  WorkloadSpec s = spec;
  uint64_t g = 0, p = 0;
  if (parse_ogp_alias(s.name, g, p)) {
    for (const auto& [k, v] : s.params) {
      if (k == "g" || k == "p") {
        return error(Code::kInvalidArgument, "workload {}: G and P are in the name; do not also set {}", s.name, k);
      }
    }
    s.name = "ogp";
    s.params.emplace_back("g", std::to_string(g));
    s.params.emplace_back("p", std::to_string(p));
  }
  if (const WorkloadEntry* e = workloads().find(s.name)) {
    ParamReader reader(s.name, s.params);
    std::unique_ptr<Workload> w = e->make(reader);
    RDX_RETURN_IF_ERROR(reader.finish());
    return w;
  }
  return error(Code::kInvalidArgument, "unknown workload \"{}\" (known: {}, o(G,P))", spec.name,
               workloads().names_joined());
}

Result<std::unique_ptr<Workload>> make_workload(std::string_view spec_text) {
  auto spec = parse_workload_spec(spec_text);
  if (!spec.is_ok()) return spec.status();
  return make_workload(*spec);
}

std::string workload_help() {
  std::string out = "Workloads (--workload name or name:key=value,...):\n";
  for (const auto& e : workloads().entries()) {
    ParamReader reader(std::string(e.name), {});
    (void)e.make(reader);
    out += fmt::format("  {}  {}\n{}", e.name, e.summary, reader.help());
  }
  return out;
}

}  // namespace rdx::workload
