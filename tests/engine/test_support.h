// Shared test fixtures: locating test data, loading the DetLLM compatibility fixtures, and every
// execution path (backend, ISA level, the device row programs on the host) of this machine.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "engine/backends/backend_registry.h"
#include "engine/backends/block_row_ops.h"
#include "engine/backends/cpu_backend.h"
#include "engine/model.h"
#include "engine/model_source.h"

namespace dv::test {

// tests/data/ of the source tree (DETVERIFY_SOURCE_DIR is set by dv_add_test).
inline std::string DataDir() {
  const char* src = std::getenv("DETVERIFY_SOURCE_DIR");
  return std::string(src ? src : ".") + "/tests/data";
}

// A DetLLM fixture folder (artifact + expected.json), copied from shared/detllm/fixtures.
inline std::string FixtureDir(const std::string& name) { return DataDir() + "/detllm/" + name; }

// The DetLLM fixtures in tests/data/detllm (README.md there describes each).
inline const std::vector<std::string> kDetllmFixtures = {"tiny-a", "tiny-w2", "tiny-w2b"};

// gtest parameter names: "tiny-w2b" -> "tiny_w2b".
inline std::string FixtureParamName(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& c : n) c = (c == '-' || c == '.') ? '_' : c;
  return n;
}

inline nlohmann::json LoadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// Another backend with other row operations: the products, threads and K/V memory of `inner`,
// the row operations `ops` (borrowed: they must outlive this) or `owned`.
class WithRowOps final : public Backend {
 public:
  WithRowOps(std::unique_ptr<Backend> inner, const RowOps& ops, std::string name)
      : inner_(std::move(inner)), ops_(&ops), name_(std::move(name)) {}
  WithRowOps(std::unique_ptr<Backend> inner, std::unique_ptr<RowOps> owned, std::string name)
      : inner_(std::move(inner)),
        owned_(std::move(owned)),
        ops_(owned_.get()),
        name_(std::move(name)) {}
  std::string_view Name() const override { return name_; }
  int NumThreads() const override { return inner_->NumThreads(); }
  std::unique_ptr<PackedWeight> PackWeight(const int8_t* w8t, int64_t k, int64_t n) override {
    return inner_->PackWeight(w8t, k, n);
  }
  void MatmulI8(const int8_t* a, int64_t m, const PackedWeight& w, int32_t* c) override {
    inner_->MatmulI8(a, m, w, c);
  }
  void ParallelFor(int64_t n, RangeFn body) override { inner_->ParallelFor(n, body); }
  const RowOps& row_ops() const override { return *ops_; }
  std::unique_ptr<KvStorage> AllocateKvStorage(size_t bytes) override {
    return inner_->AllocateKvStorage(bytes);
  }

 private:
  std::unique_ptr<Backend> inner_;
  std::unique_ptr<RowOps> owned_;
  const RowOps* ops_;
  std::string name_;
};

// The block size of that path: not a power of two (the reductions' trees have odd widths) and
// shorter than most rows, longer than the tiny fixtures' heads (idle threads).
inline constexpr int kBlockPathThreads = 13;

// Each backend, and the cpu backend at each ISA level this machine has (x86-64: scalar, AVX2,
// AVX-512 VNNI as available; aarch64: scalar, NEON, and NEON dot product where the CPU has it;
// elsewhere scalar), named "reference", "cpu/avx2", ..., and the device kernels' block programs
// on the host ("block/13").
inline std::vector<std::pair<std::string, std::unique_ptr<Backend>>> EveryExecutionPath() {
  std::vector<std::pair<std::string, std::unique_ptr<Backend>>> paths;
  for (const std::string& name : AvailableBackends()) {
    if (name != "cpu") {
      paths.emplace_back(name, MakeBackend(name));
      continue;
    }
    for (CpuIsa isa : SupportedCpuIsas()) {
      CpuBackendOptions options;
      options.isa = isa;
      paths.emplace_back("cpu/" + std::string(CpuIsaName(isa)), MakeCpuBackend(options));
    }
  }
  // The cuda backend's device programs for the row operations (engine/backends/
  // block_row_ops.h) as a host path: the cpu backend's exact GEMMs and threads, every row
  // operation a block program on an emulated block.
  const std::string block = "block/" + std::to_string(kBlockPathThreads);
  paths.emplace_back(
      block, std::make_unique<WithRowOps>(MakeCpuBackend(),
                                          std::make_unique<BlockRowOps>(kBlockPathThreads), block));
  return paths;
}

// The synthetic qwen3-tiny model (seed 0) on backend `backend_name` at 2 threads.
struct TinyModel {
  explicit TinyModel(const std::string& backend_name)
      : artifact(LoadSynthetic("qwen3-tiny", 0)),
        backend(MakeBackend(backend_name,
                            [] {
                              BackendOptions o;
                              o.threads = 2;
                              return o;
                            }())),
        model(artifact->weights(), *backend) {}
  const ModelConfig& config() const { return artifact->weights().config; }

  std::unique_ptr<Artifact> artifact;
  std::unique_ptr<Backend> backend;
  IntQwen3 model;
};

}  // namespace dv::test
