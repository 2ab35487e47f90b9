#pragma once
// What the verbs backend puts on the wire besides user data:
// - Hello: the private data of the librdmacm CONNECT_REQUEST (connector -> listener) and of the accept/reject reply.
//   It fits the 56 bytes an RC connect request can carry.
// - RegionTable chunks: right after a connection is established, each side SENDs its region table (RegionId -> addr,
//   len, rkey) as SEND_WITH_IMM messages with imm = kImmRegionTable; the connection is up once the peer's last chunk
//   arrived. Plain SENDs are user packets; WRITE_WITH_IMM completions are user immediates.
// Everything received is validated (decode_* return errors; the connection is then closed and counted).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"

namespace rdx::transport::verbs {

inline constexpr uint32_t kHelloMagic = 0x52445856;  // "RDXV"
inline constexpr uint16_t kWireVersion = 1;
inline constexpr uint32_t kImmRegionTable = 0x52540001;

struct Hello {
  uint32_t magic = kHelloMagic;
  uint16_t version = kWireVersion;
  uint16_t node = 0;  // sender's node
  uint32_t epoch = 0;
  uint16_t src_worker = 0;  // sender's worker
  uint16_t dst_worker = 0;  // worker the connection is for
  uint32_t max_packet = 0;
  uint32_t status = 0;  // in replies: rdx::Code (0 = accepted)
};
static_assert(sizeof(Hello) == 24 && sizeof(Hello) <= 56);

// Decodes a private-data blob (its length may be padded by the CM, never shorter than a Hello).
Result<Hello> decode_hello(const void* data, size_t len);

struct RegionDesc {
  uint16_t id = 0;
  uint16_t valid = 0;  // 1 if registered (the table is indexed by id; gaps are invalid)
  uint32_t rkey = 0;
  uint64_t addr = 0;
  uint64_t len = 0;
};
static_assert(sizeof(RegionDesc) == 24);

struct RegionChunkHeader {
  uint32_t magic = kHelloMagic;
  uint16_t count = 0;  // RegionDescs in this chunk
  uint16_t last = 0;   // 1 on the final chunk
};
static_assert(sizeof(RegionChunkHeader) == 8);

// Splits a region table into chunks of at most `max_chunk` bytes (>= one header + one entry). An empty table is one
// empty chunk with last=1.
std::vector<std::vector<std::byte>> encode_region_table(std::span<const RegionDesc> regions, size_t max_chunk);
// Appends the entries of one chunk to `table` (indexed by id). Returns whether it was the last chunk.
Result<bool> decode_region_chunk(std::span<const std::byte> chunk, std::vector<RegionDesc>& table);

// wr_id of send-queue work requests: the connection and the WR's sequence number on that QP. Receive WRs carry the
// buffer index with the top bit set.
inline constexpr uint64_t kRecvTag = 1ull << 63;
inline uint64_t send_wr_id(uint32_t conn, uint32_t seq) { return (uint64_t{conn} << 32) | seq; }
inline uint32_t wr_conn(uint64_t wr_id) { return static_cast<uint32_t>((wr_id & ~kRecvTag) >> 32); }
inline uint32_t wr_seq(uint64_t wr_id) { return static_cast<uint32_t>(wr_id); }

}  // namespace rdx::transport::verbs
