// Layers (docs/architecture.md): no module includes a header of a module above it, no component
// of engine/ reaches past its own, and every source folder is in the layer table. The checker is
// first shown to catch planted violations, so a pass is not vacuous.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/layering/layer_rules.h"

namespace dv::layering {
namespace {

namespace fs = std::filesystem;

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool IsSource(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".h" || ext == ".cc" || ext == ".cu" || ext == ".cuh" || ext == ".in";
}

// Repository-relative paths of every C++ source outside tests/ and build trees.
std::vector<std::string> SourceFiles(const fs::path& root) {
  std::vector<std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    const std::string rel = fs::relative(it->path(), root).generic_string();
    if (it->is_directory()) {
      const std::string name = it->path().filename().string();
      if (name.starts_with(".") || name.starts_with("build") || rel == "tests") {
        it.disable_recursion_pending();
      }
      continue;
    }
    if (it->is_regular_file() && IsSource(it->path()) && rel.find('/') != std::string::npos) {
      out.push_back(rel);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string Describe(const Violation& v) {
  return v.file + ":" + std::to_string(v.line) + ": " + v.from + " includes \"" + v.include +
         "\" of " + v.to;
}

// Headers of third-party libraries that the float-free core may not include: it is integer
// arithmetic and the standard library, nothing that parses text or touches doubles.
const char* const kForeignToCore[] = {"nlohmann/", "openssl/", "yaml-cpp/", "CLI/", "boost/",
                                      "sqlite3",   "unicode/", "cblas",     "cuda", "lzma"};

TEST(LayeringRules, TableIsOrderedAndAcyclic) {
  std::set<std::string> below;
  for (const Component& c : LayerTable()) {
    for (const std::string& used : c.uses) {
      if (used == "*") continue;
      EXPECT_EQ(below.count(used), 1u)
          << c.name << " uses " << used << ", which is not listed below it in the table";
    }
    EXPECT_FALSE(c.job.empty()) << c.name;
    below.insert(c.name);
  }
}

TEST(LayeringRules, ComponentsOfPaths) {
  EXPECT_EQ(ComponentOf("engine/model.cc"), "engine.core");
  EXPECT_EQ(ComponentOf("engine/ops/rope.h"), "engine.core");
  EXPECT_EQ(ComponentOf("engine/backends/backend.h"), "engine.core");
  EXPECT_EQ(ComponentOf("engine/backends/reference_backend.cc"), "engine.core");
  EXPECT_EQ(ComponentOf("engine/backends/matmul_i8_neon.cc"), "engine.cpu");
  EXPECT_EQ(ComponentOf("engine/backends/cpu_backend.h"), "engine.cpu");
  EXPECT_EQ(ComponentOf("engine/backends/backend_registry.h"), "engine.backends");
  EXPECT_EQ(ComponentOf("engine/backends/cuda_backend.cc"), "engine.cuda");
  EXPECT_EQ(ComponentOf("engine/backends/cuda_gemm_dp4a.cu"), "engine.cuda");
  EXPECT_EQ(ComponentOf("cuda_device/cuda_device.h"), "cuda_device");
  EXPECT_EQ(ComponentOf("engine/artifact.h"), "engine.io");
  EXPECT_EQ(ComponentOf("harness/runner.cc"), "harness");
  EXPECT_EQ(ComponentOf("build_info.h"), "build_info");
  EXPECT_EQ(ComponentOf("newthing/x.h"), "unknown:newthing");
  EXPECT_EQ(ComponentOf("tests/support/scratch_files.h"), std::nullopt);
  EXPECT_EQ(ComponentOf("vector"), std::nullopt);
}

// The checker on planted files: each upward include is found, with its line.
TEST(LayeringRules, FindsPlantedUpwardIncludes) {
  const std::string core =
      "#include \"engine/intmath.h\"\n"
      "#include <vector>\n"
      "// #include \"harness/runner.h\" is only a comment\n"
      "  #  include \"engine/backends/cpu_backend.h\"\n"
      "#include \"db/records.h\"\n";
  const std::vector<Violation> v = CheckFile("engine/model.cc", core);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(Describe(v[0]),
            "engine/model.cc:4: engine.core includes \"engine/backends/cpu_backend.h\" of "
            "engine.cpu");
  EXPECT_EQ(Describe(v[1]), "engine/model.cc:5: engine.core includes \"db/records.h\" of db");
  EXPECT_EQ(CheckFile("reports/gate.cc", "#include \"harness/scenario.h\"\n").size(), 1u);
  EXPECT_EQ(CheckFile("db/merge.cc", "#include \"verdict/run_table.h\"\n").size(), 1u);
  EXPECT_TRUE(CheckFile("reports/gate.cc", "#include \"verdict/verdict.h\"\n").empty());
  EXPECT_TRUE(CheckFile("cli/run_command.cc", "#include \"harness/runner.h\"\n").empty());
  EXPECT_EQ(CheckFile("newthing/x.cc", "#include \"base/check.h\"\n").size(), 1u)
      << "a module outside the table may use nothing";
}

// The float side stays outside the integer core: it may not include the core or the cpu
// backend, and of engine.io only the headers its row in the table names.
TEST(LayeringRules, TheFloatSideUsesNarrowEdges) {
  EXPECT_TRUE(
      CheckFile("float_engine/float_generate.h",
                "#include \"engine/generate.h\"\n#include \"base/hash_chain.h\"\n"
                "#include \"checkpoint/float_checkpoint.h\"\n#include \"os/huge_pages.h\"\n")
          .empty());
  const std::vector<Violation> v =
      CheckFile("float_engine/float_model.cc",
                "#include \"engine/artifact.h\"\n#include \"engine/model.h\"\n"
                "#include \"engine/backends/cpu_weight_arena.h\"\n#include \"harness/runner.h\"\n");
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(Describe(v[0]),
            "float_engine/float_model.cc:1: float_engine includes \"engine/artifact.h\" of "
            "engine.io (only engine/generate.h)");
  EXPECT_EQ(v[1].to, "engine.core");
  EXPECT_EQ(v[2].to, "engine.cpu");
  EXPECT_EQ(v[3].to, "harness");
  EXPECT_TRUE(CheckFile("checkpoint/hf_synth.cc", "#include \"engine/prng.h\"\n").empty());
  EXPECT_EQ(CheckFile("checkpoint/hf_synth.cc", "#include \"engine/generate.h\"\n").size(), 1u);
  EXPECT_EQ(CheckFile("checkpoint/x.cc", "#include \"float_engine/float_model.h\"\n").size(), 1u)
      << "checkpoint is below the float engine";
  EXPECT_EQ(CheckFile("engine/model.cc", "#include \"checkpoint/half_float.h\"\n").size(), 1u)
      << "the integer core uses nothing of the float side";
}

TEST(Layering, EverySourceFolderIsInTheTable) {
  std::set<std::string> unknown;
  for (const std::string& file : SourceFiles(DV_SOURCE_ROOT)) {
    const std::optional<std::string> c = ComponentOf(file);
    if (c && c->starts_with("unknown:")) unknown.insert(c->substr(8));
  }
  EXPECT_TRUE(unknown.empty()) << "folders with sources but no row in the layer table "
                                  "(tests/layering/layer_rules.cc, docs/architecture.md): "
                               << [&] {
                                    std::string s;
                                    for (const auto& u : unknown) s += u + " ";
                                    return s;
                                  }();
}

TEST(Layering, NoModuleIncludesAHeaderOfAModuleAboveIt) {
  const fs::path root = DV_SOURCE_ROOT;
  std::vector<std::string> found;
  size_t files = 0, includes = 0;
  for (const std::string& file : SourceFiles(root)) {
    const std::string text = ReadText(root / file);
    ++files;
    includes += QuotedIncludesWithLines(text).size();
    for (const Violation& v : CheckFile(file, text)) found.push_back(Describe(v));
  }
  // The walk saw the real tree (not, say, an empty folder the test passes on vacuously).
  EXPECT_GE(files, 150u);
  EXPECT_GE(includes, 300u);
  std::string all;
  for (const std::string& f : found) all += "  " + f + "\n";
  EXPECT_TRUE(found.empty()) << found.size() << " includes against the layer table:\n" << all;
}

TEST(Layering, TheCoreIncludesNoThirdPartyHeaders) {
  const fs::path root = DV_SOURCE_ROOT;
  std::vector<std::string> found;
  for (const std::string& file : SourceFiles(root)) {
    const std::optional<std::string> c = ComponentOf(file);
    if (c != "engine.core" && c != "engine.cpu") continue;
    std::istringstream lines(ReadText(root / file));
    std::string line;
    for (int n = 1; std::getline(lines, line); ++n) {
      const size_t open = line.find("#include <");
      if (open == std::string::npos) continue;
      for (const char* foreign : kForeignToCore) {
        if (line.find(foreign, open) != std::string::npos) {
          found.push_back(file + ":" + std::to_string(n) + ": " + line);
        }
      }
    }
  }
  std::string all;
  for (const std::string& f : found) all += "  " + f + "\n";
  EXPECT_TRUE(found.empty()) << "third-party headers in the integer core:\n" << all;
}

// OS-specific code lives in os/ only (docs/architecture.md, "os"): the checker on planted lines
// first, so that a pass on the tree is not vacuous.
TEST(LayeringRules, FindsPlantedOsSpecificCode) {
  const std::string planted =
      "#include <sys/resource.h>\n"
      "// reads /proc/self/status in a comment: not code\n"
      "#if defined(__linux__)\n"
      "  std::FILE* f = std::fopen(\"/proc/self/status\", \"r\");\n"
      "/* sysctl in a block comment\n"
      "   still a comment: getauxval */ int x = 0;\n"
      "  ::madvise(p, n, MADV_HUGEPAGE);  // advice\n"
      "  sched_setaffinity(0, sizeof(set), &set);\n";
  const auto found = OsSpecificLines(planted);
  ASSERT_EQ(found.size(), 5u);
  EXPECT_EQ(found[0], (std::pair<int, std::string>{1, "sys/resource.h"}));
  EXPECT_EQ(found[1], (std::pair<int, std::string>{3, "__linux__"}));
  EXPECT_EQ(found[2], (std::pair<int, std::string>{4, "\"/proc/"}));
  EXPECT_EQ(found[3].first, 7);
  EXPECT_EQ(found[4], (std::pair<int, std::string>{8, "affinity("}));
  EXPECT_TRUE(OsSpecificLines("int CpuCount();  // sched_getaffinity on Linux\n").empty());
}

TEST(Layering, OsSpecificCodeLivesInOs) {
  const fs::path root = DV_SOURCE_ROOT;
  std::vector<std::string> found;
  size_t os_files = 0, os_lines = 0;
  for (const std::string& file : SourceFiles(root)) {
    const auto lines = OsSpecificLines(ReadText(root / file));
    if (ComponentOf(file) == "os") {
      ++os_files;
      os_lines += lines.size();
      continue;
    }
    for (const auto& [line, marker] : lines) {
      found.push_back(file + ":" + std::to_string(line) + ": " + marker);
    }
  }
  // os/ itself is where the markers are: the scan sees them there.
  EXPECT_GE(os_files, 8u);
  EXPECT_GE(os_lines, 10u);
  std::string all;
  for (const std::string& f : found) all += "  " + f + "\n";
  EXPECT_TRUE(found.empty()) << "OS-specific code outside os/ (ask an os/ interface instead):\n"
                             << all;
}

// The diagram in docs/ names every component of the table.
TEST(Layering, TheDiagramNamesEveryComponent) {
  const std::string doc = ReadText(fs::path(DV_SOURCE_ROOT) / "docs/architecture.md");
  ASSERT_FALSE(doc.empty()) << "docs/architecture.md is missing";
  for (const Component& c : LayerTable()) {
    EXPECT_NE(doc.find(c.name), std::string::npos) << c.name << " is not in docs/architecture.md";
  }
}

}  // namespace
}  // namespace dv::layering
