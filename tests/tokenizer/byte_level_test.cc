#include "tokenizer/byte_level.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace dv::tok {
namespace {

TEST(TokenizerByteLevelTest, MapsBytesLikeGpt2) {
  EXPECT_EQ(ByteToUnicode('A'), U'A');
  EXPECT_EQ(ByteToUnicode('!'), U'!');
  EXPECT_EQ(ByteToUnicode(0x00), U'\u0100');
  EXPECT_EQ(ByteToUnicode(' '), U'\u0120');   // Ġ
  EXPECT_EQ(ByteToUnicode('\n'), U'\u010A');  // Ċ
  EXPECT_EQ(ByteToUnicode(0x7F), U'\u0121');
  EXPECT_EQ(ByteToUnicode(0xA0), U'\u0142');
  EXPECT_EQ(ByteToUnicode(0xAD), U'\u0143');
  EXPECT_EQ(ByteToUnicode(0xE9), U'\u00E9');
}

TEST(TokenizerByteLevelTest, IsABijectionWithItsInverse) {
  std::set<char32_t> images;
  for (unsigned b = 0; b < 256; ++b) {
    const char32_t cp = ByteToUnicode(static_cast<uint8_t>(b));
    images.insert(cp);
    EXPECT_EQ(UnicodeToByte(cp), static_cast<int>(b));
  }
  EXPECT_EQ(images.size(), 256u);
  EXPECT_EQ(UnicodeToByte(U'\u0144'), -1);
  EXPECT_EQ(UnicodeToByte(U'\u4E2D'), -1);
}

TEST(TokenizerByteLevelTest, RoundTripsAllBytes) {
  std::string all;
  for (unsigned b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_EQ(ByteLevelToBytes(BytesToByteLevel(all)), all);
  EXPECT_EQ(BytesToByteLevel(" the"), "\xC4\xA0the");
}

TEST(TokenizerByteLevelTest, KeepsTokensThatAreNotByteLevelAsTheyAre) {
  EXPECT_EQ(ByteLevelToBytes("<|im_start|>"), "<|im_start|>");
  EXPECT_EQ(ByteLevelToBytes("\xE4\xB8\xAD"), "\xE4\xB8\xAD");  // 中 is no byte's image
  EXPECT_EQ(ByteLevelToBytes("\xFF"), "\xFF");
}

}  // namespace
}  // namespace dv::tok
