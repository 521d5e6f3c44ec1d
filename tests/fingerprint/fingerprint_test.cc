#include "fingerprint/fingerprint.h"

#include <stdlib.h>

#include <string>

#include <gtest/gtest.h>

#include "base/canonical_json.h"

namespace dv::fingerprint {
namespace {

bool IsLowerHex(const std::string& text) {
  return text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

TEST(FingerprintTest, HasEveryKeyWithItsType) {
  const nlohmann::json fp = CollectFingerprint();
  ASSERT_TRUE(fp.is_object());
  for (const char* key :
       {"cpu_model", "arch", "byte_order", "os", "kernel", "compiler", "cxx_flags", "build_type",
        "tool_version", "spec_version", "git_commit"}) {
    ASSERT_TRUE(fp.contains(key)) << key;
    EXPECT_TRUE(fp[key].is_string()) << key;
  }
  for (const char* key : {"cpu_model", "arch", "os", "kernel", "compiler", "tool_version",
                          "spec_version", "git_commit"}) {
    EXPECT_FALSE(fp[key].get<std::string>().empty()) << key;
  }
  for (const char* key : {"fingerprint_version", "logical_cores", "memory_bytes"}) {
    ASSERT_TRUE(fp.contains(key)) << key;
    EXPECT_TRUE(fp[key].is_number_integer()) << key;
  }
  EXPECT_EQ(fp["fingerprint_version"], kFingerprintVersion);
  EXPECT_GT(fp["logical_cores"].get<int64_t>(), 0);
  EXPECT_GT(fp["memory_bytes"].get<int64_t>(), 0);
  EXPECT_TRUE(fp["byte_order"] == "little" || fp["byte_order"] == "big") << fp["byte_order"];
  ASSERT_TRUE(fp.contains("emulated"));
  EXPECT_TRUE(fp["emulated"].is_boolean());
  ASSERT_TRUE(fp.contains("gpu"));
  EXPECT_TRUE(fp["gpu"].is_null());

  ASSERT_TRUE(fp.contains("isa"));
  ASSERT_TRUE(fp["isa"].is_object());
  for (const auto& [feature, present] : fp["isa"].items()) {
    EXPECT_TRUE(present.is_boolean()) << feature;
  }
  const std::string arch = fp["arch"];
  if (arch == "x86_64") {
    for (const char* feature :
         {"sse4_2", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni"}) {
      EXPECT_TRUE(fp["isa"].contains(feature)) << feature;
    }
    // Every x86-64 CPU that can run a current Debian has SSE4.2 (x86-64-v2).
    EXPECT_TRUE(fp["isa"]["sse4_2"].get<bool>());
  } else if (arch == "aarch64") {
    for (const char* feature : {"asimd", "asimddp", "i8mm", "sve"}) {
      EXPECT_TRUE(fp["isa"].contains(feature)) << feature;
    }
  }

  ASSERT_TRUE(fp.contains("libraries"));
  for (const char* library : {"sqlite", "openssl", "yaml_cpp", "nlohmann_json"}) {
    ASSERT_TRUE(fp["libraries"].contains(library)) << library;
    EXPECT_TRUE(fp["libraries"][library].is_string()) << library;
    EXPECT_FALSE(fp["libraries"][library].get<std::string>().empty()) << library;
  }
}

TEST(FingerprintTest, HoldsNoFloatsAndIsCanonicalizable) {
  EXPECT_NO_THROW(CanonicalJson(CollectFingerprint()));
}

TEST(FingerprintTest, StoresGpuInfoWhenGiven) {
  const nlohmann::json gpu = {{"name", "NVIDIA H200"}, {"driver", "550.54"}, {"runtime", "12.4"}};
  const nlohmann::json fp = CollectFingerprint(gpu);
  EXPECT_EQ(fp["gpu"], gpu);
  EXPECT_NE(MachineId(fp), MachineId(CollectFingerprint()));
  EXPECT_EQ(DeviceLabel(fp, "cuda"), "NVIDIA H200 (cuda)");
  EXPECT_EQ(DeviceLabel(fp, "cpu"), DeviceLabel(CollectFingerprint()));
}

// A cuda run's choices (GEMM kernels per shape, the forward pass, graphs) are no part of the
// machine: two runs with other shapes on one GPU have one machine id; another GPU model has
// another.
TEST(FingerprintTest, MachineIdLeavesOutTheRunsGpuChoices) {
  const nlohmann::json gpu = {{"name", "NVIDIA H100 80GB HBM3"}, {"compute_capability", "9.0"}};
  nlohmann::json b1 = gpu, b8 = gpu;
  b1["gemm_algorithms"] = "1024x1x1024: dp4a";
  b8["gemm_algorithms"] = "1024x8x1024: cublaslt algo 21 tile 20 splitk 1";
  b8["cuda_graphs"] = "on";
  b8["forward"] = "resident";
  b1["forward"] = "host rows";
  EXPECT_EQ(MachineId(CollectFingerprint(b1)), MachineId(CollectFingerprint(b8)));
  EXPECT_EQ(MachineId(CollectFingerprint(b1)), MachineId(CollectFingerprint(gpu)));
  nlohmann::json other = gpu;
  other["name"] = "NVIDIA H200";
  EXPECT_NE(MachineId(CollectFingerprint(other)), MachineId(CollectFingerprint(gpu)));
  // The stored fingerprint keeps them.
  EXPECT_EQ(CollectFingerprint(b8)["gpu"]["cuda_graphs"], "on");
  EXPECT_EQ(CollectFingerprint(b8)["gpu"]["forward"], "resident");
}

TEST(FingerprintTest, MachineIdIsStableLowercaseSha256) {
  const std::string first = MachineId(CollectFingerprint());
  const std::string second = MachineId(CollectFingerprint());
  EXPECT_EQ(first, second);
  EXPECT_EQ(first.size(), 64u);
  EXPECT_TRUE(IsLowerHex(first)) << first;
}

TEST(FingerprintTest, MachineIdKnownValue) {
  // SHA-256 of the canonical text {"a":1}.
  EXPECT_EQ(MachineId(nlohmann::json{{"a", 1}}),
            "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862");
  EXPECT_THROW(MachineId(nlohmann::json{{"a", 1.5}}), CanonicalJsonError);
}

TEST(FingerprintTest, EmulatedFlagFollowsEnvironment) {
  // The cross-ISA runner may have set the variable for the whole test binary; restore it.
  const char* previous = getenv("DETVERIFY_EMULATED");
  const std::string saved = previous != nullptr ? previous : "";
  ASSERT_EQ(setenv("DETVERIFY_EMULATED", "1", 1), 0);
  const nlohmann::json emulated = CollectFingerprint();
  if (previous != nullptr) {
    ASSERT_EQ(setenv("DETVERIFY_EMULATED", saved.c_str(), 1), 0);
  } else {
    ASSERT_EQ(unsetenv("DETVERIFY_EMULATED"), 0);
  }
  EXPECT_TRUE(emulated["emulated"].get<bool>());
  EXPECT_NE(DeviceLabel(emulated).find("emulated"), std::string::npos) << DeviceLabel(emulated);
}

TEST(FingerprintTest, DeviceLabelIsShortAndNonEmpty) {
  const std::string label = DeviceLabel(CollectFingerprint());
  EXPECT_FALSE(label.empty());
  EXPECT_LE(label.size(), 48u) << label;
  EXPECT_EQ(DeviceLabel(nlohmann::json::object()), "unknown cpu (cpu)");
  EXPECT_FALSE(DeviceLabel(nullptr).empty());
}

TEST(FingerprintTest, DeviceLabelShortensCommonModelNames) {
  EXPECT_EQ(DeviceLabel({{"cpu_model", "AMD EPYC 9654 96-Core Processor"}}), "AMD EPYC 9654 (cpu)");
  EXPECT_EQ(DeviceLabel({{"cpu_model", "Intel(R) Xeon(R) Platinum 8480+ CPU @ 2.00GHz"}}),
            "Intel Xeon Platinum 8480+ (cpu)");
  EXPECT_EQ(
      DeviceLabel({{"cpu_model", "ARM Neoverse-V2"}, {"arch", "aarch64"}, {"emulated", true}}),
      "ARM Neoverse-V2 (aarch64 emulated)");
}

}  // namespace
}  // namespace dv::fingerprint
