#include "checker/history_parse.h"

#include <fmt/format.h>

#include <limits>

namespace rdx::checker::detail {
namespace {

// Names a value in error messages ("id", "reads[3] key"); formatted only when an error is reported.
struct Field {
  Field(const char* n) : name(n) {}  // NOLINT(google-explicit-constructor): plain names convert
  explicit Field(std::string_view n) : name(n) {}
  Field(std::string_view n, size_t i, std::string_view p) : name(n), index(i), part(p) {}
  std::string str() const { return index == kNoIndex ? std::string(name) : fmt::format("{}[{}]{}", name, index, part); }
  static constexpr size_t kNoIndex = static_cast<size_t>(-1);
  std::string_view name;
  size_t index = kNoIndex;
  std::string_view part;
};

class Cursor {
 public:
  explicit Cursor(std::string_view s, std::string& error) : s_(s), error_(error) {}

  bool fail(std::string_view what) {
    if (error_.empty()) error_ = fmt::format("{} at column {}", what, pos_ + 1);
    return false;
  }
  bool syntax(std::string_view expected) { return fail(fmt::format("malformed JSON: expected {}", expected)); }

  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\r' || s_[pos_] == '\n')) ++pos_;
  }
  char peek() {
    skip_ws();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }
  bool consume(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  bool expect(char c, std::string_view what) { return consume(c) || syntax(what); }
  bool at_end() { return peek() == '\0' && pos_ == s_.size(); }

  // {"key": value, ...}: calls member(key) with the cursor on the value.
  template <typename F>
  bool object(F&& member) {
    if (!expect('{', "'{'")) return false;
    if (consume('}')) return true;
    std::string key;
    do {
      if (peek() != '"') return syntax("a field name");
      if (!string(key, "field name") || !expect(':', "':'") || !member(key)) return false;
    } while (consume(','));
    return expect('}', "',' or '}'");
  }

  // [e, ...]: calls element(index).
  template <typename F>
  bool array(F&& element) {
    if (!expect('[', "'['")) return false;
    if (consume(']')) return true;
    size_t i = 0;
    do {
      if (!element(i++)) return false;
    } while (consume(','));
    return expect(']', "',' or ']'");
  }

  // A JSON string whose code points are all <= U+00FF, as one byte per code point.
  bool string(std::string& out, const Field& field) {
    out.clear();
    if (peek() != '"') return fail(fmt::format("{} must be a string", field.str()));
    ++pos_;
    while (true) {
      size_t plain = pos_;
      while (plain < s_.size()) {
        auto c = static_cast<unsigned char>(s_[plain]);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
        ++plain;
      }
      out.append(s_.data() + pos_, plain - pos_);
      pos_ = plain;
      if (pos_ >= s_.size()) return syntax("'\"' (unterminated string)");
      auto c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return fail("malformed JSON: control character in a string");
      if (c >= 0x80) {  // UTF-8: only U+0080..U+00FF (lead byte C2 or C3) fits in one byte
        auto c2 = pos_ + 1 < s_.size() ? static_cast<unsigned char>(s_[pos_ + 1]) : 0;
        if ((c != 0xc2 && c != 0xc3) || (c2 & 0xc0) != 0x80) return too_wide(field);
        out += static_cast<char>(((c & 0x03) << 6) | (c2 & 0x3f));
        pos_ += 2;
        continue;
      }
      if (!escape(out, field)) return false;
    }
  }

  bool uint(uint64_t& out, const Field& field) {
    if (peek() < '0' || peek() > '9') return fail(fmt::format("{} must be a non-negative integer", field.str()));
    return digits(out, field);
  }

  bool int64(int64_t& out, const Field& field) {
    bool negative = consume('-');
    uint64_t magnitude = 0;
    if (peek() < '0' || peek() > '9' || !digits(magnitude, field)) {
      return fail(fmt::format("{} must be an integer (nanoseconds)", field.str()));
    }
    constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    if (magnitude > kMax + (negative ? 1 : 0)) return fail(fmt::format("{} is out of range", field.str()));
    out = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
    return true;
  }

  bool boolean(bool& out, const Field& field) {
    skip_ws();
    if (s_.substr(pos_, 4) == "true") {
      out = true;
      pos_ += 4;
    } else if (s_.substr(pos_, 5) == "false") {
      out = false;
      pos_ += 5;
    } else {
      return fail(fmt::format("{} must be a boolean", field.str()));
    }
    return true;
  }

 private:
  bool digits(uint64_t& out, const Field& field) {
    out = 0;
    size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      auto d = static_cast<uint64_t>(s_[pos_] - '0');
      if (out > (std::numeric_limits<uint64_t>::max() - d) / 10) {
        return fail(fmt::format("{} is out of range", field.str()));
      }
      out = out * 10 + d;
      ++pos_;
    }
    if (pos_ - start > 1 && s_[start] == '0') return fail("malformed JSON: leading zero");
    if (pos_ < s_.size() && (s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E')) {
      return fail(fmt::format("{} must be an integer", field.str()));
    }
    return true;
  }

  bool too_wide(const Field& field) {
    return fail(fmt::format("{} has a code point above U+00FF (strings hold one byte per code point)", field.str()));
  }

  bool escape(std::string& out, const Field& field) {
    if (pos_ + 1 >= s_.size()) return syntax("an escape sequence");
    char e = s_[pos_ + 1];
    pos_ += 2;
    switch (e) {
      case '"':
        out += '"';
        return true;
      case '\\':
        out += '\\';
        return true;
      case '/':
        out += '/';
        return true;
      case 'b':
        out += '\b';
        return true;
      case 'f':
        out += '\f';
        return true;
      case 'n':
        out += '\n';
        return true;
      case 'r':
        out += '\r';
        return true;
      case 't':
        out += '\t';
        return true;
      case 'u':
        break;
      default:
        pos_ -= 2;
        return syntax("a valid escape sequence");
    }
    unsigned cp = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      char h = pos_ < s_.size() ? s_[pos_] : '\0';
      unsigned v = h >= '0' && h <= '9'   ? unsigned(h - '0')
                   : h >= 'a' && h <= 'f' ? unsigned(h - 'a' + 10)
                   : h >= 'A' && h <= 'F' ? unsigned(h - 'A' + 10)
                                          : 16u;
      if (v == 16) return syntax("4 hex digits after \\u");
      cp = cp * 16 + v;
    }
    if (cp > 0xff) return too_wide(field);
    out += static_cast<char>(cp);
    return true;
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string& error_;
};

bool parse_reads(Cursor& c, std::vector<txn::ReadRecord>& out) {
  if (c.peek() != '[') return c.fail("reads must be an array of [key, version]");
  return c.array([&](size_t i) {
    auto& r = out.emplace_back();
    auto shape = [&] { return c.fail(fmt::format("reads[{}] must be [key, version]", i)); };
    if (!c.consume('[')) return shape();
    if (!c.string(r.key, Field("reads", i, " key"))) return false;
    if (!c.consume(',')) return shape();
    if (!c.uint(r.version, Field("reads", i, " version"))) return false;
    return c.consume(']') || shape();
  });
}

bool parse_writes(Cursor& c, std::vector<txn::WriteRecord>& out) {
  if (c.peek() != '[') return c.fail("writes must be an array of [key, version] or [key, version, true]");
  return c.array([&](size_t i) {
    auto& w = out.emplace_back();
    auto shape = [&] { return c.fail(fmt::format("writes[{}] must be [key, version] or [key, version, deleted]", i)); };
    if (!c.consume('[')) return shape();
    if (!c.string(w.key, Field("writes", i, " key"))) return false;
    if (!c.consume(',')) return shape();
    if (!c.uint(w.version, Field("writes", i, " version"))) return false;
    if (c.consume(',') && !c.boolean(w.deleted, Field("writes", i, " deleted flag"))) return false;
    return c.consume(']') || shape();
  });
}

}  // namespace

bool parse_header_line(std::string_view line, uint64_t& version, std::string& error) {
  Cursor c(line, error);
  bool found = false;
  std::string ignored;
  bool ok = c.object([&](const std::string& key) {
    if (key == "rdx_history") {
      found = true;
      return c.uint(version, "rdx_history");
    }
    if (c.peek() == '"') return c.string(ignored, Field(key));
    int64_t number;
    return c.int64(number, Field(key));
  });
  if (ok && !c.at_end()) ok = c.syntax("end of line after the object");
  if (ok && !found) ok = c.fail("no \"rdx_history\" field");
  return ok;
}

bool parse_record_line(std::string_view line, txn::TxRecord& r, std::string& error) {
  Cursor c(line, error);
  constexpr unsigned kId = 1, kType = 2, kStart = 4, kEnd = 8, kCommitted = 16, kReads = 32, kWrites = 64,
                     kUnknown = 128;
  unsigned seen = 0;
  if (c.peek() != '{') return c.fail("expected a JSON object (one transaction per line)");
  bool ok = c.object([&](const std::string& key) {
    unsigned bit = key == "id"          ? kId
                   : key == "type"      ? kType
                   : key == "start"     ? kStart
                   : key == "end"       ? kEnd
                   : key == "committed" ? kCommitted
                   : key == "reads"     ? kReads
                   : key == "writes"    ? kWrites
                   : key == "unknown"   ? kUnknown
                                        : 0;
    if (bit == 0) return c.fail(fmt::format("unknown field \"{}\"", key));
    if (seen & bit) return c.fail(fmt::format("duplicate field \"{}\"", key));
    seen |= bit;
    switch (bit) {
      case kId:
        return c.uint(r.id, "id");
      case kType:
        return c.string(r.type, "type");
      case kStart:
        return c.int64(r.start_ns, "start");
      case kEnd:
        return c.int64(r.end_ns, "end");
      case kCommitted:
        return c.boolean(r.committed, "committed");
      case kUnknown:
        return c.boolean(r.unknown, "unknown");
      case kReads:
        return parse_reads(c, r.reads);
      default:
        return parse_writes(c, r.writes);
    }
  });
  if (!ok) return false;
  if (!c.at_end()) return c.syntax("end of line after the object");
  auto invalid = [&](std::string what) {
    error = std::move(what);
    return false;
  };
  if (!(seen & kId)) return invalid("missing field \"id\"");
  if (!(seen & kStart) || !(seen & kEnd)) return invalid("missing field \"start\" or \"end\"");
  if (!(seen & kCommitted)) return invalid("missing field \"committed\"");
  if (r.end_ns < r.start_ns) return invalid(fmt::format("end {} is before start {}", r.end_ns, r.start_ns));
  if (r.committed && r.unknown) return invalid("a transaction is committed or its outcome unknown, not both");
  if (r.committed || r.unknown) {
    for (const auto& w : r.writes) {
      if (w.version == 0) return invalid("a committed write has version 0 (created versions start at 1)");
    }
  }
  return true;
}

}  // namespace rdx::checker::detail
