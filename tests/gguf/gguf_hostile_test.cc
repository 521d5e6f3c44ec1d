// Hostile and broken GGUF files: each is one GgufError line naming the file and the problem, never
// a crash, a hang or an allocation the file's size does not justify.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <random>
#include <string>

#include "gguf/gguf_file.h"
#include "tests/gguf/gguf_builder.h"
#include "tests/support/scratch_files.h"

namespace dv::gguf {
namespace {

using testing::ByteWriter;
using testing::GgufBuilder;
using namespace testing;  // value and ggml type ids

constexpr char kName[] = "hostile.gguf";

// The error for `bytes`, or "" if they open.
std::string OpenError(const std::vector<uint8_t>& bytes) {
  try {
    GgufFile::FromBytes(bytes, kName);
  } catch (const GgufError& e) {
    return e.what();
  }
  return "";
}

// Expects a one-line error naming the file and containing `fragment`.
void ExpectError(const std::vector<uint8_t>& bytes, const std::string& fragment) {
  const std::string error = OpenError(bytes);
  EXPECT_TRUE(error.starts_with(std::string(kName) + ": ")) << "error: '" << error << "'";
  EXPECT_NE(error.find(fragment), std::string::npos) << "error: '" << error << "'";
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

std::vector<uint8_t> ValidFile() {
  return GgufBuilder()
      .String("general.architecture", "test")
      .U32("test.count", 3)
      .F32Tensor("a", {8, 2})
      .Tensor("b", kGgmlQ8_0, {32}, std::vector<uint8_t>(34, 1))
      .Build();
}

TEST(GgufHostileTest, TheValidBaseOpens) {
  EXPECT_EQ(OpenError(ValidFile()), "");
  const std::vector<uint8_t> bytes = ValidFile();
  const GgufFile f = GgufFile::FromBytes(bytes, kName);
  EXPECT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.Dequantize(*f.FindTensor("b")).size(), 32u);
}

TEST(GgufHostileTest, EveryTruncationIsAnError) {
  const std::vector<uint8_t> full = ValidFile();
  // Cutting only the padding after the last tensor's data (b: 34 bytes at data offset 64) is
  // harmless; every shorter prefix must fail.
  const uint64_t data_end = GgufFile::FromBytes(full, kName).data_offset() + 64 + 34;
  for (size_t n = 0; n < full.size(); ++n) {
    const std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    const std::string error = OpenError(cut);
    if (error.empty()) {
      EXPECT_GE(n, data_end) << "prefix of " << n << " bytes opened";
      continue;
    }
    EXPECT_TRUE(error.starts_with("hostile.gguf: ")) << error;
  }
}

TEST(GgufHostileTest, HeaderProblems) {
  ExpectError({}, "shorter than the 4-byte magic");
  ExpectError(ByteWriter().Raw("GGU").bytes(), "shorter than the 4-byte magic");
  ExpectError(ByteWriter().Raw("GGML").U32(3).U64(0).U64(0).bytes(), "not a GGUF file");
  ExpectError(ByteWriter().Header(0, 0, 1).bytes(), "version 1 is not supported");
  ExpectError(ByteWriter().Header(0, 0, 4).bytes(), "unknown GGUF version 4");
  ExpectError(ByteWriter().Header(0, 0, 0x03000000).bytes(), "big-endian");
  ExpectError(ByteWriter().Raw("GGUF").U32(3).U64(0).bytes(), "truncated: metadata count");
  EXPECT_EQ(OpenError(ByteWriter().Header(0, 0).bytes()), "");  // an empty file is valid
}

TEST(GgufHostileTest, CountsBeyondTheFileAreRefusedBeforeAllocating) {
  ExpectError(ByteWriter().Header(0, uint64_t{1} << 62).bytes(),
              "metadata count 4611686018427387904");
  ExpectError(ByteWriter().Header(0, ~uint64_t{0}).bytes(), "cannot fit");
  ExpectError(ByteWriter().Header(~uint64_t{0}, 0).bytes(), "tensor count");
  ExpectError(ByteWriter().Header(uint64_t{1} << 40, 0).Raw(std::string(100, '\0')).bytes(),
              "cannot fit in the 100 bytes left");
  // An array whose length claims more elements than the file has bytes.
  for (uint32_t element : {kU8, kU64, kStr, kF64}) {
    ExpectError(
        ByteWriter().Header(0, 1).Str("k").U32(kArr).U32(element).U64(uint64_t{1} << 61).bytes(),
        "runs past the end of the file");
  }
}

TEST(GgufHostileTest, StringLengthsPastTheEnd) {
  const std::string tail(64, '\0');  // enough bytes left that the counts themselves fit
  ExpectError(ByteWriter().Header(0, 1).U64(~uint64_t{0}).Raw(tail).bytes(), "metadata key 0");
  ExpectError(ByteWriter().Header(0, 1).U64(1000).Raw(tail).bytes(), "runs past the end");
  ExpectError(ByteWriter().Header(0, 1).Str("k").U32(kStr).U64(uint64_t{1} << 63).Raw(tail).bytes(),
              "metadata k of 9223372036854775808 bytes");
  ExpectError(ByteWriter().Header(1, 0).U64(500).Raw(tail).bytes(), "tensor name 0");
  ExpectError(ByteWriter().Header(0, 1).Str("k").U32(kArr).U32(kStr).U64(2).Str("x").U64(9).bytes(),
              "metadata k[1]");
}

TEST(GgufHostileTest, BadValueTypes) {
  ExpectError(ByteWriter().Header(0, 1).Str("k").U32(13).U64(0).bytes(), "unknown value type 13");
  ExpectError(ByteWriter().Header(0, 1).Str("k").U32(kArr).U32(99).U64(0).bytes(),
              "unknown value type 99");
  ExpectError(ByteWriter().Header(0, 1).Str("k").U32(kArr).U32(kArr).U64(0).bytes(),
              "array of arrays");
  ExpectError(ByteWriter().Header(0, 1).Str("k").U32(kU64).U32(0).bytes(), "truncated: metadata k");
  // An empty array is valid.
  EXPECT_EQ(OpenError(ByteWriter().Header(0, 1).Str("k").U32(kArr).U32(kI32).U64(0).bytes()), "");
}

TEST(GgufHostileTest, DuplicateKeysAndTensorNames) {
  ExpectError(GgufBuilder().U32("a.b", 1).U32("a.b", 2).Build(), "key \"a.b\" appears twice");
  ExpectError(GgufBuilder().F32Tensor("t", {2}).F32Tensor("t", {2}).Build(),
              "tensor name \"t\" appears twice");
  ExpectError(GgufBuilder().F32Tensor("", {2}).Build(), "empty name");
}

TEST(GgufHostileTest, BadAlignment) {
  ExpectError(GgufBuilder().U32("general.alignment", 0).Build(), "not a power of two");
  ExpectError(GgufBuilder().U32("general.alignment", 48).Build(), "48 is not a power of two");
  ExpectError(GgufBuilder().String("general.alignment", "32").Build(), "is a STRING, not a UINT32");
  ExpectError(ByteWriter().Header(0, 1).Str("general.alignment").U32(kU64).U64(32).bytes(),
              "is a UINT64, not a UINT32");
  // A valid non-default alignment moves the data section.
  const std::vector<uint8_t> aligned = GgufBuilder().Alignment(256).F32Tensor("t", {4}).Build();
  const GgufFile f = GgufFile::FromBytes(aligned, kName);
  EXPECT_EQ(f.alignment(), 256u);
  EXPECT_EQ(f.data_offset() % 256, 0u);
}

// One tensor info after a valid header, with the given dims, type and offset, and `data` bytes of
// data section.
std::vector<uint8_t> OneTensor(std::vector<uint64_t> dims, uint32_t type, uint64_t offset,
                               size_t data = 64) {
  ByteWriter w;
  w.Header(1, 0).Str("t").U32(static_cast<uint32_t>(dims.size()));
  for (uint64_t d : dims) w.U64(d);
  w.U32(type).U64(offset).PadTo(32).Raw(std::string(data, '\0'));
  return w.bytes();
}

TEST(GgufHostileTest, BadTensorInfos) {
  EXPECT_EQ(OpenError(OneTensor({16}, kGgmlF32, 0)), "");
  ExpectError(OneTensor({1, 1, 1, 1, 1}, kGgmlF32, 0), "has 5 dimensions (at most 4)");
  ExpectError(OneTensor({uint64_t{1} << 63}, kGgmlF32, 0), "negative dimension");
  ExpectError(OneTensor({uint64_t{1} << 32, uint64_t{1} << 32}, kGgmlF32, 0),
              "2^63 elements or more");
  ExpectError(OneTensor({uint64_t{1} << 62, 2}, kGgmlF32, 0), "2^63 elements or more");
  ExpectError(OneTensor({uint64_t{1} << 62}, kGgmlF32, 0), "needs 2^64 bytes or more");
  ExpectError(OneTensor({uint64_t{1} << 40}, kGgmlF32, 0), "runs past the end");
  ExpectError(OneTensor({16}, 4, 0), "unknown ggml type 4");
  ExpectError(OneTensor({16}, 1000, 0), "unknown ggml type 1000");
  ExpectError(OneTensor({33}, kGgmlQ8_0, 0), "not a multiple of the block size 32");
  ExpectError(OneTensor({4}, kGgmlF32, 16), "offset 16 is not a multiple of the alignment 32");
  ExpectError(OneTensor({4}, kGgmlF32, 64), "runs past the end");
  ExpectError(OneTensor({17}, kGgmlF32, 0), "68 bytes at data offset 0");
  ExpectError(OneTensor({4}, kGgmlF32, ~uint64_t{0} - 31), "runs past the end");
  // Zero-element tensors are valid and take no bytes.
  EXPECT_EQ(OpenError(OneTensor({0, 7}, kGgmlF32, 64)), "");
}

TEST(GgufHostileTest, OverlappingTensors) {
  ByteWriter w;
  w.Header(2, 0);
  w.Str("a").U32(1).U64(16).U32(kGgmlF32).U64(0);
  w.Str("b").U32(1).U64(16).U32(kGgmlF32).U64(32);
  w.PadTo(32).Raw(std::string(128, '\0'));
  ExpectError(w.bytes(), "tensors \"a\" and \"b\" overlap");
}

TEST(GgufHostileTest, ErrorsNameTheFileWhenOpenedFromAPath) {
  test_files::ScratchDir dir("gguf-hostile");
  const std::string path = dir.File("broken.gguf");
  const auto bytes = ByteWriter().Header(0, 0, 7).bytes();
  test_files::WriteFile(path, std::string(bytes.begin(), bytes.end()));
  try {
    GgufFile::Open(path);
    FAIL() << "opened";
  } catch (const GgufError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": unknown GGUF version 7 (only versions 2 and 3)");
  }
}

TEST(GgufHostileTest, FifosDevicesDirectoriesAndMissingFilesAreRefusedAtOnce) {
  test_files::ScratchDir dir("gguf-fifo");
  const std::string fifo = dir.File("model.gguf");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  for (const std::string& path :
       {fifo, std::string("/dev/null"), dir.Path().string(), dir.File("absent.gguf")}) {
    try {
      GgufFile::Open(path);
      ADD_FAILURE() << path << " opened";
    } catch (const GgufError& e) {
      EXPECT_TRUE(std::string(e.what()).starts_with(path + ": ")) << e.what();
    }
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));  // no blocking
}

// Random byte changes to a real file: every variant either opens (and then dequantizes and
// describes without crashing) or is a GgufError. Deterministic seed.
TEST(GgufHostileTest, MutatedFilesNeverCrash) {
  const std::string original =
      test_files::ReadFile(std::string(DV_GGUF_TEST_DATA_DIR) + "/types.gguf");
  std::mt19937_64 rng(20250601);
  int opened = 0;
  constexpr int kVariants = 3000;
  for (int variant = 0; variant < kVariants; ++variant) {
    std::vector<uint8_t> bytes(original.begin(), original.end());
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      // Most edits hit the header, metadata and tensor infos (the first 1,800 bytes).
      // Inside the bytes left: an earlier edit may have truncated the file below 1,800 bytes.
      const size_t pos = (rng() % 4 == 0 ? rng() % bytes.size() : rng() % 1800) % bytes.size();
      const uint64_t kind = rng() % 3;
      if (kind == 0) bytes[pos] = static_cast<uint8_t>(rng());
      if (kind == 1) bytes[pos] ^= static_cast<uint8_t>(1u << (rng() % 8));
      if (kind == 2) bytes.resize(pos);
      if (bytes.empty()) break;
    }
    try {
      const GgufFile f = GgufFile::FromBytes(bytes, kName);
      ++opened;
      for (const MetadataEntry& m : f.metadata()) DescribeValue(m.value);
      for (const TensorInfo& t : f.tensors()) {
        if (CanDequantize(t.type) && t.NumElements() < (1 << 20)) f.Dequantize(t);
      }
    } catch (const GgufError& e) {
      EXPECT_TRUE(std::string(e.what()).starts_with("hostile.gguf: ")) << e.what();
    }
  }
  EXPECT_GT(opened, 0);  // some edits (inside tensor data) leave a valid file
}

}  // namespace
}  // namespace dv::gguf
