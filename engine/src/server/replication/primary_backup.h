#pragma once
// Primary-backup replication inside a shard. The shard's first member is the primary: it serialises writes per key,
// applies each locally, sends it to every live backup (ackable messages, acknowledged in ranges), and acknowledges
// the client once every live replica applied it. A backup whose connection fails is excluded (MemberState::kFailed)
// until it rejoins with a snapshot copy (recovery.h). Reads execute at the primary and wait for an in-flight write to
// the same key, so no read returns a value that is not yet on every live replica.
#include "server/node_shared.h"
#include "server/protocol.h"

namespace rdx::server {

class PrimaryBackup final : public Protocol {
 public:
  enum Msg : rpc::MsgType { kPbGet = 101, kPbWrite = 102, kPbReplicate = 103 };
  enum class WriteOp : uint8_t { kPut = 1, kDel = 2 };

  explicit PrimaryBackup(WorkerContext& ctx) : ctx_(ctx) {}
  void start() override;
  rpc::Task<KvResult> get(std::string key) override;
  rpc::Task<KvResult> put(std::string key, std::string value) override;
  rpc::Task<KvResult> remove(std::string key) override;

 private:
  rpc::Task<KvResult> forward(uint16_t primary, rpc::MsgType type, std::string payload);
  rpc::Task<KvResult> read_at_primary(std::string key);
  rpc::Task<KvResult> write_at_primary(WriteOp op, std::string key, std::string value);
  rpc::Task<Code> replicate_to(uint16_t backup, transport::ConnId conn, std::string payload);
  rpc::Task<void> serve(rpc::ReplyTo to, rpc::Task<KvResult> op);
  void apply_replica(const rpc::Incoming& in);
  bool is_primary_of(std::string_view key, uint16_t* primary) const;

  WorkerContext& ctx_;
};

}  // namespace rdx::server
