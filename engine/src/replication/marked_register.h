#pragma once
// What the protocols whose members read their own copy share (hermes, craq): the quorum register's (tag, value)
// records (quorum_register.h), each with a mark in its lock word, kNotReadable, while a write of it is not known to
// be committed (Hermes' Invalid, CRAQ's dirty). The worker's batched local reads answer a marked record kBusy, so the
// common case, an unmarked key, is read without a lock and without a round trip; the protocol decides what a read of
// a marked one does (Hermes waits, CRAQ asks the chain's tail).
// Also what both do with keys of another shard: reads and writes run at a member of that shard (forwarded).
#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "replication/key_turns.h"
#include "replication/quorum_register.h"

namespace rdx::replication {

class MarkedNode : public QuorumNode {
 public:
  using QuorumNode::QuorumNode;
  KeyTickets& key_tickets() { return key_tickets_; }
  // A key's copy changes (install, unmark) under its stripe, so a tag and its mark never interleave with another
  // tag's; readers take no lock (the store reads value, version and lock word as one state).
  std::mutex& stripe(uint64_t h) { return stripes_[(h ^ (h >> 31)) % stripes_.size()]; }

 private:
  KeyTickets key_tickets_;
  std::array<std::mutex, 1024> stripes_;
};

class MarkedWorker : public QuorumWorker {
 public:
  // `forwarded`: the offset of the two messages that carry operations on keys of another shard in the protocol's
  // range (after its own, so that adding these did not renumber hermes' messages):
  //   forwarded      read: bytes key -> a read reply (cluster/local_reads.h)
  //   forwarded + 1  write: bytes key, Rmw -> kOk: WriteResult; a refusal
  MarkedWorker(MarkedNode& node, cluster::WorkerContext& ctx, uint16_t forwarded)
      : QuorumWorker(node, ctx), marked_(node), turns_(ctx.sched(), node.key_tickets()), forwarded_(forwarded) {}

 protected:
  struct Copy {  // this node's copy of a key
    bool found = false;
    uint64_t tag = 0;
    std::string value;
    bool marked = false;  // not known committed
  };
  struct Newer {  // a newer (tag, value) than the one offered
    uint64_t tag = 0;
    std::string value;
  };
  struct Installed {
    Code status = Code::kOk;     // kAborted: `only_over` did not hold; kResourceExhausted: the store is full
    std::optional<Newer> newer;  // this node holds a newer tag (nothing installed)
  };

  // Why a client's key (and write) is refused before anything runs: an empty or oversized key, a value or expected
  // value over the size limit. Empty when it is well formed.
  std::string invalid_input(std::string_view key, const Rmw* op = nullptr) const;

  Copy copy_of(const std::string& key);
  // What a read of a copy holding `tag` (0: none) answers: kNotFound for none or a tombstone.
  static cluster::KvResult as_read(uint64_t tag, std::string value);
  // Installs (tag, value), marked unless `readable`, unless this node holds a newer tag (reported); an equal tag stays
  // as it is. With `only_over`, only if the key holds that tag (0: absent) unmarked: a writer's base.
  Installed install_copy(const std::string& key, uint64_t tag, std::string_view value, bool readable,
                         std::optional<uint64_t> only_over = std::nullopt);
  // Clears the mark if the key still holds `tag`.
  void unmark(const std::string& key, uint64_t tag);
  bool valid_blob(uint64_t tag, std::string_view stored) const override { return !tag_deleted(tag) || stored.empty(); }

  // A key of another shard: its read runs at a member (the first connected one), its write at `node`'s.
  std::optional<transport::ConnId> member_connection(std::string_view key) const;
  rpc::Task<cluster::KvResult> read_at(std::optional<transport::ConnId> conn, const std::string& key);
  rpc::Task<WriteResult> write_at(std::optional<transport::ConnId> conn, const std::string& key, const Rmw& op);

  // The protocol's handlers (after the forwarded operations').
  virtual Status start_marked() = 0;

  MarkedNode& marked_;
  KeyTurns turns_;

 private:
  Status start_protocol() final;
  void serve_forwarded_read(const rpc::Incoming& in);
  void serve_forwarded_write(const rpc::Incoming& in);

  const uint16_t forwarded_;
};

}  // namespace rdx::replication
