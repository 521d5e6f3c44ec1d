// Artifact loading: a valid synthetic artifact round-trips; every malformed input is refused with
// one line naming the file and the problem.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/artifact.h"
#include "engine/backends/backend_registry.h"
#include "engine/backends/reference_backend.h"
#include "engine/generate.h"
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
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

class ArtifactTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("dv_artifact_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    WriteSynthArtifact(FindSynthPreset("qwen3-tiny"), 7, dir_);
    model_ = dir_ + "/model.safetensors";
    config_ = dir_ + "/config.json";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Replaces the safetensors header's text with `edit`'s (re-padded) and keeps the data section.
  void RewriteHeaderText(const std::function<void(std::string&)>& edit) {
    std::vector<uint8_t> bytes = ReadAll(model_);
    uint64_t len = 0;
    for (int b = 7; b >= 0; --b) len = (len << 8) | bytes[static_cast<size_t>(b)];
    std::string text(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(len));
    edit(text);
    while (text.size() % 8) text.push_back(' ');
    std::vector<uint8_t> out;
    for (int b = 0; b < 8; ++b) out.push_back(static_cast<uint8_t>(text.size() >> (8 * b)));
    out.insert(out.end(), text.begin(), text.end());
    out.insert(out.end(), bytes.begin() + 8 + static_cast<long>(len), bytes.end());
    WriteAll(model_, out);
  }
  // The same through the header's JSON value.
  void RewriteHeader(const std::function<void(nlohmann::json&)>& edit) {
    RewriteHeaderText([&](std::string& text) {
      auto header = nlohmann::json::parse(text);
      edit(header);
      text = header.dump();
    });
  }

  // Overwrites element `index` of tensor `name` (I16 or I64) with `value`, in place.
  void Poke(const std::string& name, size_t index, int64_t value) {
    std::vector<uint8_t> bytes = ReadAll(model_);
    uint64_t len = 0;
    for (int b = 7; b >= 0; --b) len = (len << 8) | bytes[static_cast<size_t>(b)];
    const auto header =
        nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(len));
    const size_t width = header[name]["dtype"] == "I16" ? 2 : 8;
    const size_t at = 8 + len + header[name]["data_offsets"][0].get<size_t>() + index * width;
    for (size_t b = 0; b < width; ++b) {
      bytes[at + b] = static_cast<uint8_t>(static_cast<uint64_t>(value) >> (8 * b));
    }
    WriteAll(model_, bytes);
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

// The value ranges docs/SPEC.md §6.4 proves the bounded sites with: one value just outside each
// is refused at load, naming the tensor, the index and the range; the edges themselves load.
TEST_F(ArtifactTest, ValueRangesOfTheOverflowAnalysis) {
  struct Bad {
    const char* tensor;
    size_t index;
    int64_t value;
    const char* problem;
  };
  const Bad cases[] = {
      {"embed.m", 3, 0, "tensor 'embed.m'[3] = 0 is outside [1, 2^16)"},
      {"head.m", 5, 65536, "tensor 'head.m'[5] = 65536 is outside [1, 2^16)"},
      {"rope.sin", 77, 16385, "tensor 'rope.sin'[77] = 16385 is outside [-2^14, 2^14]"},
      {"layers.1.q.m", 2, -1, "tensor 'layers.1.q.m'[2] = -1 is outside [1, 2^16)"},
      {"layers.0.down.m", 9, 1 << 16, "tensor 'layers.0.down.m'[9] = 65536"},
      {"layers.1.as_m", 17, 16385, "tensor 'layers.1.as_m'[17] = 16385 is outside [1, 2^14]"},
      {"layers.0.ds_m", 0, 0, "tensor 'layers.0.ds_m'[0] = 0 is outside [1, 2^14]"},
      {"layers.0.qs_m", 4, 1 << 20, "tensor 'layers.0.qs_m'[4]"},
      {"layers.1.k_norm.m", 6, -16384, "tensor 'layers.1.k_norm.m'[6] = -16384 is outside"},
      {"layers.0.ks_m", 1, 1 << 16, "tensor 'layers.0.ks_m'[1] = 65536"},
      {"layers.1.vq_m", 0, 0, "tensor 'layers.1.vq_m'[0] = 0"},
      // k_rowk - kq_k = 20 + k_norm_k + 1000 >= 64: kq_m << that is 0, a division by zero.
      {"layers.0.kq_k", 3, -1000, "tensor 'layers.0.kq_k'[3] = -1000: the K-cache denominator"},
  };
  for (const Bad& bad : cases) {
    SetUp();
    Poke(bad.tensor, bad.index, bad.value);
    ExpectRefused(model_, bad.problem);
  }
  SetUp();
  Poke("embed.m", 3, 65535);
  Poke("layers.1.as_m", 17, 16384);
  Poke("layers.1.k_norm.m", 6, -16383);
  Poke("rope.cos", 5, -16384);
  EXPECT_NO_THROW(Artifact::Load(dir_));
}

// A V-cache denominator vq_m << (xk + v.k - vq_k) that wraps to 0 is a division by zero, where
// DetLLM's torch raises: every execution path refuses the call instead of emitting logits.
TEST_F(ArtifactTest, ZeroVCacheDenominatorStopsTheCall) {
  Poke("layers.0.vq_k", 0, -1000);
  auto artifact = Artifact::Load(dir_);  // data-dependent: not refused at load
  for (const std::string& name : AvailableBackends()) {
    auto backend = MakeBackend(name);
    IntQwen3 model(artifact->weights(), *backend);
    GenerationOptions opt;
    opt.max_new = 2;
    try {
      GenerateGreedy(model, {{1, 2, 3}}, opt);
      FAIL() << name << ": a division by zero gave logits";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("division by zero: a V-cache denominator"),
                std::string::npos)
          << e.what();
    }
  }
}

// The input checks both engines' generation share: each failure names its row or its limit.
TEST(CheckPrompts, NamesTheRowAndTheLimit) {
  const auto message = [](const std::vector<std::vector<int32_t>>& prompts, int64_t max_new) {
    try {
      CheckPrompts(prompts, max_new, 100, 8, "max_pos");
    } catch (const GenerationError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message({{1, 2}}, 0), "max_new must be at least 1");
  EXPECT_EQ(message({{1}, {}}, 1), "a prompt needs at least one token");
  EXPECT_EQ(message({{1}, {5, 100}}, 1),
            "token id 100 of prompt row 1 is outside the vocabulary (100)");
  EXPECT_EQ(message({{-1}}, 1), "token id -1 of prompt row 0 is outside the vocabulary (100)");
  EXPECT_EQ(message({{1, 2, 3}}, 7), "prompt + max_new exceeds the model's max_pos (8)");
  // The last generated token is never fed: 3 prompt tokens + 6 steps need 8 slots.
  EXPECT_EQ(message({{1, 2, 3}}, 6), "accepted");
  EXPECT_EQ(CheckPrompts({{1, 2, 3}, {4}}, 6, 100, 8, "max_pos"), (std::vector<int64_t>{8, 6}));
}

// A row never holds more than 47104 slots (SPEC §6.4), even where the RoPE tables allow more.
TEST(RowSlots, BeyondTheSoftmaxBoundIsRefused) {
  const std::string dir =
      (fs::temp_directory_path() / ("dv_long_rope_" + std::to_string(::getpid()))).string();
  WriteSynthArtifact({"long-rope", {1, 8, 1, 1, 2, 8, 16, 48000}}, 1, dir);
  auto artifact = Artifact::Load(dir);
  fs::remove_all(dir);
  auto backend = MakeReferenceBackend();
  IntQwen3 model(artifact->weights(), *backend);
  GenerationOptions opt;
  opt.max_new = 3;
  EXPECT_NO_THROW(GenerateGreedy(model, {{1, 2, 3}}, opt));
  try {
    GenerateGreedy(model, {std::vector<int32_t>(47103, 1)}, opt);
    FAIL() << "a row of 47105 slots was accepted";
  } catch (const GenerationError& e) {
    EXPECT_NE(std::string(e.what()).find("47104 slots"), std::string::npos) << e.what();
  }
  // Forward's callers size caches first; a row past the bound reaching it is a broken invariant.
  KvCache cache(model.config(), 47105, *backend);
  const std::vector<int32_t> ids(47105, 1);
  ForwardRow row{&cache, ids.data(), 47105, nullptr, nullptr};
  EXPECT_DEATH(model.Forward({&row, 1}), "check failed: .*47104 slots");
}

// Shifts outside [-kMaxArtifactShift, kMaxArtifactShift] would reach signed overflow in the
// forward pass's shift arithmetic; the loader refuses them, in config.json and in the tensors.
TEST_F(ArtifactTest, ConfigShiftOutOfRange) {
  for (const int64_t bad : {kMaxArtifactShift + 1, -kMaxArtifactShift - 1, INT64_MAX}) {
    WriteSynthArtifact(FindSynthPreset("qwen3-tiny"), 7, dir_);
    auto cfg = nlohmann::json::parse(std::ifstream(config_));
    cfg["layers"][1]["gate"]["k"] = bad;
    std::ofstream(config_) << cfg.dump();
    ExpectRefused(config_, "key layers[1].gate.k = " + std::to_string(bad) +
                               " is outside the shift range [-4096, 4096]");
  }
  WriteSynthArtifact(FindSynthPreset("qwen3-tiny"), 7, dir_);
  auto cfg = nlohmann::json::parse(std::ifstream(config_));
  cfg["layers"][0]["ds_k"] = uint64_t{1} << 63;
  std::ofstream(config_) << cfg.dump();
  ExpectRefused(config_, "key layers[0].ds_k does not fit int64");
}

TEST_F(ArtifactTest, ShiftTensorOutOfRange) {
  SynthArtifact a = MakeSynthArtifact(FindSynthPreset("qwen3-tiny"), 7);
  TensorData& vq_k = a.tensors.at("layers.1.vq_k");
  std::vector<int64_t> values(vq_k.bytes.size() / 8, 20);
  values[1] = -5000;
  vq_k = MakeTensor(DType::kI64, vq_k.shape, values);
  WriteSafetensors(model_, a.tensors);
  ExpectRefused(model_, "tensor 'layers.1.vq_k' element 1 = -5000 is outside the shift range");
}

// A FIFO (or a device) where config.json belongs is refused at once, without blocking on it.
TEST_F(ArtifactTest, ConfigIsAFifo) {
  fs::remove(config_);
  ASSERT_EQ(::mkfifo(config_.c_str(), 0600), 0);
  ExpectRefused(config_, "a FIFO, not a regular file");
}

TEST_F(ArtifactTest, ConfigIsAFolder) {
  fs::remove(config_);
  fs::create_directory(config_);
  ExpectRefused(config_, "a folder, not a regular file");
}

TEST_F(ArtifactTest, ModelIsAFifo) {
  fs::remove(model_);
  ASSERT_EQ(::mkfifo(model_.c_str(), 0600), 0);
  ExpectRefused(model_, "a FIFO, not a regular file");
}

// /dev/zero never ends and /dev/urandom never repeats: refused before a byte is read.
TEST_F(ArtifactTest, DevicesInsteadOfFilesAreRefused) {
  for (const std::string& victim : {config_, model_}) {
    for (const char* device : {"/dev/zero", "/dev/urandom"}) {
      WriteSynthArtifact(FindSynthPreset("qwen3-tiny"), 7, dir_);
      fs::remove(victim);
      fs::create_symlink(device, victim);
      ExpectRefused(victim, "a character device, not a regular file");
    }
  }
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

namespace dv {
namespace {

// config.json's own values beside the dimensions: each out of range (or disagreeing with the
// tensors) is refused, naming the key. The synthetic config has max_pos and rope_frac_bits.
TEST_F(ArtifactTest, ConfigValuesOutOfRange) {
  struct Bad {
    const char* key;
    nlohmann::json value;
    std::string problem;
  };
  const std::vector<Bad> cases = {
      {"max_pos", 0, "max_pos = 0 is out of range"},
      {"max_pos", -1, "max_pos = -1 is out of range"},
      {"max_pos", 4096, "max_pos = 4096 but the RoPE tables of " + model_ + " have 2048 rows"},
      {"rope_frac_bits", 13, "rope_frac_bits = 13; the RoPE tables are Q14"},
      {"weight_bits", 4, "weight_bits = 4; an int artifact holds 8-bit weights"},
      {"eos_token_id", 1024, "eos_token_id = 1024 is outside the vocabulary (0 to 1023)"},
      {"eos_token_id", -1, "eos_token_id = -1 is outside the vocabulary"},
      {"eos_token_id", "2", "key eos_token_id is not an integer"},
      {"n_layers", 3, "'layers' must be a list of n_layers = 3 entries"},
      {"n_layers", 0, "a model dimension is out of range"},
      {"n_kv_heads", int64_t{1} << 40, "a model dimension is out of range"},
  };
  for (const Bad& bad : cases) {
    WriteSynthArtifact(FindSynthPreset("qwen3-tiny"), 7, dir_);
    auto cfg = nlohmann::json::parse(std::ifstream(config_));
    cfg[bad.key] = bad.value;
    std::ofstream(config_) << cfg.dump();
    SCOPED_TRACE(std::string(bad.key) + " = " + bad.value.dump());
    ExpectRefused(config_, bad.problem);
  }
}

// A key written twice means the last one to nlohmann::json and the first one to other readers:
// refused in config.json (with its line) and in the safetensors header.
TEST_F(ArtifactTest, DuplicateKeysAreRefused) {
  std::string text;
  {
    std::ifstream in(config_);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_EQ(text.front(), '{');
  std::ofstream(config_) << "{\n\"n_layers\": 2,\n" << text.substr(1);
  ExpectRefused(config_ + ":", "duplicate key \"n_layers\" (first at line 2)");

  WriteSynthArtifact(FindSynthPreset("qwen3-tiny"), 7, dir_);
  // The first member ("embed.e8": {...}) once more as the last one.
  RewriteHeaderText([](std::string& header) {
    const std::string first_member = header.substr(1, header.find("},"));
    header.resize(header.find_last_not_of(' '));  // drops the closing brace and the padding
    header += "," + first_member + "}";
  });
  ExpectRefused(model_, "ambiguous header: duplicate key");
}

}  // namespace
}  // namespace dv
