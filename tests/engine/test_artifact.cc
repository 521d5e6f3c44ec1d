// Artifact loading: a valid synthetic artifact round-trips; every malformed input is refused with
// one line naming the file and the problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/artifact.h"
#include "engine/synth.h"

namespace dv {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
void WriteAll(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

class ArtifactTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("dv_artifact_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    WriteSynthArtifact(FindSynthPreset("qwen3-tiny"), 7, dir_);
    model_ = dir_ + "/model.safetensors";
    config_ = dir_ + "/config.json";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Replaces the safetensors header with `header` (re-padded) and keeps the data section.
  void RewriteHeader(const std::function<void(nlohmann::json&)>& edit) {
    std::vector<uint8_t> bytes = ReadAll(model_);
    uint64_t len = 0;
    for (int b = 7; b >= 0; --b) len = (len << 8) | bytes[static_cast<size_t>(b)];
    auto header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(len));
    edit(header);
    std::string text = header.dump();
    while (text.size() % 8) text.push_back(' ');
    std::vector<uint8_t> out;
    for (int b = 0; b < 8; ++b) out.push_back(static_cast<uint8_t>(text.size() >> (8 * b)));
    out.insert(out.end(), text.begin(), text.end());
    out.insert(out.end(), bytes.begin() + 8 + static_cast<long>(len), bytes.end());
    WriteAll(model_, out);
  }

  // Loading must fail with one line that names `file` and contains `problem`.
  void ExpectRefused(const std::string& file, const std::string& problem) {
    try {
      Artifact::Load(dir_);
      FAIL() << "loaded a broken artifact; expected: " << problem;
    } catch (const ArtifactError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(file), std::string::npos) << msg;
      EXPECT_NE(msg.find(problem), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
    }
  }

  std::string dir_, model_, config_;
};

TEST_F(ArtifactTest, LoadsAndReportsShapes) {
  auto a = Artifact::Load(dir_);
  EXPECT_EQ(a->weights().config.hidden, 128);
  EXPECT_EQ(a->weights().layers.size(), 2u);
  EXPECT_EQ(a->sha256().size(), 64u);
  EXPECT_EQ(a->sha256(), Sha256FileHex(model_));
}

TEST_F(ArtifactTest, WriterRoundTripIsByteIdentical) {
  auto first = ReadAll(model_);
  WriteSynthArtifact(FindSynthPreset("qwen3-tiny"), 7, dir_);
  EXPECT_EQ(ReadAll(model_), first);
}

TEST_F(ArtifactTest, TruncatedFile) {
  auto bytes = ReadAll(model_);
  bytes.resize(bytes.size() - 100);
  WriteAll(model_, bytes);
  ExpectRefused(model_, "out of range");
}

TEST_F(ArtifactTest, ShorterThanHeaderLength) {
  WriteAll(model_, {1, 2, 3});
  ExpectRefused(model_, "truncated");
}

TEST_F(ArtifactTest, HeaderPastEnd) {
  auto bytes = ReadAll(model_);
  bytes.resize(64);
  WriteAll(model_, bytes);
  ExpectRefused(model_, "truncated");
}

TEST_F(ArtifactTest, OversizedHeader) {
  auto bytes = ReadAll(model_);
  const uint64_t huge = uint64_t{1} << 40;
  for (int b = 0; b < 8; ++b) bytes[static_cast<size_t>(b)] = static_cast<uint8_t>(huge >> (8 * b));
  WriteAll(model_, bytes);
  ExpectRefused(model_, "exceeds the 100 MiB limit");
}

TEST_F(ArtifactTest, MalformedHeaderJson) {
  auto bytes = ReadAll(model_);
  bytes[8] = '!';  // the opening brace of the header
  WriteAll(model_, bytes);
  ExpectRefused(model_, "malformed header JSON");
}

TEST_F(ArtifactTest, OverlappingOffsets) {
  RewriteHeader([](nlohmann::json& h) {
    auto off = h["embed.m"]["data_offsets"];
    h["embed.k"]["data_offsets"] = off;  // same bytes, same size
  });
  ExpectRefused(model_, "overlap");
}

TEST_F(ArtifactTest, OutOfRangeOffsets) {
  RewriteHeader([](nlohmann::json& h) {
    const uint64_t end = h["embed.m"]["data_offsets"][1].get<uint64_t>();
    h["embed.m"]["data_offsets"] = {end + (uint64_t{1} << 32), end + (uint64_t{1} << 32) + 8192};
  });
  ExpectRefused(model_, "out of range");
}

TEST_F(ArtifactTest, FloatDtype) {
  RewriteHeader([](nlohmann::json& h) { h["embed.k"]["dtype"] = "F64"; });
  ExpectRefused(model_, "non-integer dtype F64");
}

TEST_F(ArtifactTest, WrongIntegerDtype) {
  RewriteHeader([](nlohmann::json& h) {
    h["embed.k"]["dtype"] = "I32";
    h["embed.k"]["shape"] = {h["embed.k"]["shape"][0].get<int64_t>() * 2};
  });
  ExpectRefused(model_, "tensor 'embed.k' has dtype I32, expected I64");
}

TEST_F(ArtifactTest, MissingTensor) {
  RewriteHeader([](nlohmann::json& h) { h.erase("layers.1.kq_m"); });
  ExpectRefused(model_, "missing tensor 'layers.1.kq_m'");
}

TEST_F(ArtifactTest, ConfigDisagreesWithShapes) {
  auto cfg = nlohmann::json::parse(std::ifstream(config_));
  cfg["intermediate"] = 512;
  std::ofstream(config_) << cfg.dump();
  ExpectRefused(model_, "config.json implies");
}

TEST_F(ArtifactTest, ConfigMissingKey) {
  auto cfg = nlohmann::json::parse(std::ifstream(config_));
  cfg["layers"][1].erase("os_k");
  std::ofstream(config_) << cfg.dump();
  ExpectRefused(config_, "missing key layers[1].os_k");
}

TEST_F(ArtifactTest, ConfigMalformed) {
  std::ofstream(config_) << "{\"n_layers\": 2,";
  ExpectRefused(config_, "malformed JSON");
}

TEST_F(ArtifactTest, MissingConfig) {
  fs::remove(config_);
  ExpectRefused(config_, "cannot open");
}

TEST_F(ArtifactTest, MissingModelFile) {
  fs::remove(model_);
  ExpectRefused(model_, "cannot open");
}

TEST(LittleEndian, DecodesExplicitly) {
  const uint8_t bytes[] = {0xfe, 0xff, 0x01, 0x00, 0x00, 0x00, 0x00, 0x80};
  EXPECT_EQ(ReadLeInt(bytes, 2), -2);
  EXPECT_EQ(ReadLeInt(bytes + 2, 2), 1);
  EXPECT_EQ(ReadLeInt(bytes, 8), static_cast<int64_t>(0x800000000001fffeull));
  EXPECT_EQ(ReadLeInt(bytes, 1), -2);
}

}  // namespace
}  // namespace dv
