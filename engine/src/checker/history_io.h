#pragma once
// History files: how rdx-bench hands recorded transactions (txn::TxRecord) to the checker (rdx-check).
//
// Format "rdx-history v1": JSON lines (one JSON object per line, '\n'-terminated).
//   line 1, the header:  {"rdx_history":1}
//   every other line, one transaction:
//     {"id":17,"type":"SendPayment","start":1700000000000000000,"end":1700000000000250000,"committed":true,
//      "reads":[["sb:c:12",4],["sb:c:40",0]],"writes":[["sb:c:12",5],["tp:cf:9:2:8",7,true]]}
//   id         unsigned integer, unique in the file (aborted transactions included)
//   type       string (optional, default "")
//   start,end  integers, nanoseconds (CLOCK_REALTIME), start <= end
//   committed  boolean
//   unknown    optional boolean (default false; only with "committed":false): the coordinator could not learn the
//              outcome; its writes carry the versions they would have created
//   reads      optional array of [key, version]: the version seen; 0 = the key was absent
//   writes     optional array of [key, version] or [key, version, true]: the version created; true marks a delete.
//              Committed (and unknown) writes must have version >= 1; aborted transactions may carry 0 (nothing was
//              created).
// Keys and types are byte strings: each byte is one code point U+0000..U+00FF (the writer escapes bytes outside
// printable ASCII as \u00XX; the reader rejects code points above U+00FF). Empty lines are ignored. Unknown fields
// are an error (a typo must not silently drop data).
#include <cstdint>
#include <istream>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "txn/history.h"

namespace rdx::checker {

inline constexpr int kHistoryFormatVersion = 1;

// Appends records to a stream: the header on construction, then one line per write(). Not thread-safe: give each
// thread its own buffer of records, or serialize calls.
class HistoryWriter {
 public:
  explicit HistoryWriter(std::ostream& out);
  void write(const txn::TxRecord& record);
  // False once the stream has failed (disk full, closed pipe).
  bool ok() const { return out_.good(); }

 private:
  std::ostream& out_;
  std::string line_;
};

// Encodes one record as its JSON line (without the trailing newline).
void append_record_json(const txn::TxRecord& record, std::string& out);

// Writes a whole history file (header + records); errors name the path.
Status write_history_file(const std::string& path, std::span<const txn::TxRecord> records);

// Reads a history; `source` names the input in errors ("<path>:<line>: <what is wrong>").
Result<std::vector<txn::TxRecord>> read_history(std::istream& in, const std::string& source);
Result<std::vector<txn::TxRecord>> read_history_file(const std::string& path);

}  // namespace rdx::checker
