// The registry of single-key replication protocols: one line per protocol.
#include <map>

#include "server/protocol.h"
#include "txn/txn.h"

namespace rdx::server {

namespace {

// Primary-backup through the transaction layer: GetOne/PutOne/DeleteOne (txn/service.h).
class TxnSingleKey final : public Protocol {
 public:
  explicit TxnSingleKey(WorkerContext& ctx) : ctx_(ctx) {}
  void start() override {}

  rpc::Task<KvResult> get(std::string key) override {
    txn::Read r = co_await ctx_.txn().get_one(std::move(key));
    KvResult out;
    out.status = r.status;
    out.version = r.version;
    out.value = std::move(r.value);
    if (r.status == Code::kUnavailable) out.error = "a replica of this key is unavailable";
    co_return out;
  }
  rpc::Task<KvResult> put(std::string key, std::string value) override {
    co_return from(co_await ctx_.txn().put_one(std::move(key), std::move(value)));
  }
  rpc::Task<KvResult> remove(std::string key) override {
    txn::WriteResult w = co_await ctx_.txn().remove_one(std::move(key));
    if (!w.existed) {
      KvResult out;
      out.status = Code::kNotFound;
      co_return out;
    }
    co_return from(w);
  }

 private:
  static KvResult from(const txn::WriteResult& w) {
    KvResult out;
    out.version = w.version;
    switch (w.outcome) {
      case txn::Outcome::kCommitted:
        break;
      case txn::Outcome::kAborted:
        out.status = Code::kBusy;
        out.error = "the key stayed locked by concurrent transactions; retry";
        break;
      case txn::Outcome::kUnavailable:
        out.status = Code::kUnavailable;
        out.error = "a replica of this key is unavailable";
        break;
    }
    return out;
  }
  WorkerContext& ctx_;
};

template <typename P>
ProtocolFactory factory() {
  return [](WorkerContext& ctx) { return std::make_unique<P>(ctx); };
}

const std::map<std::string, ProtocolFactory>& registry() {
  static const std::map<std::string, ProtocolFactory> r = {
      {"primary-backup", factory<TxnSingleKey>()},
  };
  return r;
}
}  // namespace

Result<ProtocolFactory> find_replication_protocol(const std::string& name) {
  auto it = registry().find(name);
  if (it != registry().end()) return it->second;
  std::string known;
  for (const auto& [k, v] : registry()) known += (known.empty() ? "" : ", ") + k;
  return error(Code::kUnsupported, "replication protocol '{}' is not implemented by this rdxd (available: {})", name,
               known);
}

}  // namespace rdx::server
