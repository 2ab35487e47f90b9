#include "resp/resp_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace rdx::resp {

void ReplyWriter::header(char type, uint64_t n) {
  char buf[24];
  buf[0] = type;
  auto r = std::to_chars(buf + 1, buf + sizeof(buf) - 2, n);
  r.ptr[0] = '\r';
  r.ptr[1] = '\n';
  out_->append(buf, static_cast<size_t>(r.ptr + 2 - buf));
}

void ReplyWriter::simple(std::string_view s) {
  out_->push_back('+');
  out_->append(s);
  out_->append("\r\n", 2);
}

void ReplyWriter::error(std::string_view line) {
  out_->push_back('-');
  size_t start = out_->size();
  out_->append(line);
  for (size_t i = start; i < out_->size(); ++i)
    if ((*out_)[i] == '\r' || (*out_)[i] == '\n') (*out_)[i] = ' ';
  out_->append("\r\n", 2);
}

void ReplyWriter::integer(int64_t v) {
  char buf[24];
  buf[0] = ':';
  auto r = std::to_chars(buf + 1, buf + sizeof(buf) - 2, v);
  r.ptr[0] = '\r';
  r.ptr[1] = '\n';
  out_->append(buf, static_cast<size_t>(r.ptr + 2 - buf));
}

void ReplyWriter::bulk(std::string_view s) {
  header('$', s.size());
  out_->append(s);
  out_->append("\r\n", 2);
}

void ReplyWriter::null() {
  if (protocol_ >= 3) {
    out_->append("_\r\n", 3);
  } else {
    out_->append("$-1\r\n", 5);
  }
}

void ReplyWriter::null_array() {
  if (protocol_ >= 3) {
    out_->append("_\r\n", 3);
  } else {
    out_->append("*-1\r\n", 5);
  }
}

void ReplyWriter::array(size_t n) { header('*', n); }

void ReplyWriter::map(size_t pairs) {
  if (protocol_ >= 3) {
    header('%', pairs);
  } else {
    header('*', 2 * pairs);
  }
}

void ReplyWriter::set(size_t n) { header(protocol_ >= 3 ? '~' : '*', n); }

void ReplyWriter::boolean(bool b) {
  if (protocol_ >= 3) {
    out_->append(b ? "#t\r\n" : "#f\r\n", 4);
  } else {
    integer(b ? 1 : 0);
  }
}

void ReplyWriter::dbl(double d) {
  char buf[64];
  int n;
  if (std::isinf(d)) {
    n = std::snprintf(buf, sizeof(buf), "%s", d > 0 ? "inf" : "-inf");
  } else {
    n = std::snprintf(buf, sizeof(buf), "%.17g", d);
  }
  std::string_view text(buf, static_cast<size_t>(n));
  if (protocol_ >= 3) {
    out_->push_back(',');
    out_->append(text);
    out_->append("\r\n", 2);
  } else {
    bulk(text);
  }
}

void ReplyWriter::verbatim(std::string_view format3, std::string_view text) {
  if (protocol_ < 3) return bulk(text);
  header('=', text.size() + 4);
  out_->append(format3.substr(0, 3));
  out_->push_back(':');
  out_->append(text);
  out_->append("\r\n", 2);
}

}  // namespace rdx::resp
