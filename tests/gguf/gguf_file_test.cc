// The GGUF container and the dequantizers against gguf-py: files written by GGUFWriter, offsets
// and metadata as GGUFReader reads them, values as gguf.quants.dequantize computes them
// (tests/data/gguf/expected.json, written by scripts/gguf/make_gguf_fixtures.py).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "gguf/dequantize.h"
#include "gguf/gguf_file.h"
#include "tests/tokenizer/qwen3_test_data.h"

namespace dv::gguf {
namespace {

constexpr int kMaxPrintedMismatches = 5;

std::string DataPath(const std::string& name) {
  return std::string(DV_GGUF_TEST_DATA_DIR) + "/" + name;
}

nlohmann::json Expected() {
  std::ifstream in(DataPath("expected.json"));
  return nlohmann::json::parse(in);
}

using tok::testing::FromHex;

// Bitwise equal, or both NaN (ggml defines no NaN payloads for arithmetic results).
bool SameFloat(float actual, uint32_t expected_bits) {
  const auto expected = std::bit_cast<float>(expected_bits);
  if (std::isnan(expected)) return std::isnan(actual);
  return std::bit_cast<uint32_t>(actual) == expected_bits;
}

void CheckMetadata(const GgufFile& f, const nlohmann::json& expected) {
  ASSERT_EQ(f.metadata().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto& e = expected[i];
    const MetadataEntry& m = f.metadata()[i];
    SCOPED_TRACE(e["key"].get<std::string>());
    EXPECT_EQ(m.key, e["key"].get<std::string>());
    EXPECT_STREQ(ValueTypeName(m.value.type()), e["type"].get<std::string>().c_str());
    const std::string element = e.contains("element_type") ? e["element_type"].get<std::string>()
                                                           : e["type"].get<std::string>();
    EXPECT_STREQ(ValueTypeName(m.value.element_type()), element.c_str());
    const auto& values = e["values"];
    ASSERT_EQ(m.value.size(), values.size());
    for (uint64_t k = 0; k < m.value.size(); ++k) {
      const auto& v = values[k];
      switch (m.value.element_type()) {
        case ValueType::kString:
          EXPECT_EQ(m.value.AsString(k), FromHex(v.get<std::string>()));
          break;
        case ValueType::kBool:
          EXPECT_EQ(m.value.AsBool(k), v.get<bool>());
          break;
        case ValueType::kFloat32:
          EXPECT_EQ(std::bit_cast<uint32_t>(static_cast<float>(m.value.AsFloat(k))),
                    v.get<uint32_t>());
          break;
        case ValueType::kFloat64:
          EXPECT_EQ(std::bit_cast<uint64_t>(m.value.AsFloat(k)), v.get<uint64_t>());
          break;
        case ValueType::kUint64:
          EXPECT_EQ(m.value.AsUint64(k), v.get<uint64_t>());
          break;
        default:
          EXPECT_EQ(m.value.AsInt(k).value(), v.get<int64_t>());
      }
    }
  }
}

// `with_values`: the fixture holds gguf-py's dequantized values of every dequantizable tensor
// (llama_tiny's are checked in Hugging Face layout by llama_model_test.cc instead).
void CheckFile(const std::string& name, bool with_values = true) {
  const nlohmann::json e = Expected()["files"][name];
  const GgufFile f = GgufFile::Open(DataPath(name));
  EXPECT_EQ(f.version(), e["version"].get<uint32_t>());
  EXPECT_EQ(f.alignment(), e["alignment"].get<uint32_t>());
  EXPECT_EQ(f.data_offset(), e["data_offset"].get<uint64_t>());
  CheckMetadata(f, e["metadata"]);
  const auto& tensors = e["tensors"];
  ASSERT_EQ(f.tensors().size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& et = tensors[i];
    const TensorInfo& t = f.tensors()[i];
    SCOPED_TRACE(et["name"].get<std::string>());
    EXPECT_EQ(t.name, et["name"].get<std::string>());
    EXPECT_EQ(GgmlTypeName(t.type), et["type"].get<std::string>());
    EXPECT_EQ(t.dims, et["dims"].get<std::vector<int64_t>>());
    EXPECT_EQ(t.offset, et["offset"].get<uint64_t>());
    EXPECT_EQ(t.nbytes, et["nbytes"].get<uint64_t>());
    EXPECT_EQ(f.FindTensor(t.name), &t);
    if (!with_values) continue;
    if (!et.contains("bits")) {
      EXPECT_FALSE(CanDequantize(t.type));
      continue;
    }
    const auto bits = et["bits"].get<std::vector<uint32_t>>();
    const std::vector<float> values = f.Dequantize(t);
    ASSERT_EQ(values.size(), bits.size());
    int mismatches = 0;
    for (size_t k = 0; k < bits.size(); ++k) {
      if (!SameFloat(values[k], bits[k]) && ++mismatches <= kMaxPrintedMismatches) {
        ADD_FAILURE() << "element " << k << ": expected bits 0x" << std::hex << bits[k]
                      << ", got 0x" << std::bit_cast<uint32_t>(values[k]);
      }
    }
    EXPECT_EQ(mismatches, 0);
  }
}

TEST(GgufFileTest, EveryValueTypeAndDequantizedTypeMatchesGgufPy) { CheckFile("types.gguf"); }

TEST(GgufFileTest, CustomAlignmentAndVersion2MatchGgufPy) { CheckFile("aligned64_v2.gguf"); }

TEST(GgufFileTest, LlamaTinyLayoutMatchesGgufPy) { CheckFile("llama_tiny.gguf", false); }

TEST(GgufFileTest, TypedGettersConvertAndReportWrongTypes) {
  const GgufFile f = GgufFile::Open(DataPath("types.gguf"));
  EXPECT_EQ(f.GetInt("test.uint32"), 4000000000);
  EXPECT_EQ(f.GetInt("test.int8"), -100);
  EXPECT_EQ(f.GetIntOr("test.absent", 7), 7);
  EXPECT_EQ(static_cast<float>(f.GetFloat("test.float32")), 0.1f);
  EXPECT_EQ(f.GetFloat("test.float64"), -1.0 / 3.0);
  EXPECT_TRUE(f.GetBoolOr("test.bool_true", false));
  EXPECT_EQ(f.GetString("general.architecture"), "fixture");
  EXPECT_EQ(f.GetString("test.string_with_nul"), std::string_view("a\0b", 3));
  EXPECT_EQ(f.GetStringArray("test.array.string").size(), 3u);
  EXPECT_EQ(f.GetIntArray("test.array.int16"), (std::vector<int64_t>{-32768, 32767}));
  const auto message = [&](auto call) {
    try {
      call();
    } catch (const GgufError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string path = DataPath("types.gguf");
  EXPECT_EQ(message([&] { f.GetInt("test.uint64"); }),
            path + ": metadata test.uint64 is larger than 2^63 - 1");
  EXPECT_EQ(message([&] { f.GetInt("test.string"); }),
            path + ": metadata test.string is a STRING, not an integer");
  EXPECT_EQ(message([&] { f.GetString("test.array.uint8"); }),
            path + ": metadata test.array.uint8 is an ARRAY of UINT8, not a STRING");
  EXPECT_EQ(message([&] { f.GetFloat("llama.missing"); }),
            path + ": metadata llama.missing is missing");
  EXPECT_EQ(message([&] { f.GetIntArray("test.array.uint64"); }),
            path + ": metadata test.array.uint64[0] is larger than 2^63 - 1");
}

TEST(GgufFileTest, UnsupportedTypesAreOneLineErrorsNamingTensorAndType) {
  const GgufFile f = GgufFile::Open(DataPath("types.gguf"));
  const std::string path = DataPath("types.gguf");
  for (const auto& [name, type] :
       {std::pair{"q5_0.unsupported", "Q5_0"}, std::pair{"q6_k.unsupported", "Q6_K"},
        std::pair{"i32.unsupported", "I32"}}) {
    try {
      f.Dequantize(*f.FindTensor(name));
      ADD_FAILURE() << name << " was dequantized";
    } catch (const GgufError& e) {
      EXPECT_EQ(std::string(e.what()),
                path + ": tensor " + name + " has type " + type +
                    ", which cannot be dequantized (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1)");
    }
  }
}

TEST(GgufFileTest, ShapeIsTheReverseOfGgmlDims) {
  const GgufFile f = GgufFile::Open(DataPath("types.gguf"));
  const TensorInfo* t = f.FindTensor("f32.3d");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dims, (std::vector<int64_t>{4, 3, 2}));
  EXPECT_EQ(t->Shape(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(t->NumElements(), 24);
}

TEST(GgufFileTest, DescribeValueSummarizesArrays) {
  const GgufFile f = GgufFile::Open(DataPath("types.gguf"));
  EXPECT_EQ(DescribeValue(*f.Find("test.uint8")), "250");
  EXPECT_EQ(DescribeValue(*f.Find("test.array.string"), 2), "[STRING x 3] \"\", \"x\", ...");
  EXPECT_EQ(DescribeValue(*f.Find("test.string_with_nul")), "\"a\\x00b\"");
  EXPECT_EQ(DescribeValue(*f.Find("test.array.bool")), "[BOOL x 3] true, false, true");
  EXPECT_EQ(DescribeValue(*f.Find("test.uint64")), "18446744073709551615");
}

// The reader's binary16 conversion against the compiler's own, for all 65,536 bit patterns.
TEST(DequantizeTest, HalfToFloatMatchesTheCompilerForEveryBitPattern) {
#if defined(__FLT16_MAX__)
  int mismatches = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto half = std::bit_cast<_Float16>(static_cast<uint16_t>(h));
    const auto expected = static_cast<float>(half);
    const float actual = HalfToFloat(static_cast<uint16_t>(h));
    const bool same =
        std::isnan(expected)
            ? std::isnan(actual) && (std::bit_cast<uint32_t>(actual) & 0x80000000u) ==
                                        (std::bit_cast<uint32_t>(expected) & 0x80000000u)
            : std::bit_cast<uint32_t>(actual) == std::bit_cast<uint32_t>(expected);
    if (!same && ++mismatches <= kMaxPrintedMismatches) {
      ADD_FAILURE() << "half 0x" << std::hex << h << ": expected " << expected << ", got "
                    << actual;
    }
  }
  EXPECT_EQ(mismatches, 0);
#else
  GTEST_SKIP() << "this compiler has no _Float16";
#endif
}

TEST(DequantizeTest, HalfToFloatKeepsNanPayloads) {
  // numpy's float16 -> float32 keeps the payload bits (shifted), which gguf-py relies on.
  EXPECT_EQ(std::bit_cast<uint32_t>(HalfToFloat(0x7C01)), 0x7F802000u);
  EXPECT_EQ(std::bit_cast<uint32_t>(HalfToFloat(0xFE00)), 0xFFC00000u);
  EXPECT_EQ(std::bit_cast<uint32_t>(HalfToFloat(0x0001)), 0x33800000u);  // 2^-24
  EXPECT_EQ(std::bit_cast<uint32_t>(BFloat16ToFloat(0x3F80)), 0x3F800000u);
}

}  // namespace
}  // namespace dv::gguf
