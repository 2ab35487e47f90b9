// Parts of the verbs backend that need no RDMA device: GID index detection on a fabricated sysfs tree, and the
// validation of everything the backend decodes from the wire.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "transport/verbs/rdma_sysfs.h"
#include "transport/verbs/wire.h"

namespace rdx::transport::verbs {
namespace {

namespace fs = std::filesystem;

// A fake /sys/class/infiniband with one device and port; GID slots are (index, gid text, type) triples.
class FakeSysfs {
 public:
  FakeSysfs()
      : root_(fs::temp_directory_path() /
              fs::path("rdx-sysfs-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++))) {}
  ~FakeSysfs() { fs::remove_all(root_); }
  void add_port(const std::string& dev, int port, const std::string& state, const std::string& link,
                const std::vector<std::tuple<int, std::string, std::string>>& gids) {
    fs::path p = root_ / dev / "ports" / std::to_string(port);
    fs::create_directories(p / "gids");
    fs::create_directories(p / "gid_attrs" / "types");
    fs::create_directories(p / "gid_attrs" / "ndevs");
    write(p / "state", state);
    write(p / "link_layer", link);
    for (int i = 0; i < 4; ++i) write(p / "gids" / std::to_string(i), "0000:0000:0000:0000:0000:0000:0000:0000");
    for (const auto& [idx, gid, type] : gids) {
      write(p / "gids" / std::to_string(idx), gid);
      write(p / "gid_attrs" / "types" / std::to_string(idx), type);
      write(p / "gid_attrs" / "ndevs" / std::to_string(idx), "rxedev0");
    }
  }
  std::string root() const { return root_.string(); }

 private:
  static void write(const fs::path& p, const std::string& s) { std::ofstream(p) << s << "\n"; }
  static inline int counter_ = 0;
  fs::path root_;
};

const char* kLinkLocal = "fe80:0000:0000:0000:b0c5:3aff:fe6c:1a2b";
const char* kMapped = "0000:0000:0000:0000:0000:ffff:0a63:0101";  // ::ffff:10.99.1.1

TEST(VerbsSysfs, ParsesGidsAndIpv4Mapping) {
  auto g = parse_gid(kMapped);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(gid_ipv4(*g), "10.99.1.1");
  EXPECT_EQ(*ipv4_mapped_gid("10.99.1.1"), *g);
  EXPECT_EQ(gid_ipv4(*parse_gid(kLinkLocal)), "");
  EXPECT_FALSE(parse_gid("fe80::1").has_value());
  EXPECT_FALSE(parse_gid("0000:0000:0000:0000:0000:ffff:0a63:010").has_value());
  EXPECT_FALSE(parse_gid("0000:0000:0000:0000:0000:ffff:0a63:0101:").has_value());
  EXPECT_FALSE(parse_gid("zzzz:0000:0000:0000:0000:ffff:0a63:0101").has_value());
  EXPECT_FALSE(ipv4_mapped_gid("10.99.1").has_value());
}

TEST(VerbsSysfs, DetectsRoceV2Ipv4GidNotIndexZero) {
  FakeSysfs fake;
  // What rxe shows: the link-local GID twice (v1 at 0, v2 at 1 is absent on rxe) and the IPv4 one at index 1.
  fake.add_port("rxe0", 1, "4: ACTIVE", "Ethernet", {{0, kLinkLocal, "RoCE v2"}, {1, kMapped, "RoCE v2"}});
  auto port = read_port("rxe0", 1, fake.root());
  ASSERT_TRUE(port.is_ok()) << port.status().to_string();
  EXPECT_TRUE(port->active);
  ASSERT_EQ(port->gids.size(), 2u);  // zero slots skipped
  auto idx = detect_gid_index(port.value(), "10.99.1.1");
  ASSERT_TRUE(idx.is_ok()) << idx.status().to_string();
  EXPECT_EQ(idx.value(), 1);
  EXPECT_EQ(detect_gid_index(port.value(), "").value(), 1);  // first IPv4 RoCE v2 entry
  auto wrong = detect_gid_index(port.value(), "10.99.1.2");
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_NE(wrong.status().message().find("no RoCE v2 GID for 10.99.1.2"), std::string::npos)
      << wrong.status().message();
}

TEST(VerbsSysfs, PrefersRoceV2OverV1ForTheSameAddress) {
  FakeSysfs fake;
  fake.add_port(
      "mlx5_0", 1, "4: ACTIVE", "Ethernet",
      {{0, kLinkLocal, "IB/RoCE v1"}, {1, kLinkLocal, "RoCE v2"}, {2, kMapped, "IB/RoCE v1"}, {3, kMapped, "RoCE v2"}});
  auto port = read_port("mlx5_0", 1, fake.root());
  ASSERT_TRUE(port.is_ok());
  EXPECT_EQ(detect_gid_index(port.value(), "10.99.1.1").value(), 3);
}

TEST(VerbsSysfs, InfinibandUsesThePortGid) {
  FakeSysfs fake;
  fake.add_port("mlx4_0", 1, "4: ACTIVE", "InfiniBand", {{0, kLinkLocal, "IB/RoCE v1"}});
  auto port = read_port("mlx4_0", 1, fake.root());
  ASSERT_TRUE(port.is_ok());
  EXPECT_EQ(detect_gid_index(port.value(), "").value(), 0);
}

TEST(VerbsSysfs, ExplainsWhyNoPortIsUsable) {
  std::string why;
  EXPECT_FALSE(first_usable_port(&why, "/nonexistent/infiniband").has_value());
  EXPECT_NE(why.find("does not exist"), std::string::npos) << why;

  FakeSysfs down;
  down.add_port("rxe0", 1, "1: DOWN", "Ethernet", {{1, kMapped, "RoCE v2"}});
  EXPECT_FALSE(first_usable_port(&why, down.root()).has_value());
  EXPECT_NE(why.find("not ACTIVE"), std::string::npos) << why;

  FakeSysfs no_ip;
  no_ip.add_port("rxe0", 1, "4: ACTIVE", "Ethernet", {{0, kLinkLocal, "RoCE v2"}});
  EXPECT_FALSE(first_usable_port(&why, no_ip.root()).has_value());
  EXPECT_NE(why.find("no RoCE v2 GID"), std::string::npos) << why;

  FakeSysfs ok;
  ok.add_port("rxe0", 1, "4: ACTIVE", "Ethernet", {{0, kLinkLocal, "RoCE v2"}, {1, kMapped, "RoCE v2"}});
  auto u = first_usable_port(&why, ok.root());
  ASSERT_TRUE(u.has_value()) << why;
  EXPECT_EQ(u->gid_index, 1);
  EXPECT_EQ(u->ipv4, "10.99.1.1");
}

TEST(VerbsWire, HelloRoundTripAndRejection) {
  Hello h;
  h.node = 3;
  h.epoch = 9;
  h.src_worker = 1;
  h.dst_worker = 2;
  h.max_packet = 4096;
  std::byte padded[56] = {};  // the CM pads private data
  std::memcpy(padded, &h, sizeof(h));
  auto d = decode_hello(padded, sizeof(padded));
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->node, 3);
  EXPECT_EQ(d->dst_worker, 2);
  EXPECT_FALSE(decode_hello(padded, sizeof(Hello) - 1).is_ok());
  EXPECT_FALSE(decode_hello(nullptr, 0).is_ok());
  Hello bad = h;
  bad.magic = 0x1234;
  EXPECT_FALSE(decode_hello(&bad, sizeof(bad)).is_ok());
  bad = h;
  bad.version = 99;
  EXPECT_FALSE(decode_hello(&bad, sizeof(bad)).is_ok());
  bad = h;
  bad.status = 200;
  EXPECT_FALSE(decode_hello(&bad, sizeof(bad)).is_ok());
}

TEST(VerbsWire, RegionTableSplitsIntoChunksAndReassembles) {
  std::vector<RegionDesc> regions;
  for (uint16_t i = 0; i < 20; ++i)
    if (i % 3 != 1) regions.push_back(RegionDesc{i, 1, 100u + i, 0x10000ull * (i + 1), 4096ull * (i + 1)});
  auto chunks = encode_region_table(regions, 64);  // 8-byte header + 2 entries per chunk
  EXPECT_EQ(chunks.size(), (regions.size() + 1) / 2);
  std::vector<RegionDesc> table;
  for (size_t i = 0; i < chunks.size(); ++i) {
    auto last = decode_region_chunk(chunks[i], table);
    ASSERT_TRUE(last.is_ok()) << last.status().to_string();
    EXPECT_EQ(last.value(), i + 1 == chunks.size());
  }
  for (const RegionDesc& r : regions) {
    ASSERT_LT(r.id, table.size());
    EXPECT_EQ(table[r.id].valid, 1);
    EXPECT_EQ(table[r.id].rkey, r.rkey);
    EXPECT_EQ(table[r.id].addr, r.addr);
    EXPECT_EQ(table[r.id].len, r.len);
  }
  EXPECT_EQ(table[1].valid, 0);  // gaps stay invalid
  auto empty = encode_region_table({}, 4096);
  ASSERT_EQ(empty.size(), 1u);
  std::vector<RegionDesc> t2;
  EXPECT_TRUE(decode_region_chunk(empty[0], t2).value());
  EXPECT_TRUE(t2.empty());
}

TEST(VerbsWire, RegionChunkValidation) {
  std::vector<RegionDesc> regions = {RegionDesc{1, 1, 7, 0x1000, 4096}};
  auto chunk = encode_region_table(regions, 4096)[0];
  std::vector<RegionDesc> table;
  // Truncated, padded, bad magic, duplicate id, zero length, wrapping extent, count larger than the bytes.
  EXPECT_FALSE(decode_region_chunk(std::span(chunk).first(4), table).is_ok());
  auto longer = chunk;
  longer.push_back(std::byte{0});
  EXPECT_FALSE(decode_region_chunk(longer, table).is_ok());
  auto bad_magic = chunk;
  bad_magic[0] = std::byte{0};
  EXPECT_FALSE(decode_region_chunk(bad_magic, table).is_ok());
  ASSERT_TRUE(decode_region_chunk(chunk, table).is_ok());
  EXPECT_FALSE(decode_region_chunk(chunk, table).is_ok()) << "the same region twice";
  for (auto [addr, len] : {std::pair<uint64_t, uint64_t>{0x1000, 0}, {~0ull - 10, 4096}}) {
    std::vector<RegionDesc> t;
    auto c = encode_region_table(std::vector<RegionDesc>{RegionDesc{2, 1, 7, addr, len}}, 4096)[0];
    EXPECT_FALSE(decode_region_chunk(c, t).is_ok());
  }
  RegionChunkHeader h;
  h.count = 1000;
  h.last = 1;
  std::vector<std::byte> lying(sizeof(h));
  std::memcpy(lying.data(), &h, sizeof(h));
  std::vector<RegionDesc> t;
  EXPECT_FALSE(decode_region_chunk(lying, t).is_ok());
}

TEST(VerbsWire, WorkRequestIdsRoundTrip) {
  uint64_t id = send_wr_id(0x7fff1234, 0xfffffffe);
  EXPECT_EQ(wr_conn(id), 0x7fff1234u);
  EXPECT_EQ(wr_seq(id), 0xfffffffeu);
  EXPECT_EQ(id & kRecvTag, 0u);
}

}  // namespace
}  // namespace rdx::transport::verbs
