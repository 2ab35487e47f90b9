// Primary-backup's replica log (cluster/replica_log.h): how writes reach the backups, and what a backup does with
// them. Used by the single-key writes of this protocol and by transaction protocols alike.
//
// At a backup (lock word bits: cluster/lockword.h):
//   kApply    the write is applied at once with its version and marked not readable; resolve(committed) clears the
//             mark if the record still holds that version (a later write stays hidden until its own notice).
//   kHold     the write is kept by transaction id and the key's hold count goes up (the key is not readable while
//             it is above 0); resolve applies it with its version (commit) or drops it (abort). kApply writes of a
//             key never abort (the decision precedes them), so a notice may show one while holds still wait.
// Deletes become absent records first (the key must not look missing at a backup before the delete committed) and
// go when final; while this node joins, they leave tombstones (recovery.h).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "cluster/lockword.h"
#include "cluster/record_locks.h"
#include "replication/primary_backup/primary_backup.h"

namespace rdx::replication::primary_backup {

using namespace cluster::lockword;
using cluster::LogMode;
using cluster::LogWrite;
using cluster::MemberState;
using rpc::Task;

namespace {
constexpr uint64_t kPlaceholderVersion = 1;
}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// The writer's side.

cluster::ReplicaLog::Scope PbWorker::begin() {
  // The replica sets must be at least as new as the generation recorded: read the generation first.
  const uint64_t gen = ctx_.membership().generation();
  refresh_membership();
  active_gens_.insert(gen);
  ctx_.membership().publish_oldest_write(ctx_.worker_index(), *active_gens_.begin());
  return Scope(this, gen, views_);
}

void PbWorker::end(uint64_t gen) {
  active_gens_.erase(active_gens_.find(gen));
  ctx_.membership().publish_oldest_write(ctx_.worker_index(),
                                         active_gens_.empty() ? cluster::Membership::kNoWrite : *active_gens_.begin());
}

void PbWorker::refresh_membership() {
  if (ctx_.membership().generation() != seen_generation_) on_membership_change();
}

// Each shard's primary in the views the transaction wrote in, if its kApply writes are of two shards or more (none
// else): the backups keep such writes undecided until their notice, and hear of the transaction (heard.h).
std::vector<uint16_t> PbWorker::participants_of(const Scope& scope, const std::vector<LogWrite>& writes,
                                                LogMode mode) const {
  std::vector<uint16_t> participants;
  if (mode != LogMode::kApply || writes.size() < 2) return participants;  // (every single-key write's resolve)
  const Scope::Views& wrote_in = scope.views() ? scope.views() : views_;
  for (const LogWrite& w : writes)
    participants.push_back(cluster::ShardView::unpack((*wrote_in)[ctx_.topology().shard_of_key(w.key)]).primary);
  std::sort(participants.begin(), participants.end());
  participants.erase(std::unique(participants.begin(), participants.end()), participants.end());
  if (participants.size() < 2) participants.clear();
  return participants;
}

std::map<uint16_t, LogBatch> PbWorker::by_backup(uint64_t txid, const std::vector<LogWrite>& writes, LogMode mode,
                                                 const Scope* since) const {
  std::map<uint16_t, LogBatch> out;
  const cluster::Topology& t = ctx_.topology();
  const auto add = [&](uint16_t node, uint32_t shard, const LogWrite& w) {
    LogBatch& b = out[node];
    b.txid = txid;
    b.view = (*views_)[shard];
    b.mode = mode;
    b.writes.push_back(w);
  };
  for (const LogWrite& w : writes) {
    const uint32_t shard = t.shard_of_key(w.key);
    for (uint16_t node : backups_[shard]) add(node, shard, w);
    // A shard whose primary changed since the write replicated: the new primary (this node, maybe) was one of its
    // backups then, and holds the write.
    if (since != nullptr && since->views() && (*since->views())[shard] != (*views_)[shard])
      add(cluster::ShardView::unpack((*views_)[shard]).primary, shard, w);
  }
  return out;
}

// A backup takes a replicated write only from a sender that sees its shard in the same view (a sender in an older
// one may be a deposed primary, or a coordinator whose locks were taken there), unless it voted in a newer view
// since (the candidate it voted for must have every write of the old view that commits), and only from a sender
// it has not excluded. The refusal fails the sender's replicate, so the write does not commit.
void PbWorker::serve_replicate(const rpc::Incoming& in) {
  auto b = LogBatch::decode(in.payload);
  if (!b) return;  // not acknowledged: the sender excludes this node, which then recovers
  const auto shard = static_cast<uint32_t>(ctx_.topology().nodes[ctx_.self()].shard);
  if (b->view != ctx_.membership().view(shard).packed() ||
      ctx_.membership().vote_fence(shard) > cluster::ShardView::unpack(b->view).view ||
      (in.peer_node < ctx_.topology().nodes.size() &&
       ctx_.membership().member(static_cast<uint16_t>(in.peer_node)) == cluster::MemberState::kFailed))
    return ctx_.rpc().refuse(in.reply_to(), Code::kAborted);
  if (b->mode == LogMode::kApply) {
    apply_hidden(*b);
  } else {
    hold(*b);
  }
  ctx_.rpc().ack(in.reply_to());
}

// One batch to one backup: applied directly when it is this node; otherwise an ackable message whose failure
// excludes the backup (it may have missed the write). Returns whether the backup has it or no longer counts
// (excluded); false when it refused (another view) or its exclusion was not agreed.
Task<bool> PbWorker::send_to(uint16_t node, uint16_t msg, LogBatch batch) {
  if (node == ctx_.self()) {
    if (msg == kReplicate) {
      if (batch.mode == LogMode::kApply) {
        apply_hidden(batch);
      } else {
        hold(batch);
      }
    } else if (batch.mode == LogMode::kApply) {
      make_readable(batch);
    } else {
      resolve_held(batch);
    }
    co_return true;
  }
  auto conn = co_await connection_to(node);
  if (!conn) co_return co_await exclude(node, "not connected");
  std::string payload = batch.encode();
  if (msg == kResolve && batch.mode == LogMode::kApply) {  // readable notices are one-way
    co_return ctx_.rpc().send_oneway(*conn, msgs_.at(msg), rpc::as_bytes_of(payload)).is_ok();
  }
  rpc::Response ack = co_await ctx_.rpc().call_ackable(*conn, msgs_.at(msg), rpc::as_bytes_of(payload));
  if (ack.status == Code::kOk) co_return true;
  if (ack.status == Code::kAborted) {  // refused: it sees its shard in another view (serve_replicate)
    spdlog::info("primary-backup: {} refused a write (views differ)", ctx_.topology().nodes[node].name);
    co_return false;
  }
  co_return co_await exclude(node, fmt::format("did not acknowledge a write: {}", code_name(ack.status)));
}

Task<Code> PbWorker::replicate(const Scope& scope, uint64_t txid, const std::vector<LogWrite>& writes, LogMode mode) {
  return replicate_as(scope, txid, writes, mode, false);
}

Task<Code> PbWorker::replicate_recovered(const Scope& scope, uint64_t txid, const std::vector<LogWrite>& writes) {
  return replicate_as(scope, txid, writes, LogMode::kApply, true);
}

Task<Code> PbWorker::replicate_as(const Scope& scope, uint64_t txid, const std::vector<LogWrite>& writes, LogMode mode,
                                  bool recovered) {
  // A write that began under one primary of a shard is not replicated under another (its locks or its primary's
  // checks were of the old view): it fails before anything is sent.
  refresh_membership();
  const cluster::Topology& t = ctx_.topology();
  if (scope.views())
    for (const LogWrite& w : writes) {
      const uint32_t shard = t.shard_of_key(w.key);
      if ((*scope.views())[shard] != (*views_)[shard]) co_return Code::kUnavailable;
    }
  // A transaction's writes across shards stay undecided at the backups until their notice (undecided.h).
  const std::vector<uint16_t> participants = participants_of(scope, writes, mode);
  std::vector<Task<bool>> sends;
  std::vector<uint16_t> to;
  std::vector<uint64_t> views;  // each receiver's shard's view in the batch
  for (auto& [node, batch] : by_backup(txid, writes, mode)) {
    batch.participants = participants;
    batch.recovered = recovered;
    to.push_back(node);
    views.push_back(batch.view);
    sends.push_back(send_to(node, kReplicate, std::move(batch)));
  }
  auto delivered = co_await rpc::when_all(std::move(sends));
  // Durable once every replica still counted has it (one that failed and was excluded no longer counts); a refusal,
  // or an exclusion a majority did not agree to, fails the write.
  if (std::all_of(delivered.begin(), delivered.end(), [](bool d) { return d; })) {
    if (participants.empty() || !node_.take_planted_replicate_failure()) co_return Code::kOk;
    spdlog::warn("primary-backup: test fault: a delivered write of transaction {:#x} fails", txid);
    co_return Code::kUnavailable;
  }
  // The replicas that took it hold a write that will not commit, applied over the value it replaced: they copy the
  // shard again before anybody writes the key again (a later write could reuse its version), and serve nothing
  // meanwhile. Awaited, so the caller releases its locks only after.
  std::vector<Task<rpc::Response>> resyncs;
  for (size_t i = 0; i < to.size(); ++i) {
    if (!delivered[i] || ctx_.membership().member(to[i]) == MemberState::kFailed) continue;
    if (to[i] == ctx_.self()) {
      resync_for(views[i], "this node holds a replicated write that did not commit");
    } else if (auto conn = ctx_.peer(to[i])) {
      rpc::Writer w;
      w.put(views[i]);
      resyncs.push_back(ctx_.rpc().call_task(*conn, msgs_.at(kResync), w.data()));
    }
  }
  co_await rpc::when_all(std::move(resyncs));
  co_return Code::kUnavailable;
}

// Without the view check, a deposed primary whose write failed after its resume would send the new primary (which
// took the write before the election, and showed it) out of sync; and with no member in sync, the shard's data
// would then come from a copy that missed writes.
void PbWorker::resync_for(uint64_t view, std::string_view why) {
  const auto shard = static_cast<uint32_t>(ctx_.topology().nodes[ctx_.self()].shard);
  if (ctx_.membership().view(shard).packed() != view) {
    spdlog::info("primary-backup: {}, in an older view of shard {}: the election settled it", why, shard);
    return;
  }
  node_.recovery().mark_dirty();  // (a copy in progress is made again)
  if (!ctx_.membership().in_sync()) return;
  node_.recovery().set_holds_copy(true);
  ctx_.membership().set_in_sync(false);
  node_.recovery().set_status(fmt::format("recovering: {}", why));
  spdlog::warn("primary-backup: {}: copying the shard again", why);
}

Task<void> PbWorker::resolve(const Scope& scope, uint64_t txid, std::vector<LogWrite> writes, LogMode mode,
                             bool committed) {
  if (mode == LogMode::kApply && !committed) co_return;  // nothing was decided before an applied write: never sent
  refresh_membership();
  std::vector<Task<bool>> sends;
  const std::vector<uint16_t> participants = participants_of(scope, writes, mode);
  for (auto& [node, batch] : by_backup(txid, writes, mode, &scope)) {
    batch.committed = committed;
    batch.participants = participants;  // (a backup hears that the transaction's writes were shown)
    if (mode == LogMode::kHold)
      for (LogWrite& w : batch.writes) w.value.reset();  // the backup kept the values
    sends.push_back(send_to(node, kResolve, std::move(batch)));
  }
  co_await rpc::when_all(std::move(sends));
}

// Under the writer's lock: a value replaces the record (a placeholder becomes the key); a delete leaves an absent
// record that the lock's release removes (cluster/record_locks.h).
void PbWorker::apply_at_primary(const LogWrite& w) {
  if (w.value) {
    ctx_.table().put(ctx_.session(), w.key, *w.value, w.version, nullptr, 0);
    cluster::clear_lock_bits(ctx_.table(), ctx_.session(), w.key, kAbsent);
  } else {
    cluster::set_lock_bits(ctx_.table(), ctx_.session(), w.key, kAbsent);
    ctx_.table().put(ctx_.session(), w.key, "", w.version, nullptr, 0);
  }
  node_.log_feed().publish(w.key, w.value, w.version);
}

// Only once this node is its shard's primary (the election installed the view): a participant drops what a node that
// is not the primary holds, and answers nothing before.
std::vector<cluster::InheritedWrite> PbWorker::take_inherited() {
  const auto shard = static_cast<uint32_t>(ctx_.topology().nodes[ctx_.self()].shard);
  if (ctx_.membership().primary(shard) != ctx_.self()) return {};
  return node_.undecided().take_inherited(ctx_.worker_index(), ctx_.topology().workers);
}

cluster::TxnHeard PbWorker::heard(uint64_t txid) {
  return node_.undecided().heard().heard(txid, std::chrono::steady_clock::now());
}

// ---------------------------------------------------------------------------------------------------------------
// The backup's side.

void PbWorker::apply_hidden(const LogBatch& b) {
  if (!b.participants.empty() || b.recovered)
    node_.undecided().heard().replicated(b.txid, std::chrono::steady_clock::now());
  for (const LogWrite& w : b.writes) {
    note_undecided(b, w);
    // An existing record gets its flags before the value, in one step: hidden, tagged with this write's version
    // (so a notice about the write it replaces can no longer make it readable: make_readable), and absent exactly
    // when the write deletes (a value written over a pending delete is no delete any more). An existing record
    // keeps its lock word through the put: without the tag the word would not change, and a notice that loaded it
    // just before would clear the hidden mark of this newer, uncommitted write (seen under TSan: a backup served a
    // write before the primary committed it, and another backup then served the older value).
    const uint64_t tag = owner_bits(w.version);
    const uint64_t bits = kNotReadable | tag | (w.value ? 0 : kAbsent);
    cluster::update_lock_bits(ctx_.table(), ctx_.session(), w.key, bits, (kOwnerMask & ~tag) | (w.value ? kAbsent : 0));
    store::OpStatus s = ctx_.table().put(ctx_.session(), w.key, w.value ? std::string_view(*w.value) : "", w.version,
                                         nullptr, /*new_lock_word=*/bits);
    if (s != store::OpStatus::kOk && s != store::OpStatus::kStale)
      spdlog::error("primary-backup: a replicated write of '{}' could not be applied ({})", w.key, static_cast<int>(s));
  }
}

// Before the write replaces it: what a transaction's undecided write replaced is what its abort restores.
void PbWorker::note_undecided(const LogBatch& b, const LogWrite& w) {
  if (b.participants.empty()) return node_.undecided().decided(w.key, w.version);  // (supersedes an older one)
  std::string value;
  uint64_t version = 0, word = 0;
  const bool found = ctx_.table().get(ctx_.session(), w.key, &value, &version, &word) == store::OpStatus::kOk;
  if (found && version >= w.version) return;  // stale: not applied here
  const bool present = found && !absent(word);
  node_.undecided().note(
      cluster::InheritedWrite{b.txid, b.participants, w, present ? std::optional(value) : std::nullopt});
}

// A transaction across shards counts as shown here (heard.h) only if the notice showed one of its writes: a notice
// that finds a newer version (a recovery's abort rewrite, a later write) tells nothing of its outcome.
void PbWorker::make_readable(const LogBatch& b) {
  bool showed = false;
  for (const LogWrite& w : b.writes) {
    node_.undecided().decided(w.key, w.version);
    showed |= show_write(w.key, w.version);
  }
  if (showed && !b.participants.empty()) node_.undecided().heard().shown(b.txid, std::chrono::steady_clock::now());
}

bool PbWorker::show_write(const std::string& key, std::optional<uint64_t> version) {
  for (;;) {
    store::RecordRef ref = ctx_.table().find(ctx_.session(), key);
    if (!ref.valid()) return false;
    // The version before the word: a newer write tags the word before it puts its value, so a word that still shows
    // this write means `stored` is this write's version or older, never a newer one's (which a removal at `stored`
    // would delete, acknowledged and pending: the key would read absent here until its notice).
    const uint64_t stored = ref.version();
    uint64_t word = ref.lock_word().load(std::memory_order_acquire);
    if (retired(word)) continue;
    if ((word & kNotReadable) == 0) return false;
    // Only the write a notice is about: a later pending write stays hidden (its tag is set before its value).
    if (version && (stored != *version || (word & kOwnerMask) != owner_bits(*version))) return false;
    if (node_.env().faults.slow_readable_notices) std::this_thread::sleep_for(std::chrono::microseconds(200));
    // A committed delete goes, unless held writes of the key still wait (the last one's release removes it).
    if (absent(word) && holds(word) == 0) {
      remove_final(key, stored);
      return true;
    }
    // The tag goes with the mark: a readable record carries no owner bits (this node may become a primary).
    if (ref.lock_word().compare_exchange_strong(word, word & ~(kNotReadable | kOwnerMask), std::memory_order_acq_rel))
      return true;
  }
}

void PbWorker::hold(const LogBatch& b) {
  for (const LogWrite& w : b.writes) {
    for (;;) {
      store::RecordRef ref = ctx_.table().find(ctx_.session(), w.key);
      if (!ref.valid()) {
        // A placeholder that carries the hold: the key stays absent unless the write commits. Version 1 (0 would be
        // store::kAutoVersion: a fresh version of this table, which can be above the primary's): every committed
        // write is newer (a primary's first write of a key is its lock placeholder's version + 1 >= 2), and when the
        // hold is dropped on a joining member, the tombstone it leaves supersedes no record of the snapshot.
        store::OpStatus s =
            ctx_.table().put(ctx_.session(), w.key, {}, kPlaceholderVersion, nullptr, kAbsent | kHoldOne);
        if (s == store::OpStatus::kStale) continue;  // created meanwhile
        if (s != store::OpStatus::kOk) spdlog::error("primary-backup: cannot hold a write of '{}'", w.key);
        break;
      }
      uint64_t word = ref.lock_word().load(std::memory_order_acquire);
      if (retired(word)) continue;
      if (holds(word) == holds(kHoldMask)) {
        spdlog::error("primary-backup: too many held writes of '{}'", w.key);
        break;
      }
      if (ref.lock_word().compare_exchange_strong(word, word + kHoldOne, std::memory_order_acq_rel)) break;
    }
  }
  held_[b.txid] = b.writes;
}

// A held write that commits is applied with its version: only if it is newer than what the record holds (a later
// write of the key may have overtaken this notice), and only then do the record's flags follow it.
void PbWorker::resolve_held(const LogBatch& b) {
  auto it = held_.find(b.txid);
  if (it == held_.end()) return;  // not held here (this node joined after the transaction replicated)
  std::vector<LogWrite> held = std::move(it->second);
  held_.erase(it);
  for (LogWrite& w : held) {
    if (b.committed) {
      for (const LogWrite& r : b.writes)
        if (r.key == w.key) w.version = r.version;
      node_.undecided().decided(w.key, w.version);
      store::OpStatus s = w.version == 0
                              ? store::OpStatus::kStale
                              : ctx_.table().put(ctx_.session(), w.key, w.value ? std::string_view(*w.value) : "",
                                                 w.version, nullptr, kAbsent | kHoldOne);
      if (s == store::OpStatus::kOk) {
        if (w.value) {
          cluster::clear_lock_bits(ctx_.table(), ctx_.session(), w.key, kAbsent);
        } else {
          cluster::set_lock_bits(ctx_.table(), ctx_.session(), w.key, kAbsent);
        }
      }
    }
    release_hold(w.key);
  }
}

void PbWorker::release_hold(const std::string& key) {
  for (;;) {
    store::RecordRef ref = ctx_.table().find(ctx_.session(), key);
    if (!ref.valid()) return;
    const uint64_t stored = ref.version();  // before the word, as in show_write
    uint64_t word = ref.lock_word().load(std::memory_order_acquire);
    if (retired(word)) continue;
    if (holds(word) == 0) return;
    const uint64_t next = word - kHoldOne;
    if (!ref.lock_word().compare_exchange_strong(word, next, std::memory_order_acq_rel)) continue;
    // The last hold of an absent key with no applied write pending: a committed delete, or nothing was written.
    if (holds(next) == 0 && absent(next) && (next & kNotReadable) == 0) remove_final(key, stored);
    return;
  }
}

void PbWorker::remove_final(const std::string& key, uint64_t version) {
  node_.recovery().delete_with_tombstone(key, version, [&] { ctx_.table().remove(ctx_.session(), key, version + 1); });
}

}  // namespace rdx::replication::primary_backup
