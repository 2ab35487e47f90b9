#pragma once
// Internal: a strict parser for the lines of an rdx history file (see history_io.h). Hand-written for speed (a
// million-record history parses in about a second, several times faster than a general JSON DOM) and for errors that
// say what was expected where. Errors are "<what> at column <n>" strings; the caller adds file and line.
#include <string>
#include <string_view>

#include "txn/history.h"

namespace rdx::checker::detail {

// Parses the header line; on success sets `version` (other header fields must have string or integer values and
// are ignored, so writers may annotate the file, e.g. {"rdx_history":1,"workload":"smallbank"}).
bool parse_header_line(std::string_view line, uint64_t& version, std::string& error);

// Parses one transaction line into `r` (which must be default-initialized).
bool parse_record_line(std::string_view line, txn::TxRecord& r, std::string& error);

}  // namespace rdx::checker::detail
