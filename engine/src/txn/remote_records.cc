#include "txn/remote_records.h"

#include "cluster/kv_api.h"
#include "cluster/lockword.h"
#include "rpc/codec.h"
#include "store/record.h"

namespace rdx::txn {

using rpc::Task;

namespace {
// A slot of the endpoint's scratch memory, returned when the read that holds it ends (across suspensions).
class SlotLease {
 public:
  SlotLease(std::vector<uint32_t>& free, uint32_t slot) : free_(free), slot_(slot) {}
  SlotLease(const SlotLease&) = delete;
  SlotLease& operator=(const SlotLease&) = delete;
  ~SlotLease() { free_.push_back(slot_); }
  uint32_t offset() const { return slot_; }

 private:
  std::vector<uint32_t>& free_;
  uint32_t slot_;
};

bool readable_one_sided(uint64_t offset, uint32_t length) {
  return length >= store::record::kOverheadBytes && length <= RemoteRecords::kSlotBytes && length % 8 == 0 &&
         offset % 8 == 0;
}
}  // namespace

Status RemoteRecords::start() {
  const size_t slots = ctx_.rpc().endpoint().scratch().size() / kSlotBytes;
  for (size_t i = slots; i-- > 0;) free_slots_.push_back(static_cast<uint32_t>(i * kSlotBytes));
  return ctx_.rpc().on(kLocate, [this](const rpc::Incoming& in) { serve_locate(in); });
}

// At the key's primary: the latest value, as a read at the primary answers it, and where the record lives.
void RemoteRecords::serve_locate(const rpc::Incoming& in) {
  rpc::Reader r(in.payload);
  std::string key(r.bytes(cluster::kMaxKeyBytes));
  if (!r.done() || key.empty()) return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  // Only a key of this node's shard (a sender that maps keys to shards differently would otherwise learn "absent").
  if (!ctx_.membership().in_sync() || !cluster::is_replica_of(ctx_.topology(), ctx_.self(), key))
    return ctx_.rpc().respond(in.reply_to(), Code::kUnavailable);
  rpc::spawn([](cluster::WorkerContext& ctx, rpc::ReplyTo to, std::string k) -> Task<void> {
    Read rd = co_await ctx.local_reads().read(k, cluster::ReadMode::kLatest);
    if (!cluster::serves_as_primary(ctx, ctx.local_reads().reads_done_by())) rd = Read{Code::kUnavailable, {}, 0};
    if (rd.status != Code::kOk) {
      ctx.rpc().respond(to, rd.status);
      co_return;
    }
    // Looked up after the read: a record that moved in between is a newer one, which READs then find.
    const store::RecordRef ref = ctx.table().find(ctx.session(), k);
    rpc::Writer w;
    w.put(rd.version).put(ref.valid() ? ref.arena_offset() : uint64_t{0}).put(ref.valid() ? ref.length() : 0u);
    w.bytes(rd.value);
    ctx.rpc().respond(to, Code::kOk, w.span());
  }(ctx_, in.reply_to(), std::move(key)));
}

Task<Read> RemoteRecords::read(const std::string& key, uint16_t primary) {
  if (auto it = places_.find(key); it != places_.end() && it->second.node == primary) {
    const Place place = it->second;
    if (std::optional<Read> r = co_await read_at(key, place)) co_return std::move(*r);
  }
  co_return co_await locate(key, primary);
}

Task<Read> RemoteRecords::locate(const std::string& key, uint16_t primary) {
  places_.erase(key);
  auto conn = ctx_.peer(primary);
  if (!conn) co_return Read{Code::kUnavailable, {}, 0};
  rpc::Writer w;
  w.bytes(key);
  rpc::Response resp = co_await ctx_.rpc().call(*conn, kLocate, w.span());
  if (resp.status != Code::kOk) co_return Read{resp.status, {}, 0};
  rpc::Reader rd(resp.payload);
  Read out;
  out.version = rd.get<uint64_t>();
  const auto offset = rd.get<uint64_t>();
  const auto length = rd.get<uint32_t>();
  out.value = std::string(rd.bytes());
  if (!rd.done()) co_return Read{Code::kInternal, {}, 0};
  if (readable_one_sided(offset, length)) {
    if (places_.size() >= kMaxCached) places_.clear();
    places_[key] = Place{primary, offset, length};
  }
  co_return out;
}

std::optional<uint32_t> RemoteRecords::take_slot() {
  if (free_slots_.empty()) return std::nullopt;
  const uint32_t s = free_slots_.back();
  free_slots_.pop_back();
  return s;
}

Task<std::optional<Read>> RemoteRecords::read_at(const std::string& key, const Place& place) {
  auto conn = ctx_.peer(place.node);
  if (!conn) co_return std::nullopt;
  for (int attempt = 0; attempt < kTornRetries; ++attempt) {
    const std::optional<uint32_t> slot = take_slot();
    if (!slot) co_return std::nullopt;  // every slot in use: this read goes over RPC
    SlotLease lease(free_slots_, *slot);
    std::byte* image = ctx_.rpc().endpoint().scratch().data() + lease.offset();
    const rpc::OneSidedResult done = co_await ctx_.rpc().read(
        *conn, transport::RemotePtr{place.node, cluster::kStoreRegion, place.offset}, image, place.length);
    if (done.status != Code::kOk) co_return std::nullopt;
    // The lock word, copied first (cluster/lockword.h). A retired record left the index: its image may hold an
    // old value for good.
    const uint64_t lock = store::record::word_at(image, store::record::kLockOffset).load(std::memory_order_relaxed);
    if (cluster::lockword::retired(lock)) co_return std::nullopt;
    Read out;
    const Status s = store::HashTable::decode_remote_record({image, place.length}, key, &out.value, &out.version);
    // A placeholder (an insert's lock, a pending delete) is an absent key, as a read at the primary answers it.
    if (s.is_ok()) ++counters_.onesided_reads;
    if (s.is_ok() && cluster::lockword::absent(lock)) co_return Read{Code::kNotFound, {}, 0};
    if (s.is_ok()) co_return out;
    if (s.code() != Code::kBusy) co_return std::nullopt;  // deleted, another key, not a record: locate again
  }
  co_return std::nullopt;
}

}  // namespace rdx::txn
