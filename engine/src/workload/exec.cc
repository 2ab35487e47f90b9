#include "workload/exec.h"

#include <fmt/format.h>

namespace rdx::workload {

const char* tx_status_name(TxStatus s) {
  switch (s) {
    case TxStatus::kCommitted:
      return "committed";
    case TxStatus::kAborted:
      return "aborted";
    case TxStatus::kUnavailable:
      return "unavailable";
    case TxStatus::kRolledBack:
      return "rolled_back";
    case TxStatus::kDataError:
      return "data_error";
  }
  return "unknown";
}

rpc::Task<std::vector<txn::Read>> read_all(txn::Transaction& tx, std::vector<std::string> keys, bool parallel) {
  std::vector<txn::Read> out;
  if (parallel && keys.size() > 1) {
    std::vector<rpc::Task<txn::Read>> gets;
    gets.reserve(keys.size());
    for (auto& k : keys) gets.push_back(tx.get(std::move(k)));
    out = co_await rpc::when_all(std::move(gets));
  } else {
    out.reserve(keys.size());
    for (auto& k : keys) {
      txn::Read r = co_await tx.get(std::move(k));
      out.push_back(std::move(r));
    }
  }
  co_return out;
}

TxStatus failed_read_status(const txn::Read& r) {
  return r.status == Code::kUnavailable || r.status == Code::kTimeout ? TxStatus::kUnavailable : TxStatus::kAborted;
}

TxStatus status_of(txn::Outcome o) {
  switch (o) {
    case txn::Outcome::kCommitted:
      return TxStatus::kCommitted;
    case txn::Outcome::kAborted:
      return TxStatus::kAborted;
    case txn::Outcome::kUnavailable:
      return TxStatus::kUnavailable;
  }
  return TxStatus::kAborted;
}

rpc::Task<TxStatus> commit(txn::Transaction& tx) {
  txn::Outcome o = co_await tx.commit();
  co_return status_of(o);
}

rpc::Task<TxStatus> give_up(txn::Transaction& tx, TxStatus why, std::string& error) {
  if (why != TxStatus::kDataError) {
    tx.abort();
    co_return why;
  }
  TxStatus s = co_await commit(tx);
  if (s == TxStatus::kCommitted) co_return TxStatus::kDataError;
  error.clear();
  co_return s;
}

std::string describe_value(std::string_view v) {
  std::string out = "\"";
  for (size_t i = 0; i < v.size() && i < 32; ++i) {
    auto c = static_cast<unsigned char>(v[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  out += v.size() > 32 ? fmt::format("\"... ({} bytes)", v.size()) : "\"";
  return out;
}

void random_value(Rng& rng, size_t size, std::string& out) {
  out.resize(size);
  uint64_t bits = 0;
  for (size_t i = 0; i < size; ++i) {
    if (i % 8 == 0) bits = rng();
    out[i] = static_cast<char>('a' + (bits & 0xff) % 26);
    bits >>= 8;
  }
}

}  // namespace rdx::workload
