#include "cluster/local_reads.h"

#include "cluster/lockword.h"
#include "cluster/worker_context.h"
#include "rpc/codec.h"

namespace rdx::cluster {

using namespace lockword;

struct LocalReads::Pending {
  std::string key;
  ReadMode mode = ReadMode::kLatest;
  std::string value;
  std::coroutine_handle<> waiter;  // a local coroutine...
  Read* out = nullptr;
  rpc::ReplyTo reply;  // ...or a remote requester
  bool remote = false;
};

LocalReads::LocalReads(rpc::Rpc& rpc, rpc::Scheduler& sched, store::HashTable& table, store::Session& session)
    : rpc_(rpc), sched_(sched), table_(table), session_(session) {}

LocalReads::~LocalReads() = default;

Read LocalReads::interpret(store::OpStatus s, std::string&& value, uint64_t version, uint64_t lock, ReadMode mode) {
  Read r;
  if (s == store::OpStatus::kNotFound || (s == store::OpStatus::kOk && absent(lock) && readable(lock))) {
    r.status = Code::kNotFound;
    return r;
  }
  if (s != store::OpStatus::kOk || retired(lock)) {
    r.status = Code::kBusy;  // replaced under us: read again
    return r;
  }
  if (mode == ReadMode::kCommitted && !readable(lock)) {
    r.status = Code::kBusy;
    return r;
  }
  if (absent(lock)) {  // a held placeholder: logically absent for readers of the latest state
    r.status = Code::kNotFound;
    return r;
  }
  r.value = std::move(value);
  r.version = version;
  return r;
}

Read LocalReads::read_now(std::string_view key, ReadMode mode) {
  for (;;) {
    std::string value;
    uint64_t version = 0, lock = 0;
    store::OpStatus s = table_.get(session_, key, &value, &version, &lock);
    Read r = interpret(s, std::move(value), version, lock, mode);
    done_by_ = std::chrono::steady_clock::now();
    // kLatest reads again when the record was replaced under it; kCommitted reports kBusy to its caller.
    if (r.status != Code::kBusy || mode == ReadMode::kCommitted) return r;
  }
}

LocalReads::Awaiter LocalReads::read(std::string key, ReadMode mode) { return Awaiter(this, std::move(key), mode); }

bool LocalReads::Awaiter::await_ready() {
  if (reads_->batching_) return false;
  result_ = reads_->read_now(key_, mode_);
  return true;
}

void LocalReads::Awaiter::await_suspend(std::coroutine_handle<> h) {
  auto p = std::make_unique<Pending>();
  p->key = std::move(key_);
  p->mode = mode_;
  p->waiter = h;
  p->out = &result_;
  reads_->batch_.push_back(std::move(p));
}

void LocalReads::read_for(const rpc::ReplyTo& to, std::string key, ReadMode mode) {
  if (!batching_) return respond_read(rpc_, to, read_now(key, mode));
  auto p = std::make_unique<Pending>();
  p->key = std::move(key);
  p->mode = mode;
  p->reply = to;
  p->remote = true;
  batch_.push_back(std::move(p));
}

size_t LocalReads::run_batch() {
  if (batch_.empty()) return 0;
  std::vector<std::unique_ptr<Pending>> batch;
  batch.swap(batch_);
  std::vector<store::Request> reqs(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    reqs[i].op = store::Op::kGet;
    reqs[i].key = batch[i]->key;
    reqs[i].value_out = &batch[i]->value;
  }
  table_.execute(session_, reqs);  // prefetches every bucket, then every record, then executes
  done_by_ = std::chrono::steady_clock::now();
  ++stats_.batches;
  stats_.batched_reads += batch.size();
  for (size_t i = 0; i < batch.size(); ++i) {
    Pending& p = *batch[i];
    Read r = interpret(reqs[i].status, std::move(p.value), reqs[i].version_out, reqs[i].lock_word_out, p.mode);
    if (r.status == Code::kBusy && p.mode == ReadMode::kLatest) r = read_now(p.key, p.mode);  // replaced mid-batch
    if (p.remote) {
      respond_read(rpc_, p.reply, r);
    } else {
      *p.out = std::move(r);
      sched_.ready(p.waiter);
    }
  }
  return batch.size();
}

void respond_read(rpc::Rpc& rpc, const rpc::ReplyTo& to, const Read& r) {
  if (r.status != Code::kOk) return rpc.respond(to, r.status);
  rpc::Writer w;
  w.put(r.version).bytes(r.value);
  rpc.respond(to, Code::kOk, w.span());
}

Read decode_read_reply(const rpc::Response& resp) {
  Read r;
  r.status = resp.status;
  if (resp.status != Code::kOk) return r;
  rpc::Reader rd(resp.payload);
  r.version = rd.get<uint64_t>();
  r.value = std::string(rd.bytes());
  if (!rd.done()) r = Read{Code::kInternal, {}, 0};
  return r;
}

rpc::Task<void> answer_read_as_primary(WorkerContext& ctx, rpc::ReplyTo to, std::string key, ReadMode mode) {
  Read r = co_await ctx.local_reads().read(std::move(key), mode);
  if (!serves_as_primary(ctx, ctx.local_reads().reads_done_by())) r = Read{Code::kUnavailable, {}, 0};
  respond_read(ctx.rpc(), to, r);
}

}  // namespace rdx::cluster
