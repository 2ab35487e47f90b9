#include "resp/resp_writer.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "resp/command_table.h"

namespace rdx::resp {
namespace {

template <typename F>
std::string encode(int protocol, F&& f) {
  std::string out;
  ReplyWriter w(&out, protocol);
  f(w);
  return out;
}

TEST(RespWriter, ScalarsAreTheSameInBothProtocols) {
  for (int proto : {2, 3}) {
    EXPECT_EQ(encode(proto, [](ReplyWriter& w) { w.simple("PONG"); }), "+PONG\r\n");
    EXPECT_EQ(encode(proto, [](ReplyWriter& w) { w.ok(); }), "+OK\r\n");
    EXPECT_EQ(encode(proto, [](ReplyWriter& w) { w.queued(); }), "+QUEUED\r\n");
    EXPECT_EQ(encode(proto, [](ReplyWriter& w) { w.integer(0); }), ":0\r\n");
    EXPECT_EQ(encode(proto, [](ReplyWriter& w) { w.integer(INT64_MIN); }), ":-9223372036854775808\r\n");
    EXPECT_EQ(encode(proto, [](ReplyWriter& w) { w.integer(INT64_MAX); }), ":9223372036854775807\r\n");
    EXPECT_EQ(encode(proto, [](ReplyWriter& w) { w.bulk(""); }), "$0\r\n\r\n");
    EXPECT_EQ(encode(proto, [](ReplyWriter& w) { w.bulk(std::string("a\0\r\n", 4)); }),
              std::string("$4\r\na\0\r\n\r\n", 10));
    EXPECT_EQ(encode(proto, [](ReplyWriter& w) { w.array(3); }), "*3\r\n");
  }
}

TEST(RespWriter, ErrorsAreOneLine) {
  EXPECT_EQ(encode(2, [](ReplyWriter& w) { w.error("ERR unknown command 'a\r\nb'"); }),
            "-ERR unknown command 'a  b'\r\n");
}

TEST(RespWriter, Resp3TypesAndTheirResp2Forms) {
  EXPECT_EQ(encode(3, [](ReplyWriter& w) { w.null(); }), "_\r\n");
  EXPECT_EQ(encode(2, [](ReplyWriter& w) { w.null(); }), "$-1\r\n");
  EXPECT_EQ(encode(3, [](ReplyWriter& w) { w.null_array(); }), "_\r\n");
  EXPECT_EQ(encode(2, [](ReplyWriter& w) { w.null_array(); }), "*-1\r\n");
  EXPECT_EQ(encode(3, [](ReplyWriter& w) { w.map(2); }), "%2\r\n");
  EXPECT_EQ(encode(2, [](ReplyWriter& w) { w.map(2); }), "*4\r\n");
  EXPECT_EQ(encode(3, [](ReplyWriter& w) { w.set(5); }), "~5\r\n");
  EXPECT_EQ(encode(2, [](ReplyWriter& w) { w.set(5); }), "*5\r\n");
  EXPECT_EQ(encode(3, [](ReplyWriter& w) { w.boolean(true); }), "#t\r\n");
  EXPECT_EQ(encode(3, [](ReplyWriter& w) { w.boolean(false); }), "#f\r\n");
  EXPECT_EQ(encode(2, [](ReplyWriter& w) { w.boolean(true); }), ":1\r\n");
  EXPECT_EQ(encode(3, [](ReplyWriter& w) { w.dbl(1.5); }), ",1.5\r\n");
  EXPECT_EQ(encode(2, [](ReplyWriter& w) { w.dbl(1.5); }), "$3\r\n1.5\r\n");
  EXPECT_EQ(encode(3, [](ReplyWriter& w) { w.dbl(-1.0 / 0.0); }), ",-inf\r\n");
  EXPECT_EQ(encode(3, [](ReplyWriter& w) { w.verbatim("txt", "# Server\r\n"); }), "=14\r\ntxt:# Server\r\n\r\n");
  EXPECT_EQ(encode(2, [](ReplyWriter& w) { w.verbatim("txt", "# Server\r\n"); }), "$10\r\n# Server\r\n\r\n");
}

TEST(RespWriter, ProtocolCanChangeMidStream) {  // HELLO 3 answers in RESP3 already
  std::string out;
  ReplyWriter w(&out, 2);
  w.null();
  w.set_protocol(3);
  w.null();
  EXPECT_EQ(out, "$-1\r\n_\r\n");
}

TEST(CommandTable, LookupIsCaseInsensitiveAndExact) {
  ASSERT_NE(find_command("GET"), nullptr);
  EXPECT_EQ(find_command("gEt")->id, Cmd::kGet);
  EXPECT_EQ(find_command("ge"), nullptr);
  EXPECT_EQ(find_command("gett"), nullptr);
  EXPECT_EQ(find_command(""), nullptr);
  EXPECT_EQ(find_command(std::string(100, 'g')), nullptr);
  EXPECT_EQ(find_command(std::string("get\0", 4)), nullptr);
}

TEST(CommandTable, NamesAreUniqueLowerCaseAndAritiesMatchRedis) {
  std::set<std::string_view> names;
  for (const CommandSpec& c : all_commands()) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    for (char ch : c.name) EXPECT_FALSE(ch >= 'A' && ch <= 'Z') << c.name;
    EXPECT_NE(c.arity, 0) << c.name;
    EXPECT_FALSE(c.summary.empty()) << c.name;
  }
  const CommandSpec& get = *find_command("get");
  EXPECT_TRUE(arity_ok(get, 2));
  EXPECT_FALSE(arity_ok(get, 1));
  EXPECT_FALSE(arity_ok(get, 3));
  const CommandSpec& set = *find_command("set");
  EXPECT_FALSE(arity_ok(set, 2));
  EXPECT_TRUE(arity_ok(set, 3));
  EXPECT_TRUE(arity_ok(set, 9));
  EXPECT_EQ(find_command("mset")->key_step, 2);
  EXPECT_TRUE(find_command("auth")->flags & kFlagNoAuth);
  EXPECT_FALSE(find_command("get")->flags & kFlagNoAuth);
}

}  // namespace
}  // namespace rdx::resp
