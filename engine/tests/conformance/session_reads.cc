// Sequentially consistent reads, per session and key. See session_reads.h.
#include "session_reads.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace rdx::conformance {

namespace {

struct Written {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  bool deleted = false;
};

}  // namespace

SessionReadReport check_session_reads(const std::vector<txn::TxRecord>& history,
                                      const std::function<uint64_t(const txn::TxRecord&)>& session_of,
                                      const std::function<bool(const txn::TxRecord&)>& is_read) {
  std::map<std::string, std::map<uint64_t, Written>> writes;  // key -> version -> its write
  std::map<uint64_t, std::vector<const txn::TxRecord*>> sessions;
  for (const auto& t : history) {
    if (!t.committed) continue;
    for (const auto& w : t.writes) writes[w.key][w.version] = Written{t.start_ns, t.end_ns, w.deleted};
    sessions[session_of(t)].push_back(&t);
  }
  SessionReadReport out;
  auto wrong = [&](const txn::TxRecord& t, std::string what) {
    if (++out.wrong_count <= 10) out.wrong.push_back(fmt::format("read {:#x}: {}", t.id, what));
  };
  for (auto& [session, ops] : sessions) {
    std::sort(ops.begin(), ops.end(), [](auto* a, auto* b) { return a->start_ns < b->start_ns; });
    std::map<std::string, uint64_t> floor;  // per key: the newest version this session wrote, read or saw
    for (const txn::TxRecord* t : ops) {
      if (!is_read(*t)) {
        for (const auto& r : t->reads) floor[r.key] = std::max(floor[r.key], r.version);
        for (const auto& w : t->writes) floor[w.key] = std::max(floor[w.key], w.version);
        continue;
      }
      for (const auto& r : t->reads) {
        ++out.reads;
        uint64_t& f = floor[r.key];
        const auto& ws = writes[r.key];
        // The newest version whose write completed before this read began: anything older is a stale read.
        uint64_t newest_done = 0;
        for (const auto& [v, w] : ws)
          if (w.end_ns < t->start_ns) newest_done = std::max(newest_done, v);
        if (r.version != 0) {
          auto it = ws.find(r.version);
          if (it == ws.end() || it->second.deleted) {
            wrong(*t, fmt::format("{} v{:#x}: no write created it", r.key, r.version));
          } else if (it->second.start_ns > t->end_ns) {
            wrong(*t, fmt::format("{} v{:#x}: its write began after the read returned", r.key, r.version));
          } else if (r.version < f) {
            wrong(*t, fmt::format("{} v{:#x}: older than v{:#x}, which its session already wrote or read", r.key,
                                  r.version, f));
          } else {
            if (r.version < newest_done) ++out.stale;
            f = r.version;
          }
          continue;
        }
        if (f == 0) continue;  // absent: the initial state fits
        auto it = std::find_if(ws.lower_bound(f), ws.end(),
                               [&](const auto& vw) { return vw.second.deleted && vw.second.start_ns <= t->end_ns; });
        if (it == ws.end()) {
          wrong(*t, fmt::format("{} absent: no delete at or after v{:#x}, which its session already wrote or read",
                                r.key, f));
        } else {
          if (it->first < newest_done) ++out.stale;
          f = it->first;
        }
      }
    }
  }
  return out;
}

}  // namespace rdx::conformance
