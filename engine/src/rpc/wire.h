#pragma once
// RPC packet layout: PacketHeader, then `count` messages, each a MsgHeader followed by `len` payload bytes.
// Everything is validated on receipt (rpc.cc: Rpc::on_packet); a malformed packet is dropped whole and counted.
#include <cstdint>

namespace rdx::rpc {

inline constexpr uint32_t kPacketMagic = 0x52504331;  // "RPC1"

struct PacketHeader {
  uint32_t magic;
  uint32_t epoch;
  uint16_t count;  // messages in this packet
  uint16_t flags;
  uint32_t bytes;  // total bytes including this header
};
static_assert(sizeof(PacketHeader) == 16);

enum class MsgKind : uint8_t {
  kRequest = 1,   // expects a kResponse with the same id
  kResponse = 2,  // status + payload
  kOneway = 3,    // no reply
  kAckable = 4,   // per-(connection, type) sequence id; acknowledged in ranges by kAckRange
  kAckRange = 5,  // acknowledges ids [payload.first, id] of `type` on this connection
};

struct MsgHeader {
  uint16_t type;
  uint8_t kind;    // MsgKind
  uint8_t status;  // kResponse / kAckRange: rdx::Code
  uint32_t len;    // payload bytes
  uint64_t id;
};
static_assert(sizeof(MsgHeader) == 16);

}  // namespace rdx::rpc
