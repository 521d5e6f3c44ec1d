#include "base/canonical_json.h"

#include <stdexcept>

#include <gtest/gtest.h>

namespace dv {
namespace {

TEST(CanonicalJsonTest, SortsKeysAndOmitsWhitespace) {
  const nlohmann::json value =
      nlohmann::json::parse(R"({ "b": [1, 2, {"z": 1, "a": 2}], "a": "x" })");
  EXPECT_EQ(CanonicalJson(value), R"({"a":"x","b":[1,2,{"a":2,"z":1}]})");
}

TEST(CanonicalJsonTest, IsKeyOrderIndependent) {
  const nlohmann::json first =
      nlohmann::json::parse(R"({"cpu": "x", "cores": 8, "isa": {"avx2": true, "fma": false}})");
  const nlohmann::json second =
      nlohmann::json::parse(R"({"isa": {"fma": false, "avx2": true}, "cores": 8, "cpu": "x"})");
  EXPECT_EQ(CanonicalJson(first), CanonicalJson(second));
}

TEST(CanonicalJsonTest, KeepsUtf8AndLargeIntegers) {
  nlohmann::json value;
  value["name"] = "caf\xc3\xa9";
  value["big"] = uint64_t{18446744073709551615u};
  value["negative"] = int64_t{-9223372036854775807} - 1;
  value["none"] = nullptr;
  EXPECT_EQ(CanonicalJson(value),
            "{\"big\":18446744073709551615,\"name\":\"caf\xc3\xa9\","
            "\"negative\":-9223372036854775808,\"none\":null}");
}

TEST(CanonicalJsonTest, RejectsFloatsNamingThePointer) {
  nlohmann::json value = {{"a", {{"b", nlohmann::json::array({1, 2.5})}}}};
  try {
    CanonicalJson(value);
    FAIL() << "a float was accepted";
  } catch (const CanonicalJsonError& e) {
    EXPECT_NE(std::string(e.what()).find("/a/b/1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(CanonicalJson(1.0), CanonicalJsonError);
  EXPECT_THROW(CanonicalJson(nlohmann::json::parse("[0.0]")), CanonicalJsonError);
}

TEST(CanonicalJsonTest, RejectsInvalidUtf8) {
  EXPECT_THROW(CanonicalJson(nlohmann::json("\xff\xfe")), CanonicalJsonError);
}

}  // namespace
}  // namespace dv
