#pragma once
// Incremental parser for client requests: RESP multibulk (`*<n>\r\n$<len>\r\n<bytes>\r\n...`) and inline commands
// (a text line split like redis-cli/telnet input, with "..." and '...' quoting). Arguments of a multibulk request are
// views into the caller's buffer (no copy); inline arguments are unescaped into the parser's own storage.
//
// The caller passes its unconsumed bytes; on kIncomplete it passes them again (plus what arrived) and the parser
// resumes where it stopped, so a request split at any byte costs no re-scan. Limits and error texts follow Redis 7
// (proto-max-bulk-len, unauthenticated limits); a parse error means the connection must be closed after the reply.
// One deliberate difference: a bulk must be followed by CRLF (Redis skips two bytes unchecked), so a wrong length is
// reported instead of silently running whatever the misaligned bytes spell.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/parse_int.h"

namespace rdx::resp {

struct ParserLimits {
  int64_t max_bulk = int64_t{512} << 20;  // proto-max-bulk-len
  int64_t max_multibulk = 1024 * 1024;    // elements per request
  size_t max_inline = 64 * 1024;          // inline request line, and a multibulk/bulk header line
  // Applied instead while the connection has not authenticated (Redis 7's protection against unauthenticated DoS).
  int64_t unauthenticated_max_bulk = 16384;
  int64_t unauthenticated_max_multibulk = 10;
};

enum class ParseStatus : uint8_t {
  kIncomplete,  // need more bytes; nothing consumed yet
  kCommand,     // args() holds a request of *consumed bytes
  kEmpty,       // an empty request (blank line, *0, *-1): *consumed bytes to skip, nothing to run
  kError,       // protocol error: error() says why; reply and close the connection
};

class RequestParser {
 public:
  explicit RequestParser(ParserLimits limits = {}) : limits_(limits) {}

  // `input` starts at the first byte of the next request. After kIncomplete the next call must pass the same bytes
  // (possibly moved in memory) followed by more.
  ParseStatus parse(std::string_view input, bool authenticated, size_t* consumed);

  // Valid after kCommand until the next parse() call (and while the caller keeps its bytes in place).
  std::span<const std::string_view> args() const { return args_; }
  // "Protocol error: ..." (without the "ERR " prefix), valid after kError.
  const std::string& error() const { return error_; }
  // A lower bound on the bytes the current request still needs beyond `input` (lets the caller size its reads).
  size_t bytes_wanted() const { return wanted_; }
  const ParserLimits& limits() const { return limits_; }

 private:
  enum class State : uint8_t { kStart, kMultibulkCount, kBulkHeader, kBulkData };
  struct Span {
    size_t offset, length;
  };
  ParseStatus parse_inline(std::string_view input, size_t* consumed);
  ParseStatus parse_multibulk(std::string_view input, bool authenticated, size_t* consumed);
  ParseStatus fail(std::string why);
  void reset();

  ParserLimits limits_;
  State state_ = State::kStart;
  size_t pos_ = 0;         // resume offset within the request
  int64_t remaining_ = 0;  // bulks still expected
  int64_t bulk_len_ = 0;
  size_t wanted_ = 0;
  std::vector<Span> spans_;  // argument positions, rebased to views once the request is complete
  std::vector<std::string_view> args_;
  std::vector<std::string> inline_args_;
  std::string error_;
};

using rdx::parse_int64;  // common/parse_int.h

// Splits an inline request line like Redis' sdssplitargs. False on unbalanced quotes.
bool split_inline_args(std::string_view line, std::vector<std::string>* out);

}  // namespace rdx::resp
