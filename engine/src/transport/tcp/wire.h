#pragma once
// Framing of the tcp transport: a stream of frames, each a fixed 24-byte header followed by `len` payload bytes.
// Every field that comes off the network is validated before use (tcp_endpoint.cc: parse_frames()).
#include <cstdint>

namespace rdx::transport::tcp {

inline constexpr uint32_t kMagic = 0x52445831;  // "RDX1"
inline constexpr uint16_t kWireVersion = 1;

enum class FrameType : uint8_t {
  kPacket = 1,      // two-sided packet
  kReadReq = 2,     // one-sided READ: region, offset, len
  kReadResp = 3,    // status + data
  kWriteReq = 4,    // region, offset, flags, imm + data
  kWriteAck = 5,    // status
  kCasReq = 6,      // region, offset, expected, desired
  kFaaReq = 7,      // region, offset, add
  kAtomicResp = 8,  // status + old value
};

enum WriteFlags : uint8_t { kWriteSignaled = 1, kWriteWithImm = 2 };

struct FrameHeader {
  uint32_t len;    // payload bytes after the header
  uint8_t type;    // FrameType
  uint8_t status;  // responses: rdx::Code
  uint8_t flags;   // kWriteReq: WriteFlags
  uint8_t reserved;
  uint64_t op_id;  // one-sided request/response matching
  uint32_t imm;    // kWriteReq with kWriteWithImm
  uint32_t pad;
};
static_assert(sizeof(FrameHeader) == 24);

// Payload of one-sided requests (followed by data for writes).
struct RemoteOp {
  uint16_t region;
  uint16_t pad0;
  uint32_t len;  // read length (reads); data length follows for writes
  uint64_t offset;
  uint64_t arg0;  // CAS expected / FAA add
  uint64_t arg1;  // CAS desired
};
static_assert(sizeof(RemoteOp) == 32);

// First bytes on a new connection, both ways.
struct Hello {
  uint32_t magic;
  uint16_t version;
  uint16_t src_node;
  uint32_t epoch;
  uint16_t src_worker;
  uint16_t dst_worker;
  uint32_t max_packet;
  uint32_t status;  // in the reply: rdx::Code (0 = accepted)
};
static_assert(sizeof(Hello) == 24);

}  // namespace rdx::transport::tcp
