// The keys a MULTI/EXEC block declares to the transaction protocol (deterministic protocols plan with them): every
// key the block's commands touch, from the command table's key positions, writes separately from reads.
#include <gtest/gtest.h>

#include "resp/executor.h"

namespace rdx::resp {
namespace {

QueuedCommand queued(std::vector<std::string> args) {
  const CommandSpec* spec = find_command(args[0]);
  EXPECT_NE(spec, nullptr) << args[0];
  return QueuedCommand{spec, std::move(args)};
}

TEST(DeclaredKeys, CoverEveryKeyOfTheBlock) {
  std::vector<QueuedCommand> block;
  block.push_back(queued({"GET", "a"}));
  block.push_back(queued({"MSET", "b", "1", "c", "2"}));
  block.push_back(queued({"INCR", "a"}));
  block.push_back(queued({"MGET", "d", "e"}));
  block.push_back(queued({"DEL", "f", "g"}));
  block.push_back(queued({"PING"}));
  std::unordered_map<std::string, uint64_t> watched{{"w", 3}, {"b", 1}};
  txn::DeclaredKeys d = declared_keys(block, watched);
  EXPECT_EQ(d.writes, (std::set<std::string>{"a", "b", "c", "f", "g"}));
  EXPECT_EQ(d.reads, (std::set<std::string>{"d", "e", "w"}));  // a and b are written (and read)
}

}  // namespace
}  // namespace rdx::resp
