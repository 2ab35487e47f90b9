#include "resp/resp_parser.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace rdx::resp {
namespace {

using Command = std::vector<std::string>;

std::string bulk(std::string_view s) { return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n"; }
std::string multibulk(const Command& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) out += bulk(a);
  return out;
}

// Feeds `chunks` the way a connection does: appends each chunk to its buffer, parses every complete request, and
// erases consumed bytes (so the unconsumed bytes move in memory between calls, as after a compaction).
struct Feed {
  RequestParser parser;
  std::string buffer;
  std::vector<Command> commands;
  int empties = 0;
  std::string error;

  explicit Feed(ParserLimits limits = {}) : parser(limits) {}

  void push(std::string_view chunk, bool authenticated = true) {
    buffer.append(chunk);
    while (error.empty()) {
      size_t consumed = 0;
      ParseStatus st = parser.parse(buffer, authenticated, &consumed);
      if (st == ParseStatus::kIncomplete) return;
      if (st == ParseStatus::kError) {
        error = parser.error();
        return;
      }
      if (st == ParseStatus::kEmpty) {
        ++empties;
      } else {
        Command c;
        for (auto a : parser.args()) c.emplace_back(a);
        commands.push_back(std::move(c));
      }
      buffer.erase(0, consumed);
    }
  }
};

std::string error_of(std::string_view input, bool authenticated = true) {
  Feed f;
  f.push(input, authenticated);
  return f.error;
}

TEST(RespParser, MultibulkCommandsAreViewsIntoTheInput) {
  std::string input = multibulk({"SET", "key", "value"});
  RequestParser p;
  size_t consumed = 0;
  ASSERT_EQ(p.parse(input, true, &consumed), ParseStatus::kCommand);
  EXPECT_EQ(consumed, input.size());
  ASSERT_EQ(p.args().size(), 3u);
  EXPECT_EQ(p.args()[2], "value");
  EXPECT_GE(p.args()[2].data(), input.data());  // no copy: points into the caller's bytes
  EXPECT_LT(p.args()[2].data(), input.data() + input.size());
}

TEST(RespParser, PipelinedMixOfMultibulkAndInline) {
  Feed f;
  f.push(multibulk({"PING"}) + "SET a b\r\n" + "GET a\n" + multibulk({"ECHO", ""}) + "\r\n" + "*0\r\n" + "*-1\r\n");
  ASSERT_TRUE(f.error.empty()) << f.error;
  EXPECT_EQ(f.commands, (std::vector<Command>{{"PING"}, {"SET", "a", "b"}, {"GET", "a"}, {"ECHO", ""}}));
  EXPECT_EQ(f.empties, 3);  // the blank line, *0 and *-1 are skipped like Redis does
  EXPECT_TRUE(f.buffer.empty());
}

TEST(RespParser, BulksAreBinarySafe) {
  std::string value("a\r\nb\0c*$", 8);
  Feed f;
  f.push(multibulk({"SET", "k", value}));
  ASSERT_EQ(f.commands.size(), 1u);
  EXPECT_EQ(f.commands[0][2], value);
}

// The same byte stream split at every possible point, byte by byte and in random chunks gives the same requests.
TEST(RespParser, IncrementalParsingAtEverySplitPoint) {
  std::string big(70000, 'x');
  std::string stream = multibulk({"SET", "key:1", "v"}) + "PING hello \"quoted arg\"\r\n" +
                       multibulk({"MSET", "a", big, "b", std::string("\0\r\n", 3)}) + "\r\n" + "GET 'single'\n" +
                       multibulk({"GET", "key:1"});
  Feed whole;
  whole.push(stream);
  ASSERT_TRUE(whole.error.empty()) << whole.error;
  ASSERT_EQ(whole.commands.size(), 5u);

  for (size_t split = 0; split <= stream.size(); split += (split < 200 || split > stream.size() - 200) ? 1 : 997) {
    Feed f;
    f.push(std::string_view(stream).substr(0, split));
    f.push(std::string_view(stream).substr(split));
    ASSERT_TRUE(f.error.empty()) << "split " << split << ": " << f.error;
    ASSERT_EQ(f.commands, whole.commands) << "split at " << split;
  }
  Feed bytewise;
  for (char ch : stream) bytewise.push(std::string_view(&ch, 1));
  EXPECT_EQ(bytewise.commands, whole.commands);

  std::mt19937 rng(42);
  for (int trial = 0; trial < 50; ++trial) {
    Feed f;
    size_t pos = 0;
    while (pos < stream.size()) {
      size_t n = std::min<size_t>(stream.size() - pos, 1 + rng() % 4000);
      f.push(std::string_view(stream).substr(pos, n));
      pos += n;
    }
    ASSERT_EQ(f.commands, whole.commands) << "trial " << trial;
  }
}

TEST(RespParser, WantsTheRestOfALargeBulk) {
  RequestParser p;
  std::string head = "*2\r\n$3\r\nSET\r\n$100000\r\n" + std::string(1000, 'v');
  size_t consumed = 0;
  EXPECT_EQ(p.parse(head, true, &consumed), ParseStatus::kIncomplete);
  EXPECT_EQ(p.bytes_wanted(), 100000u - 1000u + 2u);
}

TEST(RespParser, InlineSplittingFollowsRedis) {
  std::vector<std::string> out;
  ASSERT_TRUE(split_inline_args(R"(set "a b" 'c d' plain)", &out));
  EXPECT_EQ(out, (std::vector<std::string>{"set", "a b", "c d", "plain"}));
  ASSERT_TRUE(split_inline_args(R"(echo "\x41\x4a\n\t\\\"" 'it\'s')", &out));
  EXPECT_EQ(out, (std::vector<std::string>{"echo", "AJ\n\t\\\"", "it's"}));
  ASSERT_TRUE(split_inline_args("   \t ", &out));
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(split_inline_args(R"(a"b c"d)", &out));  // a closing quote must end the argument
  EXPECT_FALSE(split_inline_args(R"(set "unterminated)", &out));
  EXPECT_FALSE(split_inline_args("set 'unterminated", &out));
  ASSERT_TRUE(split_inline_args(R"(x"in quotes")", &out));  // a quote mid-token opens quoting, as sdssplitargs
  EXPECT_EQ(out, (std::vector<std::string>{"xin quotes"}));
}

TEST(RespParser, ProtocolErrorsUseRedisWording) {
  EXPECT_EQ(error_of("*x\r\n"), "Protocol error: invalid multibulk length");
  EXPECT_EQ(error_of("*+1\r\n"), "Protocol error: invalid multibulk length");
  EXPECT_EQ(error_of("*01\r\n"), "Protocol error: invalid multibulk length");
  EXPECT_EQ(error_of("*1 \r\n"), "Protocol error: invalid multibulk length");
  EXPECT_EQ(error_of("*1\rX"), "Protocol error: invalid multibulk length");
  EXPECT_EQ(error_of("*1048577\r\n"), "Protocol error: invalid multibulk length");  // over 1M elements
  EXPECT_EQ(error_of("*1048576\r\n"), "");                                          // exactly 1M: waits for them
  EXPECT_EQ(error_of("*1\r\n:4\r\n"), "Protocol error: expected '$', got ':'");
  EXPECT_EQ(error_of("*1\r\n*1\r\n"), "Protocol error: expected '$', got '*'");
  EXPECT_EQ(error_of("*1\r\n$x\r\n"), "Protocol error: invalid bulk length");
  EXPECT_EQ(error_of("*1\r\n$-1\r\n"), "Protocol error: invalid bulk length");
  EXPECT_EQ(error_of("*1\r\n$+4\r\n"), "Protocol error: invalid bulk length");
  EXPECT_EQ(error_of("*1\r\n$536870913\r\n"), "Protocol error: invalid bulk length");  // over 512 MB
  EXPECT_EQ(error_of("*1\r\n$536870912\r\n"), "");                                     // exactly 512 MB is allowed
  EXPECT_EQ(error_of("*1\r\n$99999999999999999999999\r\n"), "Protocol error: invalid bulk length");
  EXPECT_EQ(error_of("*1\r\n$4\r\nPINGxx"), "Protocol error: expected CRLF after bulk data");  // wrong length
  EXPECT_EQ(error_of("*" + std::string(70000, '1')), "Protocol error: too big mbulk count string");
  EXPECT_EQ(error_of("*1\r\n$" + std::string(70000, '1')), "Protocol error: too big bulk count string");
  EXPECT_EQ(error_of(std::string(70000, 'x')), "Protocol error: too big inline request");
  EXPECT_EQ(error_of(std::string(70000, 'x') + "\r\n"), "Protocol error: too big inline request");
  EXPECT_EQ(error_of("set \"a b\r\n"), "Protocol error: unbalanced quotes in request");
  EXPECT_EQ(error_of(std::string(60000, 'x')), "");  // under the inline limit: waits for the newline
}

TEST(RespParser, UnauthenticatedClientsGetRedisTighterLimits) {
  EXPECT_EQ(error_of("*11\r\n", false), "Protocol error: unauthenticated multibulk length");
  EXPECT_EQ(error_of("*10\r\n", false), "");
  EXPECT_EQ(error_of("*1\r\n$16385\r\n", false), "Protocol error: unauthenticated bulk length");
  EXPECT_EQ(error_of("*1\r\n$16384\r\n", false), "");
  EXPECT_EQ(error_of("*11\r\n", true), "");
}

TEST(RespParser, ErrorResetsTheParser) {
  RequestParser p;
  size_t consumed = 0;
  EXPECT_EQ(p.parse("*1\r\n$x\r\n", true, &consumed), ParseStatus::kError);
  std::string ping = multibulk({"PING"});
  EXPECT_EQ(p.parse(ping, true, &consumed), ParseStatus::kCommand);
}

TEST(RespParser, Int64FollowsRedisString2ll) {
  int64_t v = 0;
  EXPECT_TRUE(parse_int64("0", &v) && v == 0);
  EXPECT_TRUE(parse_int64("-17", &v) && v == -17);
  EXPECT_TRUE(parse_int64("9223372036854775807", &v) && v == INT64_MAX);
  EXPECT_TRUE(parse_int64("-9223372036854775808", &v) && v == INT64_MIN);
  for (const char* bad : {"", "-", "-0", "01", "+1", " 1", "1 ", "1.5", "9223372036854775808", "-9223372036854775809",
                          "123456789012345678901", "18446744073709551616", "0x10"}) {
    EXPECT_FALSE(parse_int64(bad, &v)) << bad;
  }
}

}  // namespace
}  // namespace rdx::resp
