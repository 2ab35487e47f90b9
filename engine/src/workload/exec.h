#pragma once
// Shared pieces of the workloads' transactions: reading several keys of one transaction, mapping the transaction
// layer's results onto TxStatus, committing, and describing bad values in errors.
#include <string>
#include <string_view>
#include <vector>

#include "rpc/task.h"
#include "txn/txn.h"
#include "workload/workload.h"

namespace rdx::workload {

// Reads `keys` in `tx`: all at once (one get per key in flight, so the transaction layer can batch them) or one
// after the other. Results are in key order.
rpc::Task<std::vector<txn::Read>> read_all(txn::Transaction& tx, std::vector<std::string> keys, bool parallel);

// kOk / kNotFound are answers; anything else means the read failed and the attempt must stop with this status.
inline bool read_failed(const txn::Read& r) { return r.status != Code::kOk && r.status != Code::kNotFound; }
TxStatus failed_read_status(const txn::Read& r);

// Commits and maps the outcome.
rpc::Task<TxStatus> commit(txn::Transaction& tx);

// Ends an attempt that cannot go on, before any write was buffered. Optimistic reads are only validated at commit,
// so a missing or corrupt row seen during execution may be a state that never existed (a concurrent insert not yet
// applied, say): kDataError is therefore confirmed by committing the write-free transaction, which validates its
// reads. Committed: the data really is bad (kDataError, `error` kept). Otherwise the commit's status is returned and
// `error` cleared. Any other `why` aborts the transaction and is returned as is.
rpc::Task<TxStatus> give_up(txn::Transaction& tx, TxStatus why, std::string& error);
TxStatus status_of(txn::Outcome o);

// Printable, bounded rendering of a stored value for error messages.
std::string describe_value(std::string_view v);

// Random printable value of `size` bytes (letters), for workloads whose values are opaque.
void random_value(Rng& rng, size_t size, std::string& out);

// Deterministic per-unit randomness for initial data: the same (seed, unit) always gives the same stream.
inline Rng unit_rng(uint64_t seed, uint64_t unit) { return Rng(seed * 0x9E3779B97F4A7C15ull ^ (unit + 1)); }

}  // namespace rdx::workload
