#pragma once
// Primary-backup's messages, by offset in its message range (its registry line), and their payloads. Decoding
// validates every field; a malformed message is refused (requests: kInvalidArgument) and changes nothing.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cluster/replica_log.h"
#include "rpc/codec.h"

namespace rdx::replication::primary_backup {

enum Msg : uint16_t {
  kGet = 0,         // request, at the primary: bytes key -> a read reply (cluster/local_reads.h), kBusy while held
  kWrite = 1,       // request, at the primary: bytes key, Rmw -> WriteResult
  kReplicate = 2,   // ackable, at a backup: LogBatch (kApply: apply hidden; kHold: keep until resolved)
  kResolve = 3,     // at a backup: LogBatch; kApply: one-way, make readable; kHold: ackable, apply or drop
  kSyncStatus = 4,  // recovery (recovery.h)
  kJoin = 5,
  kJoinDone = 6,
  kSyncScan =
      7,  // request: u64 session -> u8 done, u32 count, u64 removed_version_max, count x (key, value, version, flags)
  kExcluded = 8,  // request: u16 node -> kOk once the receiver excluded it too (kAborted: it rejoined meanwhile)
  kVote = 9,      // request (election.cc): u32 shard, u64 view, u16 deposed, u16 candidate, u8 pre -> kOk: (would) vote
  kNewView = 10,  // one-way: u32 shard, u64 ShardView::packed: the candidate won; install the view
  kResync = 11,   // request: u64 view (ShardView::packed) -> kOk: "you hold a write of that view that did not commit":
                  // leave sync and copy the shard again (a receiver in a newer view has nothing to do: resync_for)
  kWithdraw = 12,  // one-way: u32 shard, u64 view: the sender lost its campaign for that view (its votes expire)
  kResign = 13,    // request (handover.cc): u32 shard, u64 ShardView::packed: the sender, that view's primary, serves
                   // no more; elect another -> kOk (kAborted: not the receiver's view of that shard)
  kSyncUndecided = 14,  // request (recovery): empty -> the source's undecided writes (undecided.h; encode_undecided)
};
inline constexpr uint16_t kMessageCount = 15;

// The writes of one transaction (or one single-key write) for one replica.
struct LogBatch {
  uint64_t txid = 0;
  uint64_t view = 0;  // the sender's view of the receiver's shard (ShardView::packed): a receiver in another refuses
  cluster::LogMode mode = cluster::LogMode::kApply;
  bool committed = false;  // kResolve
  // kReplicate of a transaction's kApply writes across shards: its participants (each shard's primary when it
  // wrote; else empty). A backup keeps such writes undecided (undecided.h) until their notice.
  std::vector<uint16_t> participants;
  bool recovered = false;  // kReplicate: the writes of a decision coordinator recovery made (the backup hears of it)
  std::vector<cluster::LogWrite> writes;

  std::string encode() const;
  static std::optional<LogBatch> decode(std::span<const std::byte> payload);
};

// kSyncUndecided's answer: u32 count, count x (u64 txid, u16 n, n x u16 participant, write as in LogBatch, u8
// has_before, [bytes before]).
std::string encode_undecided(const std::vector<cluster::InheritedWrite>& ws);
std::optional<std::vector<cluster::InheritedWrite>> decode_undecided(std::span<const std::byte> payload);

}  // namespace rdx::replication::primary_backup
