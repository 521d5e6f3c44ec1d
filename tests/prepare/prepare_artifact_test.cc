// PrepareArtifact as a whole: preparing twice gives identical bytes (wherever the inputs and the
// output lie, whatever the thread count), the result loads and runs in the integer engine, and
// every bad input -- a hostile checkpoint (NaN or infinite weights, a missing or retyped tensor,
// a truncated file, a config it cannot take), bad calibration ids, bad statistics, an output that
// exists -- is one ArtifactError line naming the file and the problem, with no output folder and
// no temporary left behind.
#include <gtest/gtest.h>

#include <filesystem>

#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/hf_synth.h"
#include "engine/artifact.h"
#include "engine/backends/reference_backend.h"
#include "engine/generate.h"
#include "prepare/calib_stats.h"
#include "prepare/prepare_artifact.h"
#include "tests/checkpoint/hf_test_folders.h"
#include "tests/prepare/prepare_test_support.h"

namespace dv {
namespace {

namespace fs = std::filesystem;
using test::FolderSpec;
using test_files::ScratchDir;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Every entry of `dir` (names only), to check that nothing was left behind.
std::vector<std::string> Entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

PrepareOptions Builtin(const FloatCheckpoint& ckpt, const std::string& out, int64_t samples = 2,
                       int64_t len = 16) {
  PrepareOptions o;
  o.out_dir = out;
  o.calibration = BuiltinCalibration(ckpt.config().vocab, samples, len);
  o.recipe.model_id = "test";
  return o;
}

// The one-line error of preparing `hf` into <scratch>/out, checking that nothing was written.
std::string PrepareError(
    const ScratchDir& scratch, const std::string& hf,
    const std::function<void(PrepareOptions&, const FloatCheckpoint&)>& edit = nullptr) {
  const auto before = Entries(scratch.Path());
  std::string error;
  try {
    const auto ckpt = OpenHfCheckpoint(hf);
    PrepareOptions o = Builtin(*ckpt, scratch.File("out"));
    if (edit) edit(o, *ckpt);
    PrepareArtifact(*ckpt, o);
  } catch (const ArtifactError& e) {
    error = e.what();
  }
  EXPECT_FALSE(error.empty()) << "no error";
  EXPECT_EQ(error.find('\n'), std::string::npos) << "not one line: " << error;
  EXPECT_EQ(Entries(scratch.Path()), before) << "something was left behind after: " << error;
  return error;
}

// ---- reproducibility ----

TEST(PrepareArtifact, TwiceGivesIdenticalBytesWhereverTheFilesLie) {
  ScratchDir a("prepare-a"), b("prepare-b");
  WriteHfSynthCheckpoint(FindHfSynthPreset("qwen3-tiny"), 0, a.File("checkpoint"));
  WriteHfSynthCheckpoint(FindHfSynthPreset("qwen3-tiny"), 0, b.File("elsewhere/ckpt"));
  const auto ca = OpenHfCheckpoint(a.File("checkpoint"));
  const auto cb = OpenHfCheckpoint(b.File("elsewhere/ckpt"));
  PrepareOptions oa = Builtin(*ca, a.File("int8"));
  PrepareOptions ob = Builtin(*cb, b.File("elsewhere/other-name"));
  oa.threads = 1;
  ob.threads = 4;
  const PrepareResult ra = PrepareArtifact(*ca, oa);
  const PrepareResult rb = PrepareArtifact(*cb, ob);
  EXPECT_EQ(ra.sha256, rb.sha256);
  EXPECT_EQ(ra.config_sha256, rb.config_sha256);
  EXPECT_EQ(test_files::ReadFile(a.File("int8/config.json")),
            test_files::ReadFile(b.File("elsewhere/other-name/config.json")));
}

TEST(PrepareArtifact, TheArtifactRunsAndRecordsItsProvenance) {
  ScratchDir s("prepare-run");
  WriteHfSynthCheckpoint(FindHfSynthPreset("qwen3-tiny"), 0, s.File("hf"));
  const auto ckpt = OpenHfCheckpoint(s.File("hf"));
  test_files::WriteFile(s.File("hf/tokenizer.json"), "{\"not\": \"checked\"}");
  PrepareOptions o = Builtin(*ckpt, s.File("int8"));
  o.tokenizer_json = s.File("hf/tokenizer.json");
  PrepareArtifact(*ckpt, o);
  EXPECT_EQ(test_files::ReadFile(s.File("int8/tokenizer.json")), "{\"not\": \"checked\"}");
  const auto artifact = Artifact::Load(s.File("int8"));
  const auto backend = MakeReferenceBackend();
  IntQwen3 model(artifact->weights(), *backend);
  GenerationOptions g;
  g.max_new = 8;
  const auto res = GenerateGreedy(model, {{1, 2, 3, 4}}, g);
  EXPECT_EQ(res[0].tokens.size(), 8u);
  const nlohmann::json config = test::ReadJson(s.File("int8/config.json"));
  EXPECT_EQ(config["model_id"], "test");
  const nlohmann::json& prov = config["prepare"];
  EXPECT_EQ(prov["checkpoint_sha256"], ckpt->ContentSha256());
  EXPECT_EQ(prov["head"], "lm_head.weight");
  EXPECT_EQ(prov["calibration"]["kind"], "builtin");
  EXPECT_EQ(prov["calibration"]["samples"], 2);
  EXPECT_EQ(prov["calibration"]["len"], 16);
  EXPECT_EQ(config["calib_samples"], 2);
  EXPECT_EQ(config["calib_len"], 16);
}

TEST(PrepareArtifact, StatisticsSavedAndReloadedGiveTheSameArtifact) {
  ScratchDir s("prepare-stats");
  WriteHfSynthCheckpoint(FindHfSynthPreset("qwen3-tiny"), 0, s.File("hf"));
  const auto ckpt = OpenHfCheckpoint(s.File("hf"));
  PrepareOptions first = Builtin(*ckpt, s.File("a"));
  first.save_stats_path = s.File("stats.safetensors");
  const PrepareResult ra = PrepareArtifact(*ckpt, first);
  PrepareOptions second;
  second.out_dir = s.File("b");
  second.recipe.model_id = "test";
  second.stats = LoadCalibStats(s.File("stats.safetensors"), ckpt->config());
  EXPECT_EQ(second.stats->calib_samples, 2);
  EXPECT_EQ(second.stats->calib_len, 16);
  second.recipe.calib_samples = 2;
  second.recipe.calib_len = 16;
  EXPECT_EQ(PrepareArtifact(*ckpt, second).sha256, ra.sha256);
}

TEST(PrepareArtifact, ForceReplacesAnExistingFolderOtherwiseRefused) {
  ScratchDir s("prepare-force");
  WriteHfSynthCheckpoint(FindHfSynthPreset("qwen3-tiny"), 0, s.File("hf"));
  fs::create_directories(s.File("out"));
  test_files::WriteFile(s.File("out/old.txt"), "old");
  const std::string e = PrepareError(s, s.File("hf"));
  EXPECT_TRUE(Contains(e, "out: exists (pass --force to replace it)")) << e;
  const auto ckpt = OpenHfCheckpoint(s.File("hf"));
  PrepareOptions o = Builtin(*ckpt, s.File("out"));
  o.force = true;
  PrepareArtifact(*ckpt, o);
  EXPECT_FALSE(fs::exists(s.File("out/old.txt")));
  EXPECT_TRUE(fs::exists(s.File("out/model.safetensors")));
  EXPECT_EQ(Entries(s.Path()), (std::vector<std::string>{"hf", "out"}));
}

TEST(PrepareArtifact, OutputParentMustExist) {
  ScratchDir s("prepare-parent");
  test::WriteHfFolder(s.File("hf"), FolderSpec{});
  const std::string e = PrepareError(
      s, s.File("hf"), [&](PrepareOptions& o, const auto&) { o.out_dir = s.File("no/such/out"); });
  EXPECT_TRUE(Contains(e, "no such folder")) << e;
}

// ---- hostile checkpoints ----

// A checkpoint folder whose tensor `name` has its element `at` replaced by the BF16 bits.
std::string WithBf16Value(const ScratchDir& s, const std::string& name, int64_t at, uint16_t bits) {
  FolderSpec spec;
  auto tensors = test::SpecTensors(spec);
  TensorData& t = tensors.at(name);
  t.bytes[static_cast<size_t>(2 * at)] = static_cast<uint8_t>(bits);
  t.bytes[static_cast<size_t>(2 * at + 1)] = static_cast<uint8_t>(bits >> 8);
  spec.drop = {name};
  spec.extra = {{name, t}};
  test::WriteHfFolder(s.File("hf"), spec);
  return s.File("hf");
}

TEST(PrepareHostile, NanWeight) {
  ScratchDir s("hostile");
  const std::string e =
      PrepareError(s, WithBf16Value(s, "model.layers.1.mlp.down_proj.weight", 5, 0x7FC0));
  EXPECT_TRUE(Contains(e,
                       "model.safetensors: tensor model.layers.1.mlp.down_proj.weight holds a "
                       "NaN or infinity (element 5)"))
      << e;
}

TEST(PrepareHostile, InfiniteWeight) {
  ScratchDir s("hostile");
  const std::string e = PrepareError(s, WithBf16Value(s, "model.embed_tokens.weight", 17, 0xFF80));
  EXPECT_TRUE(Contains(e, "tensor model.embed_tokens.weight holds a NaN or infinity (element 17)"))
      << e;
}

TEST(PrepareHostile, NanGamma) {
  ScratchDir s("hostile");
  const std::string e =
      PrepareError(s, WithBf16Value(s, "model.layers.0.self_attn.q_norm.weight", 1, 0xFFC1));
  EXPECT_TRUE(Contains(e, "model.layers.0.self_attn.q_norm.weight holds a NaN or infinity")) << e;
}

TEST(PrepareHostile, MissingTensor) {
  ScratchDir s("hostile");
  FolderSpec spec;
  spec.drop = {"model.layers.1.self_attn.k_norm.weight"};
  test::WriteHfFolder(s.File("hf"), spec);
  const std::string e = PrepareError(s, s.File("hf"));
  EXPECT_TRUE(Contains(e, "model.layers.1.self_attn.k_norm.weight")) << e;
  EXPECT_TRUE(Contains(e, "missing")) << e;
}

TEST(PrepareHostile, WrongShapeAndUnsupportedDtype) {
  {
    ScratchDir s("hostile");
    FolderSpec spec;
    spec.reshape = {{"model.layers.0.mlp.up_proj.weight", {12, 9}}};
    test::WriteHfFolder(s.File("hf"), spec);
    const std::string e = PrepareError(s, s.File("hf"));
    EXPECT_TRUE(Contains(e, "model.layers.0.mlp.up_proj.weight")) << e;
  }
  {
    ScratchDir s("hostile");
    FolderSpec spec;
    spec.retype = {{"model.layers.0.self_attn.o_proj.weight", DType::kI32}};
    test::WriteHfFolder(s.File("hf"), spec);
    const std::string e = PrepareError(s, s.File("hf"));
    EXPECT_TRUE(Contains(e, "model.layers.0.self_attn.o_proj.weight")) << e;
    EXPECT_TRUE(Contains(e, "I32")) << e;
  }
}

TEST(PrepareHostile, TruncatedWeights) {
  ScratchDir s("hostile");
  test::WriteHfFolder(s.File("hf"), FolderSpec{});
  const std::string full = test_files::ReadFile(s.File("hf/model.safetensors"));
  test_files::WriteFile(s.File("hf/model.safetensors"), full.substr(0, full.size() - 100));
  const std::string e = PrepareError(s, s.File("hf"));
  EXPECT_TRUE(Contains(e, "model.safetensors")) << e;
}

TEST(PrepareHostile, MissingConfigField) {
  ScratchDir s("hostile");
  test::WriteHfFolder(s.File("hf"), FolderSpec{});
  nlohmann::json c = test::ReadJson(s.File("hf/config.json"));
  c.erase("num_attention_heads");
  test_files::WriteFile(s.File("hf/config.json"), c.dump());
  const std::string e = PrepareError(s, s.File("hf"));
  EXPECT_TRUE(Contains(e, "config.json: missing key \"num_attention_heads\"")) << e;
}

TEST(PrepareHostile, ModelsTheArtifactCannotHold) {
  {
    ScratchDir s("hostile");
    FolderSpec spec;
    spec.config.attention_bias = true;
    test::WriteHfFolder(s.File("hf"), spec);
    const std::string e = PrepareError(s, s.File("hf"));
    EXPECT_TRUE(Contains(e, "biases, which a detllm-v1 artifact cannot hold")) << e;
  }
  {
    ScratchDir s("hostile");
    FolderSpec spec;
    spec.config.max_pos = 200000;
    test::WriteHfFolder(s.File("hf"), spec);
    const std::string e = PrepareError(s, s.File("hf"));
    EXPECT_TRUE(Contains(e, "max_position_embeddings 200000")) << e;
  }
}

TEST(PrepareHostile, AllZeroQkNormGamma) {
  ScratchDir s("hostile");
  FolderSpec spec;
  TensorData zero = test::PatternTensor(DType::kBF16, {4});
  std::fill(zero.bytes.begin(), zero.bytes.end(), 0);
  spec.drop = {"model.layers.1.self_attn.q_norm.weight"};
  spec.extra = {{"model.layers.1.self_attn.q_norm.weight", zero}};
  test::WriteHfFolder(s.File("hf"), spec);
  const std::string e = PrepareError(s, s.File("hf"));
  EXPECT_TRUE(Contains(e, "layer 1 q_norm gamma is all zero")) << e;
}

// Weights so large that the statistics leave float32: refused, not quantized from infinities.
TEST(PrepareHostile, StatisticsBeyondFloat32) {
  ScratchDir s("hostile");
  FolderSpec spec;
  auto tensors = test::SpecTensors(spec);
  for (const char* name :
       {"model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight",
        "model.layers.0.mlp.down_proj.weight"}) {
    TensorData& t = tensors.at(name);
    for (size_t i = 0; i + 1 < t.bytes.size(); i += 2) {
      t.bytes[i] = 0x7F, t.bytes[i + 1] = 0x7F;  // BF16 3.39e38
    }
    spec.drop.insert(name);
    spec.extra[name] = t;
  }
  test::WriteHfFolder(s.File("hf"), spec);
  const std::string e = PrepareError(s, s.File("hf"));
  EXPECT_TRUE(Contains(e,
                       "hf: the calibration maximum down_in_max of layer 0 lies beyond "
                       "float32's range (1.95e+78)"))
      << e;
}

// ---- calibration and statistics ----

TEST(PrepareHostile, CalibrationIdsOutOfRange) {
  ScratchDir s("hostile");
  test::WriteHfFolder(s.File("hf"), FolderSpec{});
  test_files::WriteFile(s.File("ids.json"), "[[1, 2, 3], [4, 16, 5]]");
  std::string e;
  try {
    LoadCalibrationIds(s.File("ids.json"), 0, 0, 16);
  } catch (const ArtifactError& x) {
    e = x.what();
  }
  EXPECT_TRUE(Contains(e,
                       "ids.json: token id 16 (sequence 1, position 1) is outside the "
                       "checkpoint's vocabulary [0, 16)"))
      << e;
}

TEST(PrepareHostile, MalformedCalibrationIds) {
  ScratchDir s("hostile");
  auto error = [&](const std::string& text, int64_t samples = 0, int64_t len = 0) {
    test_files::WriteFile(s.File("ids.json"), text);
    try {
      LoadCalibrationIds(s.File("ids.json"), samples, len, 16);
    } catch (const ArtifactError& x) {
      const std::string m = x.what();
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
      EXPECT_TRUE(Contains(m, "ids.json: ")) << m;
      return m;
    }
    return std::string();
  };
  EXPECT_TRUE(Contains(error("[[1, 2"), "not JSON"));
  EXPECT_TRUE(Contains(error("{\"x\": 1}"), "expected a non-empty JSON list"));
  EXPECT_TRUE(Contains(error("[[1, 2], 3]"), "sequence 1 is not a non-empty list"));
  EXPECT_TRUE(Contains(error("[[1, 2.5]]"), "position 1: not an integer token id"));
  EXPECT_TRUE(Contains(error("[[1, -1]]"), "token id -1"));
  EXPECT_TRUE(Contains(error("[[1, 2]]", 2), "holds 1 sequences, --calib-samples asks for 2"));
  EXPECT_TRUE(Contains(error("[[1, 2]]", 1, 3), "has 2 ids, --calib-len asks for 3"));
  EXPECT_EQ(LoadCalibrationIds(s.File("ids.json"), 1, 1, 16).sequences,
            (std::vector<std::vector<int32_t>>{{1}}));
  std::string e;
  try {
    LoadCalibrationIds(s.File("absent.json"), 0, 0, 16);
  } catch (const ArtifactError& x) {
    e = x.what();
  }
  EXPECT_TRUE(Contains(e, "absent.json")) << e;
  try {
    ChunkCalibrationIds({1, 2, 3}, 2, 2, 16, "text.txt");
  } catch (const ArtifactError& x) {
    e = x.what();
  }
  EXPECT_TRUE(Contains(e, "text.txt: gives 3 tokens; --calib-samples 2 x --calib-len 2 needs 4"))
      << e;
}

TEST(PrepareHostile, BadStatistics) {
  ScratchDir s("hostile");
  test::WriteHfFolder(s.File("hf"), FolderSpec{});
  const auto ckpt = OpenHfCheckpoint(s.File("hf"));
  const FloatModelConfig& c = ckpt->config();
  auto load_error = [&](const CalibStats& stats, const std::string& drop = "") {
    const std::string path = s.File("stats.safetensors");
    SaveCalibStats(stats, path);
    if (!drop.empty()) {
      const MappedFile f = MappedFile::Open(path);
      std::map<std::string, TensorData> kept;
      for (const auto& [name, v] : ParseSafetensors(f.bytes(), path)) {
        if (name != drop) kept[name] = {v.dtype, v.shape, {v.bytes.begin(), v.bytes.end()}};
      }
      WriteSafetensors(path + ".cut", kept);
      fs::rename(path + ".cut", path);
    }
    try {
      LoadCalibStats(path, c);
    } catch (const ArtifactError& x) {
      return std::string(x.what());
    }
    return std::string();
  };
  CalibStats ok = CalibStats::ZerosFor(c);
  for (float& v : ok.v_max) v = 1.0f;
  EXPECT_EQ(load_error(ok), "");
  CalibStats nan = ok;
  nan.mlp_in_max[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(Contains(load_error(nan),
                       "stats.safetensors: mlp_in_max element 3 is not a finite "
                       "maximum >= 0"));
  CalibStats negative = ok;
  negative.k_chan_max[0] = -1.0f;
  EXPECT_TRUE(Contains(load_error(negative), "k_chan_max element 0"));
  EXPECT_TRUE(Contains(load_error(ok, "o_in_max"), "missing tensor o_in_max"));
  // Statistics of another shape (a checkpoint with 3 layers).
  FloatModelConfig other = c;
  other.n_layers = 3;
  CalibStats wrong = CalibStats::ZerosFor(other);
  EXPECT_TRUE(Contains(load_error(wrong), "has shape [3,1,4], the checkpoint needs [2,1,4]"));
  // A V maximum of 0 cannot give a V scale: the recipe refuses it, after nothing was written.
  const std::string e = PrepareError(s, s.File("hf"), [&](PrepareOptions& o, const auto&) {
    o.calibration.reset();
    o.stats = CalibStats::ZerosFor(c);
  });
  EXPECT_TRUE(Contains(e, "layer 0 V head 0: the calibration maximum is 0")) << e;
}

}  // namespace
}  // namespace dv
