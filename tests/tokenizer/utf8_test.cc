#include "tokenizer/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace dv::tok {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(TokenizerUtf8Test, AcceptsWellFormedAndRejectsIllFormed) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii \x7f"));
  EXPECT_TRUE(IsValidUtf8("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xF4\x8F\xBF\xBF"));
  for (const char* bad :
       {"\x80", "\xC0\x80", "\xC1\xBF", "\xE0\x9F\xBF", "\xED\xA0\x80", "\xF0\x8F\xBF\xBF",
        "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\xFF", "\xC3", "\xE2\x82", "\xF0\x9F\x98"}) {
    EXPECT_FALSE(IsValidUtf8(bad)) << bad;
  }
}

TEST(TokenizerUtf8Test, RepairReplacesMaximalSubparts) {
  // The example of Unicode §3.9 ("U+FFFD Substitution of Maximal Subparts").
  EXPECT_EQ(RepairUtf8("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64"),
            "a" + kFffd + kFffd + kFffd + "b" + kFffd + "c" + kFffd + kFffd + "d");
  // Surrogates and overlongs: every byte is its own subpart, as Python decodes them.
  EXPECT_EQ(RepairUtf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);
  EXPECT_EQ(RepairUtf8("\xC0\x80"), kFffd + kFffd);
  EXPECT_EQ(RepairUtf8("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);
  // A truncated sequence is one subpart, at the end or before another character.
  EXPECT_EQ(RepairUtf8("a\xE2\x82"), "a" + kFffd);
  EXPECT_EQ(RepairUtf8("\xE2\x82"
                       "a"),
            kFffd + "a");
  EXPECT_EQ(RepairUtf8("\xF0\x9F\x98"), kFffd);
  EXPECT_EQ(RepairUtf8("\xE2\x82\xE2\x82\xAC"), kFffd + "\xE2\x82\xAC");
  const std::string valid = "caf\xC3\xA9 \xF0\x9F\x98\x80";
  EXPECT_EQ(RepairUtf8(valid), valid);
}

TEST(TokenizerUtf8Test, EncodesAndDecodesEveryScalarValue) {
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string bytes;
    AppendUtf8(cp, bytes);
    ASSERT_TRUE(IsValidUtf8(bytes)) << std::hex << static_cast<uint32_t>(cp);
    char32_t decoded = 0;
    ASSERT_EQ(DecodeUtf8At(bytes, 0, decoded), bytes.size());
    ASSERT_EQ(decoded, cp);
  }
}

}  // namespace
}  // namespace dv::tok
