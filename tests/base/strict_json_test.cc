#include "base/strict_json.h"

#include <gtest/gtest.h>

namespace dv {
namespace {

JsonProblem Refused(std::string_view text) {
  nlohmann::json out;
  JsonProblem problem;
  EXPECT_FALSE(ParseJsonStrict(text, out, problem)) << text;
  return problem;
}

TEST(StrictJsonTest, ParsesWhatNlohmannParses) {
  nlohmann::json out;
  JsonProblem problem;
  const std::string text = R"({"a": [1, {"b": 2}, {"b": 3}], "c": {"a": {"a": null}}, "d": "x"})";
  ASSERT_TRUE(ParseJsonStrict(text, out, problem)) << problem.message;
  EXPECT_EQ(out, nlohmann::json::parse(text));
  // The same key in sibling or nested objects is not a duplicate.
  EXPECT_EQ(out["a"][2]["b"], 3);
  EXPECT_TRUE(ParseJsonStrict("[]", out, problem));
  EXPECT_TRUE(ParseJsonStrict("  \"s\"\n", out, problem));
}

TEST(StrictJsonTest, RefusesATopLevelDuplicateWithBothLines) {
  // nlohmann::json alone keeps the last "payload"; a reader that keeps the first sees another
  // envelope.
  const JsonProblem p =
      Refused("{\n  \"payload\": \"good\",\n  \"x\": 1,\n  \"payload\": \"bad\"\n}");
  EXPECT_EQ(p.kind, JsonProblem::Kind::kDuplicateKey);
  EXPECT_EQ(p.line, 4u);
  EXPECT_EQ(p.message, "duplicate key \"payload\" (first at line 2)");
  EXPECT_EQ(p.Where("env.json"), "env.json:4: duplicate key \"payload\" (first at line 2)");
}

TEST(StrictJsonTest, RefusesDuplicatesAtAnyDepth) {
  EXPECT_EQ(Refused(R"({"layers": [{"q": {"k": 1, "k": 2}}]})").kind,
            JsonProblem::Kind::kDuplicateKey);
  EXPECT_EQ(Refused(R"([[{"a": 1}, {"b": 1, "b": 1}]])").kind, JsonProblem::Kind::kDuplicateKey);
  // The same value twice is still two keys.
  EXPECT_EQ(Refused(R"({"a": 1, "a": 1})").kind, JsonProblem::Kind::kDuplicateKey);
  // Escapes spell the same key.
  EXPECT_EQ(Refused(R"({"ab": 1, "a\u0062": 2})").kind, JsonProblem::Kind::kDuplicateKey);
}

TEST(StrictJsonTest, MalformedJsonNamesTheLine) {
  const JsonProblem p = Refused("{\n\"a\": 1,\n\"b\": ]\n}");
  EXPECT_EQ(p.kind, JsonProblem::Kind::kMalformed);
  EXPECT_EQ(p.line, 3u);
  EXPECT_EQ(p.Describe().rfind("malformed JSON (", 0), 0u) << p.Describe();
  EXPECT_EQ(Refused("").kind, JsonProblem::Kind::kMalformed);
  EXPECT_EQ(Refused("{} {}").kind, JsonProblem::Kind::kMalformed);
}

// nlohmann::json reports a number beyond a double as out_of_range, not as a parse error; it is
// malformed input all the same, never an exception of another kind.
TEST(StrictJsonTest, NumberOverflowIsMalformed) {
  const JsonProblem p = Refused("{\n\"eps\": 1e3093}");
  EXPECT_EQ(p.kind, JsonProblem::Kind::kMalformed);
  EXPECT_EQ(p.line, 2u);
  EXPECT_NE(p.message.find("number overflow"), std::string::npos) << p.message;
  EXPECT_THROW(ParseJsonStrict("[-1e400]", "x.json"), JsonError);
}

TEST(StrictJsonTest, ThrowingFormNamesTheSource) {
  try {
    ParseJsonStrict(R"({"a": 1, "a": 2})", "cfg.json");
    FAIL() << "a duplicate key was accepted";
  } catch (const JsonError& e) {
    EXPECT_STREQ(e.what(), "cfg.json:1: duplicate key \"a\" (first at line 1)");
  }
  EXPECT_EQ(ParseJsonStrict(R"({"a": 1})", "cfg.json")["a"], 1);
}

}  // namespace
}  // namespace dv
