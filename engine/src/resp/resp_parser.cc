#include "resp/resp_parser.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace rdx::resp {

namespace {
bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f'; }
bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}
// "\r\n" ends a header line; returns the offset of '\r', or npos when the line is not complete yet.
size_t find_cr(std::string_view input, size_t from) {
  if (from >= input.size()) return std::string_view::npos;
  const void* p = std::memchr(input.data() + from, '\r', input.size() - from);
  return p == nullptr ? std::string_view::npos : static_cast<size_t>(static_cast<const char*>(p) - input.data());
}
}  // namespace

bool split_inline_args(std::string_view line, std::vector<std::string>* out) {
  out->clear();
  size_t p = 0;
  const size_t end = line.size();
  auto at = [&](size_t i) { return i < end ? line[i] : '\0'; };
  while (true) {
    while (p < end && is_space(line[p])) ++p;
    if (p == end) return true;
    std::string current;
    bool in_double = false, in_single = false, done = false;
    while (!done) {
      if (in_double) {
        if (p == end) return false;
        char c = line[p];
        if (c == '\\' && at(p + 1) == 'x' && is_hex(at(p + 2)) && is_hex(at(p + 3))) {
          current.push_back(static_cast<char>(hex_value(line[p + 2]) * 16 + hex_value(line[p + 3])));
          p += 3;
        } else if (c == '\\' && p + 1 < end) {
          ++p;
          switch (line[p]) {
            case 'n':
              current.push_back('\n');
              break;
            case 'r':
              current.push_back('\r');
              break;
            case 't':
              current.push_back('\t');
              break;
            case 'b':
              current.push_back('\b');
              break;
            case 'a':
              current.push_back('\a');
              break;
            default:
              current.push_back(line[p]);
              break;
          }
        } else if (c == '"') {
          if (p + 1 < end && !is_space(line[p + 1])) return false;  // closing quote must end the argument
          done = true;
        } else {
          current.push_back(c);
        }
      } else if (in_single) {
        if (p == end) return false;
        char c = line[p];
        if (c == '\\' && at(p + 1) == '\'') {
          ++p;
          current.push_back('\'');
        } else if (c == '\'') {
          if (p + 1 < end && !is_space(line[p + 1])) return false;
          done = true;
        } else {
          current.push_back(c);
        }
      } else {
        if (p == end) break;
        char c = line[p];
        switch (c) {
          case ' ':
          case '\n':
          case '\r':
          case '\t':
            done = true;
            break;
          case '"':
            in_double = true;
            break;
          case '\'':
            in_single = true;
            break;
          default:
            current.push_back(c);
            break;
        }
      }
      if (p < end) ++p;
    }
    out->push_back(std::move(current));
  }
}

void RequestParser::reset() {
  state_ = State::kStart;
  pos_ = 0;
  remaining_ = 0;
  bulk_len_ = 0;
  spans_.clear();
}

ParseStatus RequestParser::fail(std::string why) {
  error_ = "Protocol error: " + why;
  reset();
  return ParseStatus::kError;
}

ParseStatus RequestParser::parse(std::string_view input, bool authenticated, size_t* consumed) {
  args_.clear();
  wanted_ = 0;
  if (state_ == State::kStart) {
    if (input.empty()) return ParseStatus::kIncomplete;
    if (input[0] != '*') return parse_inline(input, consumed);
    state_ = State::kMultibulkCount;
    pos_ = 1;
  }
  return parse_multibulk(input, authenticated, consumed);
}

ParseStatus RequestParser::parse_inline(std::string_view input, size_t* consumed) {
  // pos_ remembers how far an earlier call searched for the newline.
  const void* nl = pos_ < input.size() ? std::memchr(input.data() + pos_, '\n', input.size() - pos_) : nullptr;
  if (nl == nullptr) {
    if (input.size() > limits_.max_inline) return fail("too big inline request");
    pos_ = input.size();
    return ParseStatus::kIncomplete;
  }
  size_t newline = static_cast<size_t>(static_cast<const char*>(nl) - input.data());
  if (newline > limits_.max_inline) return fail("too big inline request");
  std::string_view line = input.substr(0, newline);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!split_inline_args(line, &inline_args_)) return fail("unbalanced quotes in request");
  reset();
  *consumed = newline + 1;
  if (inline_args_.empty()) return ParseStatus::kEmpty;
  for (const auto& a : inline_args_) args_.emplace_back(a);
  return ParseStatus::kCommand;
}

ParseStatus RequestParser::parse_multibulk(std::string_view input, bool authenticated, size_t* consumed) {
  const int64_t max_multibulk = authenticated ? limits_.max_multibulk : limits_.unauthenticated_max_multibulk;
  const int64_t max_bulk = authenticated ? limits_.max_bulk : limits_.unauthenticated_max_bulk;
  if (state_ == State::kMultibulkCount) {
    size_t cr = find_cr(input, pos_);
    if (cr == std::string_view::npos) {
      if (input.size() > limits_.max_inline) return fail("too big mbulk count string");
      return ParseStatus::kIncomplete;
    }
    if (cr > limits_.max_inline) return fail("too big mbulk count string");
    if (cr + 1 >= input.size()) return ParseStatus::kIncomplete;
    int64_t count = 0;
    if (input[cr + 1] != '\n' || !parse_int64(input.substr(1, cr - 1), &count) || count > limits_.max_multibulk)
      return fail("invalid multibulk length");
    if (count > max_multibulk) return fail("unauthenticated multibulk length");
    pos_ = cr + 2;
    if (count <= 0) {
      *consumed = pos_;
      reset();
      return ParseStatus::kEmpty;
    }
    remaining_ = count;
    spans_.reserve(static_cast<size_t>(std::min<int64_t>(count, 1024)));
    state_ = State::kBulkHeader;
  }
  while (remaining_ > 0) {
    if (state_ == State::kBulkHeader) {
      if (pos_ >= input.size()) return ParseStatus::kIncomplete;
      if (input[pos_] != '$') return fail(std::string("expected '$', got '") + input[pos_] + "'");
      size_t cr = find_cr(input, pos_ + 1);
      if (cr == std::string_view::npos) {
        if (input.size() - pos_ > limits_.max_inline) return fail("too big bulk count string");
        return ParseStatus::kIncomplete;
      }
      if (cr - pos_ > limits_.max_inline) return fail("too big bulk count string");
      if (cr + 1 >= input.size()) return ParseStatus::kIncomplete;
      int64_t len = 0;
      if (input[cr + 1] != '\n' || !parse_int64(input.substr(pos_ + 1, cr - pos_ - 1), &len) || len < 0 ||
          len > limits_.max_bulk)
        return fail("invalid bulk length");
      if (len > max_bulk) return fail("unauthenticated bulk length");
      bulk_len_ = len;
      pos_ = cr + 2;
      state_ = State::kBulkData;
    }
    size_t len = static_cast<size_t>(bulk_len_);
    size_t need = pos_ + len + 2;
    if (input.size() < need) {
      wanted_ = need - input.size();
      return ParseStatus::kIncomplete;
    }
    if (input[pos_ + len] != '\r' || input[pos_ + len + 1] != '\n') return fail("expected CRLF after bulk data");
    spans_.push_back({pos_, len});
    pos_ = need;
    --remaining_;
    state_ = State::kBulkHeader;
  }
  *consumed = pos_;
  args_.reserve(spans_.size());
  for (const Span& s : spans_) args_.emplace_back(input.data() + s.offset, s.length);
  reset();
  return ParseStatus::kCommand;
}

}  // namespace rdx::resp
