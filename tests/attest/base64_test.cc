#include "attest/base64.h"

#include <gtest/gtest.h>

namespace dv::attest {
namespace {

TEST(Base64Test, EncodesWithStandardAlphabetAndPadding) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode(std::string("\xfb\xff\xfe", 3)), "+//+");
}

TEST(Base64Test, DecodesStandardPadded) {
  EXPECT_EQ(Base64Decode("Zg==").value(), "f");
  EXPECT_EQ(Base64Decode("Zm8=").value(), "fo");
  EXPECT_EQ(Base64Decode("Zm9vYmFy").value(), "foobar");
  EXPECT_EQ(Base64Decode("+//+").value(), std::string("\xfb\xff\xfe", 3));
  EXPECT_EQ(Base64Decode("").value(), "");
}

TEST(Base64Test, DecodesUrlSafeAlphabet) {
  EXPECT_EQ(Base64Decode("-__-").value(), std::string("\xfb\xff\xfe", 3));
  EXPECT_EQ(Base64Decode("-_8=").value(), std::string("\xfb\xff", 2));
}

TEST(Base64Test, DecodesUnpadded) {
  EXPECT_EQ(Base64Decode("Zg").value(), "f");
  EXPECT_EQ(Base64Decode("Zm8").value(), "fo");
  EXPECT_EQ(Base64Decode("-_8").value(), std::string("\xfb\xff", 2));
}

TEST(Base64Test, RoundTripsAllByteValues) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  for (size_t length = 0; length <= bytes.size(); length += 37) {
    const std::string part = bytes.substr(0, length);
    EXPECT_EQ(Base64Decode(Base64Encode(part)).value(), part) << "length " << length;
  }
}

TEST(Base64Test, RejectsGarbage) {
  EXPECT_FALSE(Base64Decode("Zm9v!").has_value());  // outside both alphabets
  EXPECT_FALSE(Base64Decode("Zm 9v").has_value());  // whitespace
  EXPECT_FALSE(Base64Decode("Z").has_value());      // impossible length
  EXPECT_FALSE(Base64Decode("Zg=").has_value());    // incomplete padding
  EXPECT_FALSE(Base64Decode("Zg===").has_value());  // too much padding
  EXPECT_FALSE(Base64Decode("Zm9v=").has_value());  // padding after a full quantum
  EXPECT_FALSE(Base64Decode("Z=g=").has_value());   // padding inside
  EXPECT_FALSE(Base64Decode("+/-_").has_value());   // both alphabets mixed
  EXPECT_FALSE(Base64Decode("Zh==").has_value());   // non-zero unused bits
  EXPECT_FALSE(Base64Decode("not base64 at all").has_value());
}

}  // namespace
}  // namespace dv::attest
