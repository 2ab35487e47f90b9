#pragma once
// Data nodes relay where their peers are. A restarted pod comes back with a new IP, and DNS may answer the old one
// for its TTL; a node learns the new address when the restarted one connects to it (tcp transport). Two pods
// restarted within one TTL (a rolling update) each dial the other's old address and learn nothing, while a third
// node, which both dialed, knows both: worker 0 of every data node sends what its transport learned to each peer it
// is connected to, once a second, and the receiver's transport dials there while it learned nothing itself
// (transport::Transport::suggest_address). Without it, such a pair could not reach each other until DNS caught up:
// a rolling update paused writes for 23.6 s (two successors of a primary that handed over split their votes).
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cluster/worker_context.h"
#include "transport/transport.h"

namespace rdx::server {

inline constexpr rpc::MsgType kAddressBook = 67;  // msgs::kCluster.at(3), one-way
inline constexpr size_t kMaxAddressBookEntries = 1024;

// The message: u16 count, then per entry u16 node and the address's bytes. Decoding refuses anything else (a count
// above the limit, trailing bytes, an address that is not dotted IPv4).
std::string encode_address_book(const std::vector<transport::LearnedAddress>& book);
std::optional<std::vector<transport::LearnedAddress>> decode_address_book(std::span<const std::byte> payload);

class AddressRelay {
 public:
  AddressRelay(cluster::WorkerContext& ctx, transport::Transport& transport) : ctx_(ctx), transport_(transport) {}
  // Registers the handler (every worker: a book is taken wherever it lands).
  Status start();
  // Worker 0, from its tick: sends the book to every connected data node, at most once a second.
  void tick();

 private:
  void serve(const rpc::Incoming& in);

  cluster::WorkerContext& ctx_;
  transport::Transport& transport_;
  std::chrono::steady_clock::time_point next_send_{};
};

}  // namespace rdx::server
