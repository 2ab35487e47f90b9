#include "checker/history_io.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "checker/tests/history_gen.h"

namespace rdx::checker {
namespace {

bool same(const txn::TxRecord& a, const txn::TxRecord& b) {
  if (a.id != b.id || a.type != b.type || a.start_ns != b.start_ns || a.end_ns != b.end_ns ||
      a.committed != b.committed || a.unknown != b.unknown || a.reads.size() != b.reads.size() ||
      a.writes.size() != b.writes.size()) {
    return false;
  }
  for (size_t i = 0; i < a.reads.size(); ++i) {
    if (a.reads[i].key != b.reads[i].key || a.reads[i].version != b.reads[i].version) return false;
  }
  for (size_t i = 0; i < a.writes.size(); ++i) {
    const auto &x = a.writes[i], &y = b.writes[i];
    if (x.key != y.key || x.version != y.version || x.deleted != y.deleted) return false;
  }
  return true;
}

Result<std::vector<txn::TxRecord>> parse(const std::string& text) {
  std::istringstream in(text);
  return read_history(in, "h.jsonl");
}

std::string error_of(const std::string& text) {
  auto r = parse(text);
  EXPECT_FALSE(r.is_ok()) << text;
  return r.is_ok() ? "" : r.status().message();
}

TEST(HistoryIo, RoundTripsRecordsIncludingBinaryKeys) {
  testing::GenOptions g;
  g.txns = 2000;
  auto h = testing::generate_history(g);
  txn::TxRecord odd;
  odd.id = 99999;
  odd.type = "Type \"quoted\" \\ \n";
  odd.start_ns = -5;  // clocks before the epoch are still integers
  odd.end_ns = 7;
  odd.committed = true;
  odd.reads.push_back({std::string("\0\x01\x7f\x80\xff key", 10), 3});
  odd.writes.push_back({std::string("\xc3\xa9", 2), 9, true});
  h.push_back(odd);
  txn::TxRecord unsure;
  unsure.id = 100000;
  unsure.unknown = true;
  unsure.writes.push_back({"k", 4, false});
  h.push_back(unsure);
  std::ostringstream out;
  HistoryWriter w(out);
  for (const auto& r : h) w.write(r);
  ASSERT_TRUE(w.ok());
  auto back = parse(out.str());
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  ASSERT_EQ(back->size(), h.size());
  for (size_t i = 0; i < h.size(); ++i) ASSERT_TRUE(same(h[i], (*back)[i])) << "record " << i;
}

TEST(HistoryIo, WritesTheDocumentedFormat) {
  txn::TxRecord r;
  r.id = 17;
  r.type = "SendPayment";
  r.start_ns = 100;
  r.end_ns = 250;
  r.committed = true;
  r.reads = {{"a", 4}, {"b", 0}};
  r.writes = {{"a", 5, false}, {"c", 7, true}};
  std::string line;
  append_record_json(r, line);
  EXPECT_EQ(line, R"({"id":17,"type":"SendPayment","start":100,"end":250,"committed":true,"reads":[["a",4],["b",0]],)"
                  R"("writes":[["a",5],["c",7,true]]})");
}

TEST(HistoryIo, MalformedFilesNameTheLine) {
  const std::string header = "{\"rdx_history\":1}\n";
  const std::string good = R"({"id":1,"start":0,"end":1,"committed":true})"
                           "\n";
  auto two = parse(header + good + "\n   \n" + good);  // blank lines skipped; duplicate ids are the checker's call
  ASSERT_TRUE(two.is_ok()) << two.status().to_string();
  EXPECT_EQ(two->size(), 2u);
  EXPECT_NE(error_of("").find("empty file"), std::string::npos);
  EXPECT_NE(error_of("{\"id\":1}\n").find("h.jsonl:1: not an rdx history file"), std::string::npos);
  EXPECT_NE(error_of("{\"rdx_history\":2}\n").find("unsupported history format version 2"), std::string::npos);
  EXPECT_NE(error_of(header + good + "{\"id\":2,\"start\":0,\n").find("h.jsonl:3: malformed JSON"), std::string::npos);
  EXPECT_NE(error_of(header + R"({"id":1,"start":0,"end":1,"committed":true,"bogus":1})")
                .find("h.jsonl:2: unknown field \"bogus\""),
            std::string::npos);
  EXPECT_NE(error_of(header + R"({"id":1,"start":0,"end":1})").find("missing field \"committed\""), std::string::npos);
  EXPECT_NE(error_of(header + R"({"id":-1,"start":0,"end":1,"committed":true})").find("id must be a non-negative"),
            std::string::npos);
  EXPECT_NE(error_of(header + R"({"id":1,"start":5,"end":1,"committed":true})").find("before start"),
            std::string::npos);
  EXPECT_NE(error_of(header + R"({"id":1,"start":0,"end":1,"committed":true,"reads":[["k"]]})")
                .find("reads[0] must be [key, version]"),
            std::string::npos);
  EXPECT_NE(error_of(header + R"({"id":1,"start":0,"end":1,"committed":true,"writes":[["k",0]]})").find("version 0"),
            std::string::npos);
  EXPECT_NE(
      error_of(header + R"({"id":1,"start":0,"end":1,"committed":true,"reads":[["\u0100",1]]})").find("above U+00FF"),
      std::string::npos);
  EXPECT_NE(error_of(header + "[1,2]\n").find("h.jsonl:2: expected a JSON object"), std::string::npos);
}

TEST(HistoryIo, AcceptsAnyValidJsonSpellingOfARecord) {
  // Other writers may order fields differently, add spaces and use any JSON escape.
  auto h = parse(
      "{\"rdx_history\":1,\"workload\":\"smallbank\",\"seed\":42}\n"
      " { \"committed\" : false , \"end\" : 9 , \"start\" : -3 , \"id\" : 0 ,"
      " \"writes\" : [ [ \"a\\/b\\n\\u00e9\u00e9\" , 0 , false ] ] , \"reads\" : [ ] }\r\n");
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  ASSERT_EQ(h->size(), 1u);
  const auto& r = h->front();
  EXPECT_EQ(r.id, 0u);
  EXPECT_EQ(r.start_ns, -3);
  EXPECT_FALSE(r.committed);
  ASSERT_EQ(r.writes.size(), 1u);
  EXPECT_EQ(r.writes[0].key, "a/b\n\xe9\xe9");
  EXPECT_FALSE(r.writes[0].deleted);
}

TEST(HistoryIo, RejectsWhatJsonOrTheFormatForbids) {
  const std::string header = "{\"rdx_history\":1}\n";
  const std::string rest = R"("start":0,"end":1,"committed":true})";
  EXPECT_NE(error_of(header + R"({"id":1,"id":2,)" + rest).find("duplicate field \"id\""), std::string::npos);
  EXPECT_NE(error_of(header + R"({"id":01,)" + rest).find("leading zero"), std::string::npos);
  EXPECT_NE(error_of(header + R"({"id":1.5,)" + rest).find("id must be an integer"), std::string::npos);
  EXPECT_NE(error_of(header + R"({"id":18446744073709551616,)" + rest).find("id is out of range"), std::string::npos);
  EXPECT_NE(error_of(header + R"({"id":1,"type":"abc)").find("unterminated string"), std::string::npos);
  EXPECT_NE(error_of(header + R"({"id":1,"type":"\q",)" + rest).find("valid escape"), std::string::npos);
  EXPECT_NE(error_of(header + "{\"id\":1,\"type\":\"a\tb\"," + rest).find("control character"), std::string::npos);
  EXPECT_NE(error_of(header + R"({"id":1,)" + rest + " x").find("end of line"), std::string::npos);
  EXPECT_NE(error_of(header + R"({"id":1,"committed":1,"start":0,"end":1})").find("committed must be a boolean"),
            std::string::npos);
  EXPECT_NE(error_of(header + R"({"id":1,"start":"0","end":1,"committed":true})").find("start must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of(header + R"({"id":1,"start":0,"end":1,"committed":true,"writes":[["k",1,"yes"]]})")
                .find("writes[0] deleted flag must be a boolean"),
            std::string::npos);
  EXPECT_NE(error_of(header + "{\"id\":1,\"type\":\"\xe2\x82\xac\"," + rest).find("above U+00FF"), std::string::npos);
  EXPECT_NE(error_of(header + R"({"id":1,"start":0,"end":1,"committed":true,"unknown":true})").find("not both"),
            std::string::npos);
  EXPECT_NE(error_of(header + R"({"id":1,"start":0,"end":1,"committed":false,"unknown":true,"writes":[["k",0]]})")
                .find("version 0"),
            std::string::npos);
  EXPECT_NE(error_of("garbage\n").find("h.jsonl:1: not an rdx history file"), std::string::npos);
}

#ifdef RDX_CHECK_BIN
// The CLI's exit status contract: 0 clean, 1 violations, 2 bad input.
TEST(RdxCheckCli, ExitStatusReflectsTheVerdict) {
  auto dir = std::filesystem::temp_directory_path() / ("rdx-check-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto run = [&](const std::string& file, const std::string& args = "") {
    std::string cmd = std::string(RDX_CHECK_BIN) + " " + args + " " + (dir / file).string() + " > " +
                      (dir / (file + ".out")).string() + " 2>&1";
    int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  testing::GenOptions g;
  g.txns = 5000;
  auto h = testing::generate_history(g);
  ASSERT_TRUE(write_history_file((dir / "good.jsonl").string(), h).is_ok());
  EXPECT_EQ(run("good.jsonl"), 0);
  EXPECT_EQ(run("good.jsonl", "--json"), 0);
  // A lost update on a fresh key: two increments both read version 0.
  int64_t t = h.back().end_ns + 10;
  h.push_back({1'000'001, "Increment", t, t + 50, true, {{"fresh", 0}}, {{"fresh", 1}}});
  h.push_back({1'000'002, "Increment", t, t + 50, true, {{"fresh", 0}}, {{"fresh", 2}}});
  ASSERT_TRUE(write_history_file((dir / "bad.jsonl").string(), h).is_ok());
  EXPECT_EQ(run("bad.jsonl"), 1);
  std::ofstream(dir / "broken.jsonl") << "{\"rdx_history\":1}\n{\"id\":1,\n";
  EXPECT_EQ(run("broken.jsonl"), 2);
  std::ifstream out(dir / "broken.jsonl.out");
  std::string text((std::istreambuf_iterator<char>(out)), {});
  EXPECT_NE(text.find("broken.jsonl:2: malformed JSON"), std::string::npos) << text;
  EXPECT_EQ(run("missing.jsonl"), 2);
  EXPECT_EQ(run("good.jsonl", "--no-such-flag"), 2);
  std::filesystem::remove_all(dir);
}
#endif

}  // namespace
}  // namespace rdx::checker
