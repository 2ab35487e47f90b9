#include "server/address_relay.h"

#include <arpa/inet.h>
#include <spdlog/spdlog.h>

#include "rpc/codec.h"

namespace rdx::server {

namespace {
constexpr auto kSendEvery = std::chrono::seconds(1);
constexpr size_t kMaxAddressBytes = INET_ADDRSTRLEN - 1;

bool is_ipv4(const std::string& s) {
  in_addr a{};
  return s.size() <= kMaxAddressBytes && inet_pton(AF_INET, s.c_str(), &a) == 1;
}
}  // namespace

std::string encode_address_book(const std::vector<transport::LearnedAddress>& book) {
  rpc::Writer w;
  const size_t n = std::min(book.size(), kMaxAddressBookEntries);
  w.put(static_cast<uint16_t>(n));
  for (size_t i = 0; i < n; ++i) {
    w.put(book[i].node);
    w.bytes(book[i].host);
  }
  return w.data();
}

std::optional<std::vector<transport::LearnedAddress>> decode_address_book(std::span<const std::byte> payload) {
  rpc::Reader r(payload);
  const auto n = r.get<uint16_t>();
  if (!r.ok() || n > kMaxAddressBookEntries) return std::nullopt;
  std::vector<transport::LearnedAddress> out;
  out.reserve(n);
  for (uint16_t i = 0; i < n; ++i) {
    transport::LearnedAddress a;
    a.node = r.get<uint16_t>();
    a.host = std::string(r.bytes(kMaxAddressBytes));
    if (!r.ok() || !is_ipv4(a.host)) return std::nullopt;
    out.push_back(std::move(a));
  }
  if (!r.done()) return std::nullopt;
  return out;
}

Status AddressRelay::start() {
  return ctx_.rpc().on(kAddressBook, [this](const rpc::Incoming& in) { serve(in); });
}

void AddressRelay::tick() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_send_) return;
  next_send_ = now + kSendEvery;
  std::vector<transport::LearnedAddress> book = transport_.learned_addresses();
  if (book.empty()) return;
  const std::string payload = encode_address_book(book);
  const cluster::Topology& t = ctx_.topology();
  for (uint16_t n = 0; n < t.nodes.size(); ++n) {
    if (n == ctx_.self() || t.nodes[n].role != cluster::Role::kData) continue;
    if (auto conn = ctx_.peer(n)) (void)ctx_.rpc().send_oneway(*conn, kAddressBook, rpc::as_bytes_of(payload));
  }
}

// Only a data node's book is taken, and only entries about the other data nodes of this node's topology.
void AddressRelay::serve(const rpc::Incoming& in) {
  const cluster::Topology& t = ctx_.topology();
  if (in.peer_node >= t.nodes.size() || t.nodes[in.peer_node].role != cluster::Role::kData) return;
  auto book = decode_address_book(in.payload);
  if (!book) {
    spdlog::warn("address relay: malformed address book from node {} ignored", in.peer_node);
    return;
  }
  for (const transport::LearnedAddress& a : *book) {
    if (a.node == ctx_.self() || a.node >= t.nodes.size() || t.nodes[a.node].role != cluster::Role::kData) continue;
    transport_.suggest_address(a.node, a.host);
  }
}

}  // namespace rdx::server
