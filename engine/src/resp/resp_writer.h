#pragma once
// Encodes replies into a connection's output buffer, in RESP2 or RESP3 (chosen per connection by HELLO). RESP3-only
// types degrade the way Redis degrades them for RESP2 clients: null -> $-1 (or *-1 for a null array), map -> flat
// array, set -> array, boolean -> integer, double -> bulk string, verbatim -> bulk string.
#include <cstdint>
#include <string>
#include <string_view>

namespace rdx::resp {

class ReplyWriter {
 public:
  ReplyWriter(std::string* out, int protocol) : out_(out), protocol_(protocol) {}
  int protocol() const { return protocol_; }
  void set_protocol(int p) { protocol_ = p; }
  std::string& buffer() { return *out_; }

  void simple(std::string_view s);  // +s (s must not contain CR or LF)
  // -ERR message: `line` is the full error line without '-', e.g. "ERR syntax error" or "NOAUTH ...". CR and LF
  // are replaced by spaces (an error reply is one line), as Redis does.
  void error(std::string_view line);
  void integer(int64_t v);
  void bulk(std::string_view s);
  void null();        // a missing value (GET of an absent key)
  void null_array();  // EXEC whose WATCH failed
  void array(size_t n);
  void map(size_t pairs);
  void set(size_t n);
  void boolean(bool b);
  void dbl(double d);
  void verbatim(std::string_view format3, std::string_view text);  // format is "txt" or "mkd"
  void ok() { out_->append("+OK\r\n", 5); }
  void queued() { out_->append("+QUEUED\r\n", 9); }

 private:
  void header(char type, uint64_t n);
  std::string* out_;
  int protocol_;
};

}  // namespace rdx::resp
