#include "transport/verbs/wire.h"

#include <cstring>

namespace rdx::transport::verbs {

Result<Hello> decode_hello(const void* data, size_t len) {
  if (data == nullptr || len < sizeof(Hello))
    return error(Code::kInvalidArgument, "connection private data of {} bytes (need {})", len, sizeof(Hello));
  Hello h;
  std::memcpy(&h, data, sizeof(h));
  if (h.magic != kHelloMagic) return error(Code::kInvalidArgument, "bad hello magic {:#x}", h.magic);
  if (h.version != kWireVersion)
    return error(Code::kInvalidArgument, "wire version {} (this build speaks {})", h.version, kWireVersion);
  if (h.status > static_cast<uint32_t>(Code::kUnsupported))
    return error(Code::kInvalidArgument, "hello status {} out of range", h.status);
  return h;
}

std::vector<std::vector<std::byte>> encode_region_table(std::span<const RegionDesc> regions, size_t max_chunk) {
  const size_t per_chunk = (max_chunk - sizeof(RegionChunkHeader)) / sizeof(RegionDesc);
  std::vector<std::vector<std::byte>> chunks;
  size_t at = 0;
  do {
    size_t n = std::min(per_chunk, regions.size() - at);
    RegionChunkHeader h;
    h.count = static_cast<uint16_t>(n);
    h.last = at + n == regions.size() ? 1 : 0;
    std::vector<std::byte> c(sizeof(h) + n * sizeof(RegionDesc));
    std::memcpy(c.data(), &h, sizeof(h));
    if (n > 0) std::memcpy(c.data() + sizeof(h), regions.data() + at, n * sizeof(RegionDesc));
    chunks.push_back(std::move(c));
    at += n;
  } while (at < regions.size());
  return chunks;
}

Result<bool> decode_region_chunk(std::span<const std::byte> chunk, std::vector<RegionDesc>& table) {
  if (chunk.size() < sizeof(RegionChunkHeader))
    return error(Code::kInvalidArgument, "region table chunk of {} bytes", chunk.size());
  RegionChunkHeader h;
  std::memcpy(&h, chunk.data(), sizeof(h));
  if (h.magic != kHelloMagic) return error(Code::kInvalidArgument, "region table chunk with bad magic {:#x}", h.magic);
  if (h.last > 1) return error(Code::kInvalidArgument, "region table chunk with last={}", h.last);
  if (chunk.size() != sizeof(h) + size_t{h.count} * sizeof(RegionDesc))
    return error(Code::kInvalidArgument, "region table chunk of {} bytes announces {} entries", chunk.size(), h.count);
  for (size_t i = 0; i < h.count; ++i) {
    RegionDesc d;
    std::memcpy(&d, chunk.data() + sizeof(h) + i * sizeof(RegionDesc), sizeof(d));
    if (d.valid != 1) return error(Code::kInvalidArgument, "region table entry {} not marked valid", d.id);
    if (d.len == 0 || d.addr + d.len < d.addr)
      return error(Code::kInvalidArgument, "region {}: bad extent addr={:#x} len={}", d.id, d.addr, d.len);
    if (table.size() <= d.id) table.resize(size_t{d.id} + 1);
    if (table[d.id].valid != 0) return error(Code::kInvalidArgument, "region {} announced twice", d.id);
    table[d.id] = d;
  }
  return h.last == 1;
}

}  // namespace rdx::transport::verbs
