// libFuzzer target for the RESP request parser. Besides "no crash, no sanitizer report", it checks invariants, and
// any violation aborts (a finding):
//   1. parsing the input whole and in pieces (split points derived from the input) gives the same requests and the
//      same error: incremental parsing never depends on where reads happened to end;
//   2. every request consumes at least one byte and never more than it was given; multibulk arguments are views
//      inside the input;
//   3. a parsed request re-encoded as a multibulk parses back to the same arguments;
//   4. both authentication states (Redis' smaller unauthenticated limits) behave.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "resp/resp_parser.h"
#include "resp/resp_writer.h"

namespace {

using rdx::resp::ParseStatus;
using rdx::resp::RequestParser;

struct Outcome {
  std::vector<std::vector<std::string>> requests;
  int empties = 0;
  std::string error;
  bool operator==(const Outcome&) const = default;
};

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "resp_parser_fuzz: invariant violated: %s\n", what);
  std::abort();
}

void check_roundtrip(const std::vector<std::string>& args) {
  std::string encoded;
  rdx::resp::ReplyWriter w(&encoded, 2);
  w.array(args.size());
  for (const auto& a : args) w.bulk(a);
  RequestParser p;
  size_t consumed = 0;
  if (p.parse(encoded, true, &consumed) != ParseStatus::kCommand) finding("re-encoded request does not parse");
  if (consumed != encoded.size()) finding("re-encoded request not consumed exactly");
  if (p.args().size() != args.size()) finding("re-encoded request has a different argument count");
  for (size_t i = 0; i < args.size(); ++i)
    if (p.args()[i] != args[i]) finding("re-encoded request has different arguments");
}

// Feeds `input` in pieces ending at `cuts` (ascending), like a connection appending reads to its buffer and erasing
// what was consumed.
Outcome feed(std::string_view input, const std::vector<size_t>& cuts, bool authenticated) {
  RequestParser parser;
  Outcome out;
  std::string buffer;
  size_t fed = 0;
  for (size_t cut : cuts) {
    buffer.append(input.substr(fed, cut - fed));
    fed = cut;
    while (out.error.empty()) {
      size_t consumed = 0;
      ParseStatus st = parser.parse(buffer, authenticated, &consumed);
      if (st == ParseStatus::kIncomplete) break;
      if (st == ParseStatus::kError) {
        out.error = parser.error();
        if (out.error.rfind("Protocol error: ", 0) != 0) finding("error without the Redis prefix");
        break;
      }
      if (consumed == 0 || consumed > buffer.size()) finding("consumed nothing or more than given");
      if (st == ParseStatus::kEmpty) {
        ++out.empties;
      } else {
        std::vector<std::string> args;
        for (std::string_view a : parser.args()) {
          bool inside = a.data() >= buffer.data() && a.data() + a.size() <= buffer.data() + buffer.size();
          if (!buffer.empty() && buffer[0] == '*' && !inside) finding("multibulk argument outside the input");
          args.emplace_back(a);
        }
        if (args.empty()) finding("a request without arguments");
        check_roundtrip(args);
        out.requests.push_back(std::move(args));
      }
      buffer.erase(0, consumed);
    }
    if (!out.error.empty()) break;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  uint64_t seed = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) seed = (seed ^ data[i]) * 1099511628211ull;
  std::vector<size_t> cuts;
  for (size_t pos = 0; pos < size;) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    pos = std::min(size, pos + 1 + static_cast<size_t>((seed >> 33) % 17));
    cuts.push_back(pos);
  }
  for (bool authenticated : {true, false}) {
    Outcome whole = feed(input, {size}, authenticated);
    Outcome pieces = feed(input, cuts, authenticated);
    if (!(whole == pieces)) finding("split parsing differs from whole parsing");
  }
  std::vector<std::string> words;
  rdx::resp::split_inline_args(input.substr(0, 4096), &words);
  int64_t v = 0;
  if (rdx::resp::parse_int64(input.substr(0, 24), &v) && std::to_string(v) != input.substr(0, 24))
    finding("parse_int64 accepted a non-canonical integer");
  return 0;
}
