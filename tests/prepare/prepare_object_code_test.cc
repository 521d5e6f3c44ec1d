// The reproducibility of prepare rests on its float code being only IEEE operations: no fused
// multiply-add (which rounds once where the source rounds twice, and which compilers contract
// differently per target) and no math-library call (whose results differ between libms). This
// test reads the compiled dv_prepare archive -- every instruction set's GEMM kernel included --
// with objdump and nm, and must find neither; and it must find both in a canary built to have
// them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/float_guard/float_inspection.h"

namespace dv::float_guard {
namespace {

// strtod is the C library's text-to-double conversion (nlohmann::json's number parser): correctly
// rounded in glibc and musl, and not a function of the float code.
bool Allowed(const ObjectFinding& f) { return f.item.find("strtod") != std::string::npos; }

std::vector<ObjectFinding> FmaFindings(const std::string& archive) {
  const CommandResult r = RunCommand("LC_ALL=C " + ShellQuote(DV_OBJDUMP) +
                                     " -d -r -C --no-show-raw-insn -w " + ShellQuote(archive));
  EXPECT_EQ(r.exit_code, 0) << r.output.substr(0, 2000);
  const DisassemblyScan scan = ScanDisassembly(r.output);
  EXPECT_GT(scan.instructions, 0) << archive;
  std::vector<ObjectFinding> out;
  for (const ObjectFinding& f : scan.findings) {
    if ((f.rule == "float fused multiply-add" || f.rule == "math library") && !Allowed(f)) {
      out.push_back(f);
    }
  }
  return out;
}

std::vector<ObjectFinding> MathLibrarySymbols(const std::string& archive) {
  const CommandResult r =
      RunCommand("LC_ALL=C " + ShellQuote(DV_NM) + " -A -u -C " + ShellQuote(archive));
  EXPECT_EQ(r.exit_code, 0) << r.output.substr(0, 2000);
  std::vector<ObjectFinding> out;
  for (const ObjectFinding& f : ScanUndefinedSymbols(r.output)) {
    if (f.rule == "math library" && !Allowed(f)) out.push_back(f);
  }
  return out;
}

std::string Report(const std::vector<ObjectFinding>& findings) {
  std::string s;
  for (size_t i = 0; i < findings.size() && i < 30; ++i) s += "\n  " + Describe(findings[i]);
  return s;
}

TEST(PrepareObjectCode, NoFusedMultiplyAddAndNoMathLibrary) {
  const auto fma = FmaFindings(DV_PREPARE_ARCHIVE);
  EXPECT_TRUE(fma.empty()) << fma.size() << " findings in dv_prepare:" << Report(fma);
  const auto libm = MathLibrarySymbols(DV_PREPARE_ARCHIVE);
  EXPECT_TRUE(libm.empty()) << libm.size() << " math-library references:" << Report(libm);
}

TEST(PrepareObjectCode, FindsThePlantedFmaAndExp) {
  const auto fma = FmaFindings(DV_CANARY_ARCHIVE);
  bool fused = false;
  for (const ObjectFinding& f : fma) fused = fused || f.rule == "float fused multiply-add";
  EXPECT_TRUE(fused) << Report(fma);
  EXPECT_FALSE(MathLibrarySymbols(DV_CANARY_ARCHIVE).empty());
}

}  // namespace
}  // namespace dv::float_guard
