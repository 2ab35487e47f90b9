#include "checker/history_io.h"

#include <fmt/format.h>

#include <fstream>

#include "checker/history_parse.h"

namespace rdx::checker {
namespace {

// Bytes as a JSON string: printable ASCII as is, everything else as \u00XX (one code point per byte).
void append_bytes_json(std::string_view s, std::string& out) {
  out += '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
    }
  }
  out += '"';
}

}  // namespace

void append_record_json(const txn::TxRecord& r, std::string& out) {
  fmt::format_to(std::back_inserter(out), "{{\"id\":{},\"type\":", r.id);
  append_bytes_json(r.type, out);
  fmt::format_to(std::back_inserter(out), ",\"start\":{},\"end\":{},\"committed\":{}", r.start_ns, r.end_ns,
                 r.committed);
  if (r.unknown) out += ",\"unknown\":true";
  if (!r.reads.empty()) {
    out += ",\"reads\":[";
    for (size_t i = 0; i < r.reads.size(); ++i) {
      if (i) out += ',';
      out += '[';
      append_bytes_json(r.reads[i].key, out);
      fmt::format_to(std::back_inserter(out), ",{}]", r.reads[i].version);
    }
    out += ']';
  }
  if (!r.writes.empty()) {
    out += ",\"writes\":[";
    for (size_t i = 0; i < r.writes.size(); ++i) {
      if (i) out += ',';
      out += '[';
      append_bytes_json(r.writes[i].key, out);
      fmt::format_to(std::back_inserter(out), ",{}{}]", r.writes[i].version, r.writes[i].deleted ? ",true" : "");
    }
    out += ']';
  }
  out += '}';
}

HistoryWriter::HistoryWriter(std::ostream& out) : out_(out) {
  out_ << fmt::format("{{\"rdx_history\":{}}}\n", kHistoryFormatVersion);
}

void HistoryWriter::write(const txn::TxRecord& record) {
  line_.clear();
  append_record_json(record, line_);
  line_ += '\n';
  out_.write(line_.data(), static_cast<std::streamsize>(line_.size()));
}

Status write_history_file(const std::string& path, std::span<const txn::TxRecord> records) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return error(Code::kInvalidArgument, "cannot create history file {}", path);
  HistoryWriter w(out);
  for (const auto& r : records) w.write(r);
  out.flush();
  if (!w.ok()) return error(Code::kInternal, "writing history file {} failed", path);
  return Status::ok();
}

Result<std::vector<txn::TxRecord>> read_history(std::istream& in, const std::string& source) {
  std::vector<txn::TxRecord> records;
  std::string line, what;
  uint64_t line_no = 0;
  bool header_seen = false;
  auto fail = [&](const std::string& msg) { return error(Code::kInvalidArgument, "{}:{}: {}", source, line_no, msg); };
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    what.clear();
    if (!header_seen) {
      uint64_t version = 0;
      if (!detail::parse_header_line(line, version, what)) {
        return fail("not an rdx history file (the first line must be {\"rdx_history\":1}): " + what);
      }
      if (version != kHistoryFormatVersion) {
        return fail(fmt::format("unsupported history format version {} (this checker reads {})", version,
                                kHistoryFormatVersion));
      }
      header_seen = true;
      continue;
    }
    txn::TxRecord& r = records.emplace_back();
    if (!detail::parse_record_line(line, r, what)) return fail(what);
  }
  if (in.bad()) return error(Code::kInvalidArgument, "{}: read error after line {}", source, line_no);
  if (!header_seen) return error(Code::kInvalidArgument, "{}: empty file (no rdx_history header)", source);
  return records;
}

Result<std::vector<txn::TxRecord>> read_history_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return error(Code::kInvalidArgument, "cannot open history file {}", path);
  return read_history(in, path);
}

}  // namespace rdx::checker
