// Emulated rows end to end: scenarios/cross.yaml through the detverify binary, with the aarch64
// (and, when built, s390x) detverify-engine under qemu-user. Every row that ran must give the one
// int8 hash of the native rows, and the emulated rows must be recorded with their own machine:
// the emulated architecture, its byte order and emulated: true. Skips, saying why, until
// scripts/cross_test.sh aarch64 has built the engine (or DETVERIFY_CROSS_BIN_AARCH64 names one).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "db/run_store.h"

namespace dv {
namespace {

namespace fs = std::filesystem;

std::string Src() {
  return std::getenv("DETVERIFY_SOURCE_DIR") ? std::getenv("DETVERIFY_SOURCE_DIR") : ".";
}

// The platform's engine: $DETVERIFY_CROSS_BIN_<ARCH>, else scripts/cross_test.sh's build; "" when
// there is none.
std::string CrossEngine(const std::string& variable, const std::string& arch) {
  const char* set = std::getenv(variable.c_str());
  const std::string path = set != nullptr && *set != '\0'
                               ? set
                               : Src() + "/build-cross-" + arch + "/cli/detverify-engine";
  return ::access(path.c_str(), X_OK) == 0 ? path : "";
}

bool OnPath(const std::string& program) {
  return std::system(("command -v " + program + " > /dev/null 2>&1").c_str()) == 0;
}

struct Result {
  int code = -1;
  std::string out, err;
};

Result RunDetverify(const std::string& env, const std::string& args) {
  const std::string base =
      (fs::temp_directory_path() / ("dv_cross_e2e_" + std::to_string(::getpid()))).string();
  const int raw = std::system((env + " " + DETVERIFY_BIN + " " + args + " > " + base + ".out 2> " +
                               base + ".err < /dev/null")
                                  .c_str());
  Result r;
  r.code = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::stringstream out, err;
  out << std::ifstream(base + ".out").rdbuf();
  err << std::ifstream(base + ".err").rdbuf();
  r.out = out.str();
  r.err = err.str();
  fs::remove(base + ".out");
  fs::remove(base + ".err");
  return r;
}

TEST(CrossE2E, EmulatedRowsAgreeWithNativeRows) {
  const std::string aarch64 = CrossEngine("DETVERIFY_CROSS_BIN_AARCH64", "aarch64");
  if (!OnPath("qemu-aarch64")) {
    GTEST_SKIP() << "qemu-aarch64 is not installed (scripts/install_deps.sh --with-cross)";
  }
  if (aarch64.empty()) {
    GTEST_SKIP() << "no aarch64 detverify-engine (scripts/cross_test.sh aarch64 builds one, or set "
                    "DETVERIFY_CROSS_BIN_AARCH64)";
  }
  const std::string s390x =
      OnPath("qemu-s390x") ? CrossEngine("DETVERIFY_CROSS_BIN_S390X", "s390x") : "";
  const fs::path dir = fs::temp_directory_path() / ("dv_cross_e2e_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string db = (dir / "r.db").string();
  // Its own cache, shared by the native and emulated children as in any run.
  const std::string env = "DETVERIFY_CACHE='" + (dir / "cache").string() +
                          "' DETVERIFY_CROSS_BIN_AARCH64='" + aarch64 +
                          "' DETVERIFY_CROSS_BIN_S390X='" + s390x + "'";
  const Result r =
      RunDetverify(env, "run '" + Src() + "/scenarios/cross.yaml' --db '" + db + "' --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto table = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> rows;
  for (const auto& row : table["rows"]) rows[row["configuration"].get<std::string>()] = row;
  for (const char* name :
       {"int8-ref-b1", "int8-cpu-b8", "aarch64-ref-b1", "aarch64-cpu-b8", "aarch64-cpu-split"}) {
    EXPECT_EQ(rows[name]["status"], "ok") << name << ": " << rows[name]["status_detail"];
  }
  for (const char* name : {"aarch64-ref-b1", "aarch64-cpu-b8", "aarch64-cpu-split"}) {
    EXPECT_NE(rows[name]["device"].get<std::string>().find("(aarch64 emulated)"), std::string::npos)
        << rows[name];
  }
  for (const char* name : {"s390x-ref-b1", "s390x-cpu-b8"}) {
    if (s390x.empty()) {
      EXPECT_EQ(rows[name]["status"], "skipped") << name;
    } else {
      EXPECT_EQ(rows[name]["status"], "ok") << name << ": " << rows[name]["status_detail"];
      EXPECT_NE(rows[name]["device"].get<std::string>().find("(s390x emulated)"), std::string::npos)
          << rows[name];
    }
  }
  EXPECT_EQ(table["verdict"]["int8_runs"], s390x.empty() ? 5 : 7);
  EXPECT_EQ(table["verdict"]["int8_unique_logits_hashes"], 1);
  EXPECT_EQ(table["verdict"]["int8_unique_token_hashes"], 1);

  // The emulated runs' machines are the children's own fingerprints.
  db::RunStore store = db::RunStore::OpenReadOnly(db);
  for (const auto& run : store.Runs(store.Scenarios()[0].id)) {
    if (run.status != RunStatus::kOk) continue;
    const auto fp = nlohmann::json::parse(run.machine.fingerprint_json);
    const std::string arch = run.configuration.substr(0, run.configuration.find('-'));
    if (arch == "aarch64" || arch == "s390x") {
      EXPECT_EQ(fp["arch"], arch) << run.configuration;
      EXPECT_EQ(fp["byte_order"], arch == "s390x" ? "big" : "little") << run.configuration;
      EXPECT_EQ(fp["emulated"], true) << run.configuration;
    } else {
      EXPECT_EQ(fp["emulated"], false) << run.configuration;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dv
