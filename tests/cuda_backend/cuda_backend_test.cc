// The cuda backend: its host-side rules everywhere, its GEMMs against MatmulI8Ref (whole buffers,
// exact) where a GPU is present. Without one, the device tests skip and say so.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "cuda_device/cuda_device.h"
#include "engine/artifact.h"
#include "engine/backends/backend_registry.h"
#include "engine/backends/cuda_backend.h"
#include "engine/backends/cuda_forward.h"
#include "engine/backends/cuda_gemm_dp4a_lane.h"
#include "engine/backends/reference_backend.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "engine/model_source.h"
#include "tests/cpu_backend/cpu_test_support.h"
#include "tests/engine/test_support.h"
#include "tests/support/scratch_files.h"

namespace dv {
namespace {

bool HaveDevice() { return CudaDeviceCount() > 0; }

// A shell command's exit status and output (stderr included).
std::pair<int, std::string> Shell(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed: " + command};
  std::string out;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) out.append(buffer, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(CudaBackendHost, GemmShapesArePaddedToFour) {
  for (int64_t out : {1, 3, 4, 5, 1024, 151936}) {
    for (int64_t k : {1, 2, 4, 7, 1024, 3072}) {
      const CudaGemmShape s = CudaGemmShapeFor(8, out, k);
      EXPECT_EQ(s.m_pad % 4, 0) << out;
      EXPECT_EQ(s.k_pad % 4, 0) << k;
      EXPECT_GE(s.m_pad, out);
      EXPECT_LT(s.m_pad - out, 4);
      EXPECT_GE(s.k_pad, k);
      EXPECT_LT(s.k_pad - k, 4);
      EXPECT_EQ(s.lda, s.k_pad);
      EXPECT_EQ(s.ldb, s.k_pad);
      EXPECT_EQ(s.ldd, s.m_pad);
      EXPECT_EQ(s.tokens, 8);
    }
  }
}

// A plan's token count: exact for decode batches, a bounded set of shapes for prompts.
TEST(CudaBackendHost, PlanTokensAreBoundedAndCoverTheBatch) {
  for (int64_t t = 1; t <= 16; ++t) EXPECT_EQ(CudaPlanTokens(t), t);
  const std::vector<std::pair<int64_t, int64_t>> points = {
      {17, 32},   {32, 32},   {33, 64},   {64, 64},     {65, 128},    {200, 256},  {256, 256},
      {257, 512}, {512, 512}, {513, 768}, {4095, 4096}, {4096, 4096}, {4097, 4352}};
  for (const auto& [tokens, want] : points) EXPECT_EQ(CudaPlanTokens(tokens), want) << tokens;
  std::vector<int64_t> shapes;
  int64_t last = 0;
  for (int64_t t = 1; t <= 8192; ++t) {
    const int64_t p = CudaPlanTokens(t);
    ASSERT_GE(p, t);
    ASSERT_GE(p, last) << t;  // never fewer columns for a longer batch
    ASSERT_TRUE(t <= 256 ? p < 2 * t || t <= 16 : p < t + 256) << t;
    if (p != last) shapes.push_back(p);
    last = p;
  }
  // 16 exact + 32..256 (4) + 512..8192 in steps of 256 (31).
  EXPECT_EQ(shapes.size(), 51u);
}

// k * 127 * 128 < 2^31: 132104 * 16256 = 2147482624 fits, 132105 * 16256 = 2147498880 does not.
TEST(CudaBackendHost, SaturationBoundIsCheckedAtLoad) {
  EXPECT_NO_THROW(CheckCudaInnerDimension(1, 1));
  EXPECT_NO_THROW(CheckCudaInnerDimension(132104, 1));
  EXPECT_THROW(CheckCudaInnerDimension(132105, 1), BackendError);
  EXPECT_THROW(CheckCudaInnerDimension(0, 4), BackendError);
  EXPECT_THROW(CheckCudaInnerDimension(4, 0), BackendError);
  try {
    CheckCudaInnerDimension(200000, 8);
    FAIL() << "no error";
  } catch (const BackendError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("200000"), std::string::npos) << what;
    EXPECT_NE(what.find("2^31"), std::string::npos) << what;
  }
}

TEST(CudaBackendHost, KernelNames) {
  EXPECT_EQ(ParseCudaGemm("auto"), CudaGemm::kAuto);
  EXPECT_EQ(ParseCudaGemm("cublaslt"), CudaGemm::kCublasLt);
  EXPECT_EQ(ParseCudaGemm("dp4a"), CudaGemm::kDp4a);
  EXPECT_STREQ(CudaGemmName(CudaGemm::kDp4a), "dp4a");
  EXPECT_THROW(ParseCudaGemm("cublas"), BackendError);
}

// Without a GPU (or its driver) --backend cuda is one line naming the backend and what the CUDA
// runtime said, and the registry lists cuda as absent.
TEST(CudaBackendHost, NoDeviceIsOneLineError) {
  if (HaveDevice()) GTEST_SKIP() << "a CUDA device is present: nothing to refuse";
  EXPECT_FALSE(BackendAvailable(BackendKind::kCuda));
  EXPECT_FALSE(BackendAvailable("cuda"));
  const std::string why = BackendAbsence(BackendKind::kCuda);
  EXPECT_NE(why.find("no CUDA device"), std::string::npos) << why;
  try {
    MakeBackend("cuda");
    FAIL() << "no error";
  } catch (const BackendError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_EQ(what.rfind("backend 'cuda': no CUDA device here (cudaGetDeviceCount: ", 0), 0u)
        << what;
  }
  EXPECT_THROW(MakeCudaBackend(), BackendError);
}

// Device tests over parameters P: skipped, visibly, without a device.
template <typename P>
class WithDevice : public ::testing::TestWithParam<P> {
 protected:
  void SetUp() override {
    if (!HaveDevice()) {
      std::string why;
      CudaDeviceCount(&why);
      GTEST_SKIP() << "no CUDA device (" << why << ")";
    }
  }
};

class CudaDevice : public WithDevice<CudaGemm> {
 protected:
  std::unique_ptr<Backend> Make() {
    CudaBackendOptions o;
    o.gemm = GetParam();
    o.host_threads = 2;
    return MakeCudaBackend(o);
  }
};

// The dp4a kernel's grid run on the host: every (block, warp, lane) in the kernel's order, the
// lanes' partials from Dp4aLanePartials, the warp's shuffle-down tree from WarpSumStep (a lane
// whose partner is past the warp keeps its own value, as __shfl_down_sync returns it), lane 0's
// result stored. Operands laid out as the backend lays them on the device (CudaGemmShapeFor).
std::vector<int32_t> GemmDp4aOnHost(const std::vector<int8_t>& a, int64_t m,
                                    const std::vector<int8_t>& w, int64_t k, int64_t n,
                                    int64_t grid_y_limit) {
  const CudaGemmShape s = CudaGemmShapeFor(m, n, k);
  std::vector<int8_t> wt(static_cast<size_t>(s.m_pad * s.k_pad), 0);
  std::vector<int8_t> ap(static_cast<size_t>(m * s.k_pad), 0);
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t o = 0; o < n; ++o) {
      wt[static_cast<size_t>(o * s.k_pad + i)] = w[static_cast<size_t>(i * n + o)];
    }
  }
  for (int64_t t = 0; t < m; ++t) {
    for (int64_t i = 0; i < k; ++i) {
      ap[static_cast<size_t>(t * s.k_pad + i)] = a[static_cast<size_t>(t * k + i)];
    }
  }
  // Ints as the kernel reads them (4 bytes of a row, little-endian).
  auto as_ints = [](const std::vector<int8_t>& bytes) {
    std::vector<int> out(bytes.size() / 4);
    for (size_t i = 0; i < out.size(); ++i) {
      uint32_t v = 0;
      for (int b = 3; b >= 0; --b)
        v = v << 8 | static_cast<uint8_t>(bytes[4 * i + static_cast<size_t>(b)]);
      out[i] = static_cast<int>(v);
    }
    return out;
  };
  const std::vector<int> wi = as_ints(wt), ai = as_ints(ap);
  const int64_t k4 = s.k_pad / 4;
  std::vector<int32_t> d(static_cast<size_t>(m * s.m_pad), -99);
  int64_t grid_y = (m + cuda::kDp4aTokenTile - 1) / cuda::kDp4aTokenTile;
  if (grid_y > grid_y_limit) grid_y = grid_y_limit;
  for (int64_t row = 0; row < s.m_pad; ++row) {
    for (int64_t by = 0; by < grid_y; ++by) {
      for (int64_t t0 = by * cuda::kDp4aTokenTile; t0 < m; t0 += grid_y * cuda::kDp4aTokenTile) {
        const int64_t nt = std::min<int64_t>(m - t0, cuda::kDp4aTokenTile);
        int acc[cuda::kDp4aWarp][cuda::kDp4aTokenTile];
        for (int lane = 0; lane < cuda::kDp4aWarp; ++lane) {
          cuda::Dp4aLanePartials(wi.data() + row * k4, ai.data() + t0 * k4, k4, nt, lane,
                                 acc[lane]);
        }
        for (int t = 0; t < cuda::kDp4aTokenTile; ++t) {
          int v[cuda::kDp4aWarp];
          for (int lane = 0; lane < cuda::kDp4aWarp; ++lane) v[lane] = acc[lane][t];
          for (int offset = cuda::kDp4aWarp / 2; offset > 0; offset /= 2) {
            int next[cuda::kDp4aWarp];
            for (int lane = 0; lane < cuda::kDp4aWarp; ++lane) {
              const int partner = lane + offset < cuda::kDp4aWarp ? v[lane + offset] : v[lane];
              next[lane] = cuda::WarpSumStep(v[lane], partner);
            }
            std::copy(next, next + cuda::kDp4aWarp, v);
          }
          if (t < nt) d[static_cast<size_t>((t0 + t) * s.m_pad + row)] = v[0];
        }
      }
    }
  }
  std::vector<int32_t> c(static_cast<size_t>(m * n));
  for (int64_t t = 0; t < m; ++t) {
    for (int64_t o = 0; o < n; ++o) {
      c[static_cast<size_t>(t * n + o)] = d[static_cast<size_t>(t * s.m_pad + o)];
    }
  }
  return c;
}

TEST(CudaBackendHost, Dp4aMatchesDefinition) {
  EXPECT_EQ(cuda::Dp4a(0x7f80ff01, 0x01020304, 5), 5 + 1 * 4 + (-1) * 3 + (-128) * 2 + 127 * 1);
  EXPECT_EQ(cuda::Dp4a(static_cast<int>(0x80808080u), static_cast<int>(0x80808080u), 0), 4 * 16384);
}

// The kernel's indexing, token tiles (8) and warp tree (32 lanes) on the host, against
// MatmulI8Ref: shapes across the tile and warp widths, the grid's y limit forcing the stride loop.
TEST(CudaBackendHost, Dp4aKernelArithmeticOnTheHost) {
  test::TestRng rng(25);
  for (int64_t m : {1, 3, 8, 9, 17}) {
    // k4 = Pad4(k) / 4: 16-byte loads where it is a multiple of 4 (k 64, 127, 128, 1024), ints
    // otherwise.
    for (int64_t k : {1, 3, 4, 5, 64, 127, 128, 129, 260, 1000, 1024}) {
      for (int64_t n : {1, 3, 4, 5, 9}) {
        const auto a = test::RandomI8(static_cast<size_t>(m * k), rng);
        const auto w = test::RandomI8(static_cast<size_t>(k * n), rng);
        std::vector<int32_t> want(static_cast<size_t>(m * n));
        MatmulI8Ref(a.data(), m, k, w.data(), n, want.data());
        for (int64_t grid_y_limit : {int64_t{65535}, int64_t{1}}) {
          EXPECT_TRUE(test::SameBits(want, GemmDp4aOnHost(a, m, w, k, n, grid_y_limit)))
              << "m " << m << " k " << k << " n " << n << " grid y <= " << grid_y_limit;
        }
      }
    }
  }
}

// A lane reads 16 bytes at a time only from rows of whole 16-byte groups that start on 16
// bytes; the warp's sums are the same either way (the products are split among the lanes
// differently).
TEST(CudaBackendHost, Dp4aLoadWidthsGiveTheSameSums) {
  test::TestRng rng(26);
  const int64_t k4 = 64, nt = 5;
  // Room to start the rows 4 bytes past a 16-byte boundary.
  std::vector<cuda::Dp4aGroup> w_store(static_cast<size_t>(k4 / 4 + 1));
  std::vector<cuda::Dp4aGroup> a_store(static_cast<size_t>(nt * k4 / 4 + 1));
  const auto bytes = test::RandomI8(static_cast<size_t>((1 + nt) * k4 * 4), rng);
  auto sums = [&](int offset, bool want_wide) {
    int* w = w_store[0].v + offset;
    int* a = a_store[0].v + offset;
    std::memcpy(w, bytes.data(), static_cast<size_t>(k4) * 4);
    std::memcpy(a, bytes.data() + k4 * 4, static_cast<size_t>(nt * k4) * 4);
    EXPECT_EQ(cuda::Dp4aLoads16(w, a, k4), want_wide) << "offset " << offset;
    std::vector<int> total(cuda::kDp4aTokenTile, 0);
    for (int lane = 0; lane < cuda::kDp4aWarp; ++lane) {
      int acc[cuda::kDp4aTokenTile];
      cuda::Dp4aLanePartials(w, a, k4, nt, lane, acc);
      for (int t = 0; t < cuda::kDp4aTokenTile; ++t) total[static_cast<size_t>(t)] += acc[t];
    }
    return total;
  };
  const std::vector<int> wide = sums(0, true), narrow = sums(1, false);
  EXPECT_EQ(wide, narrow);
  EXPECT_FALSE(cuda::Dp4aLoads16(w_store[0].v, a_store[0].v, 63));  // not whole groups
  // Against the definition.
  for (int64_t t = 0; t < nt; ++t) {
    int want = 0;
    for (int64_t i = 0; i < k4 * 4; ++i) {
      want += bytes[static_cast<size_t>(i)] * bytes[static_cast<size_t>(k4 * 4 * (1 + t) + i)];
    }
    EXPECT_EQ(wide[static_cast<size_t>(t)], want) << "token " << t;
  }
}

void CheckShape(Backend& backend, int64_t m, int64_t k, int64_t n, test::TestRng& rng) {
  EXPECT_TRUE(test::MatmulMatchesReference(backend, m, k, n, rng));
}

// m, k and n around the multiples of 4 the cuBLASLt int8 kernels need, the dp4a kernel's token
// tile of 8 and warp width of 32.
TEST_P(CudaDevice, OddShapes) {
  test::TestRng rng(21);
  auto backend = Make();
  for (int64_t m : {1, 2, 3, 4, 5, 8, 9, 17, 33}) {
    for (int64_t k : {1, 3, 4, 5, 31, 64, 129}) {
      for (int64_t n : {1, 3, 4, 5, 33, 130}) CheckShape(*backend, m, k, n, rng);
    }
  }
}

TEST_P(CudaDevice, ModelShapes) {
  test::TestRng rng(22);
  auto backend = Make();
  // 300 after 512: its plan computes 512 columns, the last 212 over an earlier call's rows.
  for (int64_t m : {1, 8, 64, 512, 300}) {
    CheckShape(*backend, m, 1024, 4096, rng);
    CheckShape(*backend, m, 3072, 1024, rng);
  }
  CheckShape(*backend, 1, 1024, 151936, rng);  // the head
}

// The largest inner dimension the bound allows, every product -127 * -128: the sum is
// 132104 * 16256 = 2147482624, one step from INT32_MAX's neighbourhood, exact on every kernel.
TEST_P(CudaDevice, LargestInnerDimension) {
  auto backend = Make();
  const int64_t k = 132104, n = 8, m = 5;
  std::vector<int8_t> a(static_cast<size_t>(m * k), -127), w(static_cast<size_t>(k * n), -128);
  std::vector<int32_t> want(static_cast<size_t>(m * n)), got(static_cast<size_t>(m * n), 0);
  MatmulI8Ref(a.data(), m, k, w.data(), n, want.data());
  EXPECT_EQ(want[0], 2147482624);
  auto packed = backend->PackWeight(w.data(), k, n);
  backend->MatmulI8(a.data(), m, *packed, got.data());
  EXPECT_TRUE(test::SameBits(want, got));
  EXPECT_THROW(backend->PackWeight(w.data(), k + 1, 1), BackendError);
}

// q, k and v share one upload of the activations; each product equals its own GEMM.
TEST_P(CudaDevice, FusedEqualsSeparate) {
  test::TestRng rng(23);
  auto backend = Make();
  const int64_t m = 6, k = 1024;
  const auto a = test::RandomI8(static_cast<size_t>(m * k), rng);
  std::vector<std::vector<int8_t>> w;
  std::vector<std::unique_ptr<PackedWeight>> packed;
  for (int64_t n : {2048, 1024, 1024}) {
    w.push_back(test::RandomI8(static_cast<size_t>(k * n), rng));
    packed.push_back(backend->PackWeight(w.back().data(), k, n));
  }
  std::vector<std::vector<int32_t>> got(3), want(3);
  for (size_t i = 0; i < 3; ++i) {
    got[i].assign(static_cast<size_t>(m * packed[i]->n), -1);
    want[i].resize(got[i].size());
    MatmulI8Ref(a.data(), m, k, w[i].data(), packed[i]->n, want[i].data());
  }
  const PackedWeight* const ws[] = {packed[0].get(), packed[1].get(), packed[2].get()};
  int32_t* const cs[] = {got[0].data(), got[1].data(), got[2].data()};
  backend->MatmulI8Fused(a.data(), m, ws, cs);
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(test::SameBits(want[i], got[i])) << i;
}

// The fingerprint's "gpu": the device, and the kernel chosen for each shape that ran.
TEST_P(CudaDevice, DeviceFactsNameTheKernels) {
  test::TestRng rng(24);
  auto backend = Make();
  CheckShape(*backend, 16, 64, 64, rng);
  std::string name, algos;
  for (const auto& [key, value] : backend->DeviceFacts()) {
    if (key == "name") name = value;
    if (key == "gemm_algorithms") algos = value;
  }
  EXPECT_FALSE(name.empty());
  EXPECT_NE(algos.find("64x16x64: "), std::string::npos) << algos;
  if (GetParam() == CudaGemm::kDp4a) {
    EXPECT_NE(algos.find("dp4a"), std::string::npos) << algos;
  }
  if (GetParam() == CudaGemm::kCublasLt) {
    EXPECT_NE(algos.find("cublaslt algo"), std::string::npos) << algos;
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, CudaDevice,
                         ::testing::Values(CudaGemm::kAuto, CudaGemm::kCublasLt, CudaGemm::kDp4a),
                         [](const ::testing::TestParamInfo<CudaGemm>& p) {
                           return std::string(CudaGemmName(p.param));
                         });

TEST(CudaBackendHost, ForwardNames) {
  EXPECT_TRUE(ParseCudaForward("resident"));
  EXPECT_FALSE(ParseCudaForward("host-rows"));
  EXPECT_THROW(ParseCudaForward("device"), BackendError);
}

// DETVERIFY_CUDA_STEP_THREADS: whole warps, up to the kernels' launch bound.
TEST(CudaBackendHost, StepThreads) {
  EXPECT_EQ(ParseCudaStepThreads("32"), 32);
  EXPECT_EQ(ParseCudaStepThreads("128"), 128);
  EXPECT_EQ(ParseCudaStepThreads(std::to_string(kCudaMaxStepThreads)), kCudaMaxStepThreads);
  for (const char* bad :
       {"", "0", "16", "96x", "100", "-128", " 128", "544", "1024", "99999999999"}) {
    try {
      ParseCudaStepThreads(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const BackendError& e) {
      EXPECT_EQ(std::string(e.what()), "cuda step threads '" + std::string(bad) +
                                           "': a multiple of 32 from 32 to " +
                                           std::to_string(kCudaMaxStepThreads));
    }
  }
  // An explicit CudaBackendOptions::step_threads: the same range, the same error.
  for (int good : {32, 64, 128, 480, kCudaMaxStepThreads}) {
    EXPECT_TRUE(CudaStepThreadsValid(good)) << good;
    EXPECT_EQ(CheckCudaStepThreads(good), good);
  }
  for (int bad : {-32, 1, 16, 31, 33, 100, kCudaMaxStepThreads + 32, 1 << 30}) {
    EXPECT_FALSE(CudaStepThreadsValid(bad)) << bad;
    try {
      CheckCudaStepThreads(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const BackendError& e) {
      EXPECT_EQ(std::string(e.what()), "cuda step threads '" + std::to_string(bad) +
                                           "': a multiple of 32 from 32 to " +
                                           std::to_string(kCudaMaxStepThreads));
    }
  }
  // MakeCudaBackend checks the options before it looks for a device: the same error anywhere.
  CudaBackendOptions o;
  o.step_threads = 100;
  try {
    MakeCudaBackend(o);
    ADD_FAILURE() << "accepted step_threads 100";
  } catch (const BackendError& e) {
    EXPECT_EQ(std::string(e.what()), "cuda step threads '100': a multiple of 32 from 32 to " +
                                         std::to_string(kCudaMaxStepThreads));
  }
}

// What scripts/cuda_device_check.sh --programs names (build-tree paths, a line each).
std::vector<std::string> DeviceCheckPrograms(const std::string& source) {
  const std::string command = "/bin/bash '" + source + "/scripts/cuda_device_check.sh' --programs";
  const auto [status, listing] = Shell(command);
  EXPECT_EQ(status, 0) << command << "\n" << listing;
  std::vector<std::string> programs;
  for (size_t at = 0, end; (end = listing.find('\n', at)) != std::string::npos; at = end + 1) {
    if (end > at) programs.push_back(listing.substr(at, end - at));
  }
  return programs;
}

// scripts/cuda_device_check.sh --programs names what a GPU machine runs and what
// scripts/cuda_bundle.sh packs for it: every one of them is a program this build makes (a test
// renamed or removed would otherwise surface only there, where the machine cannot rebuild).
TEST(CudaDeviceCheck, ItsProgramsAreThisBuildsPrograms) {
  const char* src = std::getenv("DETVERIFY_SOURCE_DIR");
  const char* bin = std::getenv("DETVERIFY_BINARY_DIR");
  ASSERT_TRUE(src != nullptr && bin != nullptr) << "run through ctest";
  const std::vector<std::string> programs = DeviceCheckPrograms(src);
  for (const char* expected :
       {"cli/detverify", "tests/cuda_backend/cuda_backend_test",
        "tests/float_engine/float_cuda_test", "tests/engine/test_device_forward"}) {
    EXPECT_NE(std::find(programs.begin(), programs.end(), expected), programs.end()) << expected;
  }
  for (const std::string& p : programs) {
    const std::string path = std::string(bin) + "/" + p;
    EXPECT_EQ(access(path.c_str(), X_OK), 0) << path << " is not a program of this build";
  }
}

// scripts/cuda_bundle.sh packs what the GPU machine runs (the device check's --programs list) at
// its build-tree paths, the libraries they load but the C library's and CUDA's, and the bundle's
// records (commit, the newest GLIBC_ version the programs name); unpacked, every program finds
// each library it loads, but those, in the bundle's lib/, and the CLI starts from there. The
// GPU machine cannot rebuild: a bundle that is short of something fails there, after the
// machine's start-up is paid for. (xz at its fastest level here: the contents are what counts.)
TEST(CudaDeviceCheck, TheBundleHoldsWhatTheCheckRuns) {
  const char* src = std::getenv("DETVERIFY_SOURCE_DIR");
  const char* bin = std::getenv("DETVERIFY_BINARY_DIR");
  ASSERT_TRUE(src != nullptr && bin != nullptr) << "run through ctest";
  const test_files::ScratchDir scratch("bundle");  // removed even when an assertion returns
  const std::string dir = scratch.Path().string(), unpacked = dir + "/unpacked";
  const std::string source = std::string(src), build = std::string(bin);
  const auto [packed, pack_log] =
      Shell("XZ_OPT=-0 /bin/bash '" + source + "/scripts/cuda_bundle.sh' '" + build + "' '" + dir +
            "/bundle.tar.xz'");
  ASSERT_EQ(packed, 0) << pack_log;
  ASSERT_EQ(Shell("mkdir '" + unpacked + "' && tar -C '" + unpacked + "' -xJf '" + dir +
                  "/bundle.tar.xz'")
                .first,
            0);
  const std::vector<std::string> programs = DeviceCheckPrograms(source);
  ASSERT_GE(programs.size(), 4u);
  const auto [read_records, records] =
      Shell("cat '" + unpacked + "/commit' '" + unpacked + "/glibc-needed'");
  EXPECT_EQ(read_records, 0) << records;
  EXPECT_NE(records.find("GLIBC_2."), std::string::npos) << records;
  const std::string env = "LD_LIBRARY_PATH='" + unpacked + "/lib' ";
  for (const std::string& p : programs) {
    const std::string path = unpacked + "/" + p;
    ASSERT_EQ(access(path.c_str(), X_OK), 0) << p << " is not in the bundle";
    const auto [ldd_status, ldd] = Shell(env + "ldd '" + path + "'");
    EXPECT_EQ(ldd_status, 0) << ldd;
    for (size_t at = 0, end; (end = ldd.find('\n', at)) != std::string::npos; at = end + 1) {
      const std::string line = ldd.substr(at, end - at);
      EXPECT_EQ(line.find("not found"), std::string::npos) << p << ": " << line;
      const size_t arrow = line.find("=> /");
      if (arrow == std::string::npos) continue;
      bool machines_own = false;  // the C library's and CUDA's: the GPU machine's own
      for (const char* own : {"libc.so", "libm.so", "libdl.so", "libpthread.so", "librt.so",
                              "ld-linux", "libcuda.so", "libcudart", "libcublas", "libnvidia"}) {
        machines_own = machines_own || line.find(own) < arrow;
      }
      if (!machines_own) {
        EXPECT_NE(line.find("=> " + unpacked + "/lib/"), std::string::npos)
            << p << " loads a library from outside the bundle: " << line;
      }
    }
  }
  const auto [started, version] = Shell(env + "'" + unpacked + "/cli/detverify' --version");
  EXPECT_EQ(started, 0) << version;
  EXPECT_EQ(version.rfind("0.", 0), 0u) << version;
}

// The backend's device code as its SASS says, where cuobjdump is at hand (DETVERIFY_CUOBJDUMP:
// NVIDIA's toolkit or PyPI's nvidia-cuda-cuobjdump): what docs/NOTES.md claims of it, held here
// rather than read off by hand.
constexpr const char* kNoCuobjdump =
    "cuobjdump not found (DETVERIFY_CUOBJDUMP): the device code's SASS cannot be read on this "
    "machine (pip install nvidia-cuda-cuobjdump, or NVIDIA's toolkit, gives it)";

std::string CuobjdumpOfTheBackend(const std::string& option) {
  const std::string command =
      "LC_ALL=C '" + std::string(DV_CUOBJDUMP) + "' " + option + " '" DV_CUDA_ARCHIVE "'";
  const auto [status, out] = Shell(command);
  EXPECT_EQ(status, 0) << command << "\n" << out.substr(0, 2000);
  return out;
}

// Each "Function : name" section of a SASS listing, by name (one per architecture).
std::vector<std::pair<std::string, std::string>> SassFunctions(const std::string& sass) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::string mark = "Function : ";
  for (size_t at = sass.find(mark); at != std::string::npos;) {
    const size_t name_end = sass.find('\n', at);
    const size_t next = sass.find(mark, at + mark.size());
    out.emplace_back(sass.substr(at + mark.size(), name_end - at - mark.size()),
                     sass.substr(name_end, next == std::string::npos ? next : next - name_end));
    at = next;
  }
  return out;
}

// The dp4a GEMM reads whole 16-byte groups of a row per lane (CudaBackendHost.
// Dp4aLoadWidthsGiveTheSameSums holds its arithmetic): 128-bit global loads in every
// architecture's build of it.
TEST(CudaBackendSass, Dp4aKernelLoadsSixteenBytesALane) {
  if (std::string(DV_CUOBJDUMP).empty()) GTEST_SKIP() << kNoCuobjdump;
  int kernels = 0;
  for (const auto& [name, body] : SassFunctions(CuobjdumpOfTheBackend("-sass"))) {
    if (name.find("GemmDp4aKernel") == std::string::npos) continue;
    ++kernels;
    EXPECT_NE(body.find("LDG.E.128"), std::string::npos) << name << ": no 128-bit loads";
  }
  EXPECT_GE(kernels, 1) << "GemmDp4aKernel not found in " DV_CUDA_ARCHIVE;
}

// No kernel of the backend spills registers (LOCAL:0) or keeps a stack (STACK:0), and the step
// kernels fit their launch bound: at kCudaMaxStepThreads threads a block, at most 65536 /
// kCudaMaxStepThreads registers a thread.
TEST(CudaBackendSass, NoKernelSpillsAndStepKernelsFitTheirBound) {
  if (std::string(DV_CUOBJDUMP).empty()) GTEST_SKIP() << kNoCuobjdump;
  const std::string usage = CuobjdumpOfTheBackend("--dump-resource-usage");
  int functions = 0, steps = 0;
  const std::string mark = " Function ";
  for (size_t at = usage.find(mark); at != std::string::npos; at = usage.find(mark, at + 1)) {
    const size_t name_end = usage.find(":\n", at);
    ASSERT_NE(name_end, std::string::npos) << usage.substr(at, 200);
    const std::string name = usage.substr(at + mark.size(), name_end - at - mark.size());
    const size_t line_end = usage.find('\n', name_end + 2);
    const std::string line = usage.substr(name_end + 2, line_end - name_end - 2);
    ++functions;
    EXPECT_NE(line.find(" STACK:0 "), std::string::npos) << name << ": " << line;
    EXPECT_NE(line.find(" LOCAL:0 "), std::string::npos) << name << ": " << line;
    const size_t reg = line.find("REG:");
    ASSERT_NE(reg, std::string::npos) << name << ": " << line;
    if (name.find("StepKernel") != std::string::npos) {
      ++steps;
      EXPECT_LE(std::atoi(line.c_str() + reg + 4), 65536 / kCudaMaxStepThreads)
          << name << ": " << line;
    }
  }
  EXPECT_GE(functions, 8) << usage.substr(0, 2000);
  EXPECT_GE(steps, 7) << "the resident pass's step kernels";
}

// The resident forward pass (engine/backends/cuda_forward.h) against the reference backend:
// batches of rows of different lengths, prefill split in pieces, greedy decode (replayed graphs
// after the first decode call of each shape), on the DetLLM fixtures (tiny-w2 and tiny-w2b wrap
// int64) and the synthetic model; every call's logits and the wrap events equal. Parameters:
// GEMM kernel, graphs on or off.
class CudaResident : public WithDevice<std::pair<CudaGemm, bool>> {};

// The resident pass with options o against the reference backend (the comparison above).
void ExpectResidentEqualsReference(const CudaBackendOptions& o) {
  const std::vector<std::vector<int32_t>> prompts = {
      {11, 48, 85, 122, 159, 196, 233, 270, 307, 344, 381, 418, 455}, {5, 9}, {700, 3, 14, 15}};
  std::vector<std::unique_ptr<Artifact>> models;
  for (const std::string& f : test::kDetllmFixtures)
    models.push_back(Artifact::Load(test::FixtureDir(f)));
  models.push_back(LoadSynthetic("qwen3-tiny", 0));
  for (const auto& artifact : models) {
    auto cuda = MakeCudaBackend(o);
    auto ref = MakeReferenceBackend();
    IntQwen3 a(artifact->weights(), *ref), b(artifact->weights(), *cuda);
    const int64_t V = artifact->weights().config.vocab;
    for (const int64_t split : {0, 4}) {
      GenerationOptions go;
      go.max_new = 16;
      go.split = split;
      go.keep_logits = true;
      std::vector<std::vector<int32_t>> rows = prompts;
      for (auto& r : rows) {
        for (auto& id : r) id = static_cast<int32_t>(id % V);
      }
      const auto want = GenerateGreedy(a, rows, go);
      const auto got = GenerateGreedy(b, rows, go);
      for (size_t r = 0; r < rows.size(); ++r) {
        ASSERT_EQ(want[r].logits_chain.back(), got[r].logits_chain.back())
            << artifact->sha256() << " row " << r << " split " << split;
        ASSERT_EQ(want[r].tokens, got[r].tokens);
      }
      EXPECT_EQ(a.wrap_events(), b.wrap_events()) << artifact->sha256();
    }
  }
}

TEST_P(CudaResident, EqualsTheReference) {
  CudaBackendOptions o;
  o.gemm = GetParam().first;
  o.graphs = GetParam().second;
  o.host_threads = 2;
  ExpectResidentEqualsReference(o);
}

// Other block widths of the steps (DETVERIFY_CUDA_STEP_THREADS): the same bits, since every
// block program is exact at any width; the default (128) runs above.
TEST(CudaResidentWidths, EqualsTheReferenceAtOtherWidths) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  for (const int threads : {32, kCudaMaxStepThreads}) {
    SCOPED_TRACE(threads);
    CudaBackendOptions o;
    o.step_threads = threads;
    o.host_threads = 2;
    ASSERT_NO_FATAL_FAILURE(ExpectResidentEqualsReference(o));
  }
}

// A K/V cache of the resident pass never asks for more managed memory than the device has free:
// just past it (by 64 MiB, which an unguarded cudaMallocManaged would grant by oversubscribing)
// it is an allocation failure; a small one is zero-filled storage the host reads.
TEST(CudaResidentMemory, KvStorageBeyondFreeMemoryIsAnAllocationFailure) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  auto cuda = MakeCudaBackend(CudaBackendOptions{});
  const size_t free_bytes = CudaFreeBytes();
  ASSERT_GT(free_bytes, 0u);
  EXPECT_THROW(cuda->AllocateKvStorage(free_bytes + (size_t{64} << 20)), std::bad_alloc);
  const auto small = cuda->AllocateKvStorage(4096);
  ASSERT_NE(small, nullptr);
  EXPECT_TRUE(std::all_of(small->data(), small->data() + 4096, [](uint8_t v) { return v == 0; }));
}

// The fingerprint says which pass ran and whether graphs were on.
TEST_P(CudaResident, DeviceFactsNameTheForwardPass) {
  CudaBackendOptions o;
  o.gemm = GetParam().first;
  o.graphs = GetParam().second;
  auto cuda = MakeCudaBackend(o);
  std::string forward, graphs, threads;
  for (const auto& [key, value] : cuda->DeviceFacts()) {
    if (key == "forward") forward = value;
    if (key == "cuda_graphs") graphs = value;
    if (key == "step_threads") threads = value;
  }
  EXPECT_EQ(forward, "resident");
  EXPECT_EQ(graphs, GetParam().second ? "on" : "off");
  EXPECT_EQ(threads, std::to_string(kCudaStepThreads));
}

INSTANTIATE_TEST_SUITE_P(
    KernelsAndGraphs, CudaResident,
    ::testing::Values(std::pair{CudaGemm::kAuto, true}, std::pair{CudaGemm::kAuto, false},
                      std::pair{CudaGemm::kCublasLt, true}, std::pair{CudaGemm::kDp4a, true}),
    [](const ::testing::TestParamInfo<std::pair<CudaGemm, bool>>& p) {
      return std::string(CudaGemmName(p.param.first)) + (p.param.second ? "_graphs" : "_eager");
    });

}  // namespace
}  // namespace dv
