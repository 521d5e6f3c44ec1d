// Float-leak guard (DESIGN.md §3): the integer core (target dv_core) must contain no
// floating-point code, in its object code (objdump, nm) or in its sources. The canary library
// (canary.cc) plants one item of each kind and the same inspections must find every one.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/float_guard/float_inspection.h"

namespace dv::float_guard {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = s.find(sep, start);
    const std::string_view part =
        s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (!part.empty()) parts.emplace_back(part);
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

template <typename Finding>
std::string Report(const std::vector<Finding>& findings) {
  std::string s;
  size_t shown = 0;
  for (const auto& f : findings) {
    if (shown++ == 50) {
      s += "  ... and " + std::to_string(findings.size() - 50) + " more\n";
      break;
    }
    s += "  " + Describe(f) + "\n";
  }
  return s;
}

CommandResult Objdump(const std::string& archive) {
  return RunCommand("LC_ALL=C " + ShellQuote(DV_OBJDUMP) + " -d -r -C --no-show-raw-insn -w " +
                    ShellQuote(archive));
}

CommandResult NmUndefined(const std::string& archive) {
  return RunCommand("LC_ALL=C " + ShellQuote(DV_NM) + " -A -u -C " + ShellQuote(archive));
}

bool HasFinding(const std::vector<ObjectFinding>& findings, std::string_view function,
                std::string_view rule, std::string_view item_part) {
  return std::any_of(findings.begin(), findings.end(), [&](const ObjectFinding& f) {
    return f.function == function && f.rule == rule && f.item.find(item_part) != std::string::npos;
  });
}

// ---------------------------------------------------------------------------------------------
// The classifiers themselves.

TEST(FloatGuardClassifier, FlagsFloatingPointMnemonics) {
  const char* const flagged[] = {
      // SSE / AVX scalar and packed arithmetic
      "addss", "addsd", "addps", "addpd", "vaddss", "vaddpd", "subsd", "vsubps", "mulss", "mulsd",
      "vmulpd", "divss", "divsd", "vdivps", "sqrtsd", "sqrtss", "vsqrtps", "minsd", "maxss",
      "vminpd", "vmaxps", "rcpss", "rsqrtps", "vrsqrt14ss", "roundsd", "vroundps", "vrndscalesd",
      "haddps", "hsubpd", "addsubps", "dpps", "vdpbf16ps", "vscalefsd", "vgetexpps", "vaddsh",
      "vmulph",
      // conversions
      "cvtsi2sd", "cvtsi2sdl", "cvtsi2ssq", "cvttsd2si", "cvtsd2si", "cvtss2sd", "cvtsd2ss",
      "cvtdq2ps", "cvttps2dq", "vcvtsi2sd", "vcvtph2ps", "vcvtne2ps2bf16",
      // compares
      "comiss", "comisd", "ucomiss", "ucomisd", "vucomisd", "cmpltsd", "cmpeqps", "vcmpps",
      "vcmpnlt_uqsd",
      // fused multiply-add
      "vfmadd231sd", "vfmadd132ps", "vfnmadd213ss", "vfmsub231pd", "vfmaddsub213ps",
      // x87
      "fld", "fldt", "flds", "fstp", "fstpt", "fild", "fildll", "fistp", "fisttpll", "fadd",
      "faddp", "fmul", "fmulp", "fdiv", "fdivrp", "fsqrt", "fchs", "fabs", "fcomi", "fucomip",
      "fxch", "fldcw", "fnstcw", "frndint", "fsin",
      // MXCSR, 3DNow!, AMX float tiles
      "ldmxcsr", "vstmxcsr", "pfadd", "pi2fd", "tdpbf16ps", "tdpfp16ps", "tcmmimfp16ps",
      "tcmmrlfp16ps"};
  for (const char* m : flagged) EXPECT_TRUE(X86FloatRule(m).has_value()) << m;
}

TEST(FloatGuardClassifier, IgnoresIntegerMoveAndLogicMnemonics) {
  const char* const clean[] = {
      // integer SIMD
      "paddd", "vpaddd", "vpaddq", "pmaddubsw", "vpmaddubsw", "vpmaddwd", "vpdpbusd", "vpdpwssd",
      "pmuludq", "vpmulld", "psrlq", "psraw", "pcmpgtd", "vpcmpeqb", "pminsd", "vpmaxsd", "pminub",
      "pshufd", "pshufb", "punpckldq", "pxor", "vpxor", "vpternlogd", "pmovsxbw", "vpbroadcastd",
      "vpermd", "vpmadd52luq", "vpdpbusds",
      // AMX integer tiles and their state
      "ldtilecfg", "sttilecfg", "tileloadd", "tileloaddt1", "tilestored", "tilezero", "tilerelease",
      "tdpbsud", "tdpbssd", "tdpbusd", "tdpbuud",
      // moves, shuffles, blends and logic in the float domain (bit copies only)
      "movdqa", "movdqu", "vmovdqu", "vmovdqa64", "movaps", "movups", "vmovups", "movapd", "movupd",
      "movss", "movsd", "movhps", "movlps", "movhlps", "movlhps", "shufps", "unpcklps", "blendps",
      "vblendvps", "andps", "andnps", "orps", "xorps", "vxorps", "movmskps", "vbroadcastss",
      "vinsertf128", "vextractf128", "vpermilps", "vzeroupper", "movq", "movd",
      // general-purpose integer instructions, incl. look-alikes
      "add", "addq", "sub", "imul", "mul", "mulx", "div", "idiv", "idivq", "cmp", "cmpq", "cmpxchg",
      "cmpsb", "cmpsl", "cmovl", "cqto", "cltq", "cwtl", "movabs", "movslq", "sar", "shl", "lea",
      "push", "ret", "call", "jmp", "nopw", "endbr64", "bsr", "lzcnt", "adcx", "adox", "xsave",
      "fxsave", "fxrstor64", "rdtsc"};
  for (const char* m : clean) {
    const auto rule = X86FloatRule(m);
    EXPECT_FALSE(rule.has_value()) << m << " flagged as " << rule.value_or("");
  }
}

TEST(FloatGuardClassifier, FlagsAarch64FloatingPointMnemonics) {
  const char* const flagged[] = {
      "fadd",    "fsub",  "fmul",   "fdiv",   "fsqrt",   "fabs",    "fneg",    "fmax",  "fminnm",
      "faddp",   "fmaxv", "frintx", "frinta", "fcsel",   "frecpe",  "frsqrte", "fmulx", "fmla",
      "fmls",    "fmadd", "fmsub",  "fnmadd", "fnmsub",  "fcmp",    "fcmpe",   "fccmp", "fcmeq",
      "fcmgt",   "facge", "fcvtzs", "fcvtzu", "fcvtns",  "fcvtl",   "fcvtxn",  "scvtf", "ucvtf",
      "fjcvtzs", "bfcvt", "bfdot",  "bfmmla", "bfmlalb", "bfmlalt", "bfcvtn",  "bfadd", "bfmul"};
  for (const char* m : flagged) EXPECT_TRUE(Aarch64FloatRule(m).has_value()) << m;
  EXPECT_EQ(Aarch64FloatRule("scvtf"), "float conversion");
  EXPECT_EQ(Aarch64FloatRule("fmla"), "float fused multiply-add");
  EXPECT_EQ(Aarch64FloatRule("fcmgt"), "float compare");
  EXPECT_EQ(Aarch64FloatRule("fmul"), "float arithmetic");
}

TEST(FloatGuardClassifier, IgnoresAarch64IntegerAndMoveMnemonics) {
  // The NEON and NEON dot-product kernels' instructions, and the general-purpose ones.
  const char* const clean[] = {
      "add",  "addp", "addv",  "mul",   "mla",   "smull",   "smull2", "smlal", "sadalp", "saddlp",
      "sdot", "udot", "usdot", "smmla", "dup",   "movi",    "mov",    "ins",   "umov",   "smov",
      "ld1",  "ld1r", "st1",   "ldr",   "str",   "ldp",     "stp",    "ext",   "zip1",   "uzp2",
      "trn1", "tbl",  "sshr",  "ushr",  "sqxtn", "sqrshrn", "and",    "orr",   "eor",    "bic",
      "cmgt", "cmeq", "smax",  "smin",  "abs",   "neg",     "shl",    "sxtl",  "fmov",   "b",
      "bl",   "ret",  "cbz",   "csel",  "madd",  "msub",    "sdiv",   "udiv",  "umulh",  "smulh",
      "clz",  "lsl",  "asr",   "bfm",   "bfi",   "bfxil",   "bfc",    "ubfx",  "sbfiz"};
  for (const char* m : clean) {
    const auto rule = Aarch64FloatRule(m);
    EXPECT_FALSE(rule.has_value()) << m << " flagged as " << rule.value_or("");
  }
  EXPECT_TRUE(IsAarch64FileFormat("elf64-littleaarch64"));
  EXPECT_TRUE(HasInstructionRules("elf64-bigaarch64"));
  EXPECT_FALSE(HasInstructionRules("elf64-s390"));
}

// An AArch64 listing (objdump separates mnemonic and operands with a tab): the NEON kernels'
// integer instructions pass, fmov passes, scalar and vector float instructions are found.
TEST(FloatGuardClassifier, ParsesAarch64ObjdumpListing) {
  const std::string listing =
      "matmul_i8_neon.cc.o:     file format elf64-littleaarch64\n"
      "\n"
      "Disassembly of section .text:\n"
      "\n"
      "0000000000000000 <dv::Kernel(long)>:\n"
      "   0:\tsmull\tv2.8h, v0.8b, v1.8b\n"
      "   4:\tsadalp\tv3.4s, v2.8h\n"
      "   8:\tsdot\tv4.4s, v0.16b, v1.4b[0]\n"
      "   c:\tfmov\tx0, d3\n"
      "  10:\tret\n"
      "\n"
      "0000000000000020 <dv::Leak(double)>:\n"
      "  20:\tfmul\td0, d0, d1\n"
      "  24:\tscvtf\td1, x0\n"
      "  28:\tfmla\tv0.4s, v1.4s, v2.4s\n"
      "  2c:\tbl\t0 <sqrt>\t2c: R_AARCH64_CALL26\tsqrt\n";
  const DisassemblyScan scan = ScanDisassembly(listing);
  EXPECT_EQ(scan.functions, 2);
  EXPECT_EQ(scan.instructions, 9);
  ASSERT_EQ(scan.findings.size(), 4u) << Report(scan.findings);
  EXPECT_EQ(Describe(scan.findings[0]),
            "matmul_i8_neon.cc.o in dv::Leak(double): fmul  [float arithmetic]");
  EXPECT_EQ(scan.findings[1].rule, "float conversion");
  EXPECT_EQ(scan.findings[2].rule, "float fused multiply-add");
  EXPECT_EQ(Describe(scan.findings[3]),
            "matmul_i8_neon.cc.o in dv::Leak(double): reference to sqrt  [math library]");
}

// The same scan reads LLVM's objdump (what a clang build finds, and all a Mac has): spaces before
// the tab after the address, a tab between mnemonic and operands, relocations on lines of their
// own with two spaces after the offset.
TEST(FloatGuardClassifier, ParsesLlvmObjdumpListing) {
  const std::string listing =
      "libdv_float_guard_canary.a(canary.cc.o):\tfile format elf64-x86-64\n"
      "\n"
      "Disassembly of section .text:\n"
      "\n"
      "0000000000000000 <DvCanaryDoubleMultiply>:\n"
      "       0:      \tmulsd\t%xmm1, %xmm0\n"
      "       4:      \tretq\n"
      "\n"
      "0000000000000010 <dv::Ints(long)>:\n"
      "      10:      \tvpaddd\t%ymm1, %ymm0, %ymm0\n"
      "      14:      \tjmp\t0x24 <dv::Ints(long)+0x14>\n"
      "\t\t0000000000000015:  R_X86_64_PLT32\tmemcpy-0x4\n"
      "      19:      \tjmp\t0x24 <dv::Ints(long)+0x14>\n"
      "\t\t000000000000001a:  R_X86_64_PLT32\tsqrt-0x4\n";
  const DisassemblyScan scan = ScanDisassembly(listing);
  EXPECT_EQ(std::make_pair(scan.functions, scan.instructions),
            std::make_pair(int64_t{2}, int64_t{5}));
  std::vector<std::string> found;
  for (const ObjectFinding& f : scan.findings) found.push_back(Describe(f));
  EXPECT_EQ(found, (std::vector<std::string>{
                       "libdv_float_guard_canary.a(canary.cc.o) in DvCanaryDoubleMultiply: mulsd  "
                       "[float arithmetic]",
                       "libdv_float_guard_canary.a(canary.cc.o) in dv::Ints(long): reference to "
                       "sqrt  [math library]"}));
}

// A fixed listing in objdump's format: object, function and instruction are attributed, prefixes
// skipped, integer SIMD and moves ignored, a relocation to libm reported.
TEST(FloatGuardClassifier, ParsesObjdumpListing) {
  const std::string listing =
      "In archive libx.a:\n"
      "\n"
      "a.cc.o:     file format elf64-x86-64\n"
      "\n"
      "\n"
      "Disassembly of section .text:\n"
      "\n"
      "0000000000000000 <dv::Ints(long)>:\n"
      "   0:\tvpaddd %ymm1,%ymm0,%ymm0\n"
      "   4:\tmovups (%rsi),%xmm0\n"
      "   7:\tcs nopw 0x0(%rax,%rax,1)\n"
      "   f:\trep stos %rax,%es:(%rdi)\n"
      "  12:\tcall   17 <dv::Ints(long)+0x17>\n"
      "\t\t\t13: R_X86_64_PLT32\tmemcpy-0x4\n"
      "\n"
      "0000000000000020 <dv::Leak(double)>:\n"
      "  20:\tmulsd  %xmm1,%xmm0\n"
      "  24:\tdata16 cs cvttsd2si %xmm0,%rax\n"
      "  29:\tjmp    2e <dv::Leak(double)+0xe>\n"
      "\t\t\t2a: R_X86_64_PLT32\tsqrt-0x4\n"
      "  2e:\tf2 0f 59 c1          \tmulsd  %xmm1,%xmm0\n"
      "  32:\tcall   37 <dv::Leak(double)+0x17>\t33: R_X86_64_PLT32\tfloorf-0x4\n"
      "  37:\tcall   3c <dv::Leak(double)+0x1c>\t38: R_X86_64_PLT32\tfopen-0x4\n"
      "\n"
      "b.cc.o:     file format elf64-x86-64\n"
      "\n"
      "Disassembly of section .text:\n"
      "\n"
      "0000000000000000 <Old>:\n"
      "   0:\tfldt   0x8(%rsp)\n";
  const DisassemblyScan scan = ScanDisassembly(listing);
  EXPECT_EQ(scan.functions, 3);
  EXPECT_EQ(scan.instructions, 12);
  EXPECT_EQ(scan.file_formats, (std::vector<std::string>{"elf64-x86-64", "elf64-x86-64"}));
  ASSERT_EQ(scan.findings.size(), 6u) << Report(scan.findings);
  EXPECT_EQ(Describe(scan.findings[0]),
            "a.cc.o in dv::Leak(double): mulsd  %xmm1,%xmm0  [float arithmetic]");
  EXPECT_EQ(Describe(scan.findings[1]),
            "a.cc.o in dv::Leak(double): data16 cs cvttsd2si %xmm0,%rax  [float conversion]");
  EXPECT_EQ(Describe(scan.findings[2]),
            "a.cc.o in dv::Leak(double): reference to sqrt  [math library]");
  // Raw instruction bytes are skipped; -w relocations on the instruction's line are read.
  EXPECT_EQ(Describe(scan.findings[3]),
            "a.cc.o in dv::Leak(double): mulsd  %xmm1,%xmm0  [float arithmetic]");
  EXPECT_EQ(Describe(scan.findings[4]),
            "a.cc.o in dv::Leak(double): reference to floorf  [math library]");
  EXPECT_EQ(Describe(scan.findings[5]), "b.cc.o in Old: fldt   0x8(%rsp)  [x87]");
}

TEST(FloatGuardClassifier, ParsesNmListing) {
  const std::string listing =
      "lib.a:a.cc.o:                 U memcpy\n"
      "lib.a:a.cc.o:                 U std::__throw_length_error(char const*)\n"
      "lib.a:a.cc.o:                 U sqrtf\n"
      "lib.a:b.cc.o:                 U std::__cxx11::to_string(double)\n"
      "lib.a:b.cc.o:                 U __floatdidf\n"
      "lib.a:b.cc.o:                 U __exp_finite\n";
  const std::vector<ObjectFinding> f = ScanUndefinedSymbols(listing);
  ASSERT_EQ(f.size(), 4u) << Report(f);
  EXPECT_EQ(Describe(f[0]), "lib.a:a.cc.o: sqrtf  [math library]");
  EXPECT_EQ(Describe(f[1]),
            "lib.a:b.cc.o: std::__cxx11::to_string(double)  [floating-point signature]");
  EXPECT_EQ(Describe(f[2]), "lib.a:b.cc.o: __floatdidf  [soft-float routine]");
  EXPECT_EQ(Describe(f[3]), "lib.a:b.cc.o: __exp_finite  [math library]");
}

TEST(FloatGuardClassifier, SymbolRules) {
  for (const char* s :
       {"sqrt",         "sqrtf",
        "sqrtl",        "exp",
        "expf",         "log",
        "log2l",        "pow",
        "powf",         "floor",
        "ceil",         "round",
        "lround",       "llroundf",
        "sin",          "cosl",
        "fabs",         "fmaf",
        "ldexp",        "frexpl",
        "__log_finite", "__muldf3",
        "__fixdfdi",    "__extendsfdf2",
        "__truncdfsf2", "__powidf2",
        "__muldc3",     "std::chrono::duration<double, std::ratio<1l, 1l> >::count() const"}) {
    EXPECT_TRUE(FloatSymbolRule(s).has_value()) << s;
  }
  for (const char* s : {"memcpy", "memmove", "strlen", "__cxa_throw", "__gxx_personality_v0",
                        "__divti3", "__udivti3", "__mulodi4", "__popcountdi2", "__stack_chk_fail",
                        "_Unwind_Resume", "operator new(unsigned long)", "dv::FloorDiv(long, long)",
                        "std::__throw_bad_function_call()", "exps", "expand", "rounds"}) {
    EXPECT_FALSE(FloatSymbolRule(s).has_value()) << s;
  }
}

// ---------------------------------------------------------------------------------------------
// Source scan.

// A source with planted floating-point tokens and look-alikes that must not be flagged.
TEST(FloatGuardSource, FlagsPlantedTokensAndIgnoresLookalikes) {
  const std::string text = R"src(// a comment mentioning double, float and std::sqrt(2.0) is fine
/* a block comment: long double x = 1.5; */
#include <cmath>
#include "engine/intmath.h"
#include <cstdint>
int64_t Scale(int64_t x) {
  const char* s = "double 0.5";            // a string literal is fine
  const char* r = R"x(float y = 1e3;)x";   // so is a raw string
  const char c = '\'';
  const auto doubled = x * 2 + 1'000'000 + 0x1e5 + 0x1F;  // identifiers and integer literals
  double y = static_cast<double>(x);
  return static_cast<int64_t>(std::sqrt(y) + 0.5) + v.floor(3) + 2e3;
}
float AlsoFlagged();
auto m = DBL_MAX + __builtin_expf(1);
)src";
  const std::vector<SourceFinding> f = ScanSource("planted.cc", text);
  std::vector<std::string> got;
  for (const auto& x : f) got.push_back(std::to_string(x.line) + " " + x.token + " " + x.rule);
  const std::vector<std::string> want = {
      "3 <cmath> floating-point header",     "11 double floating-point type",
      "11 double floating-point type",       "12 sqrt math-library call",
      "12 0.5 floating-point literal",       "12 2e3 floating-point literal",
      "14 float floating-point type",        "15 DBL_MAX floating-point macro",
      "15 __builtin_expf math-library call",
  };
  EXPECT_EQ(got, want);
}

TEST(FloatGuardSource, QuotedIncludes) {
  const std::string text =
      "#include <vector>\n// #include \"commented.h\"\n#include \"engine/dyadic.h\"\n"
      "  #  include \"engine/ops/rope.h\"\n";
  EXPECT_EQ(QuotedIncludes(text),
            (std::vector<std::string>{"engine/dyadic.h", "engine/ops/rope.h"}));
}

// ---------------------------------------------------------------------------------------------
// The canary: every planted item is found.

TEST(FloatGuardCanary, ObjectScanFindsEveryPlantedItem) {
  const CommandResult r = Objdump(DV_CANARY_ARCHIVE);
  ASSERT_EQ(r.exit_code, 0) << "objdump failed:\n" << r.output;
  const DisassemblyScan scan = ScanDisassembly(r.output);
  ASSERT_FALSE(scan.file_formats.empty()) << r.output;
  const std::string& format = scan.file_formats.front();
  if (!HasInstructionRules(format)) {
    GTEST_SKIP() << "object format " << format
                 << ": the instruction rules cover x86 and AArch64 (the symbol and source scans "
                    "still run)";
  }
  const std::string all = Report(scan.findings);
  EXPECT_TRUE(HasFinding(scan.findings, "DvCanaryDoubleMultiply", "float arithmetic", "mul"))
      << all;
  EXPECT_TRUE(HasFinding(scan.findings, "DvCanaryIntToDouble", "float conversion", "cvt")) << all;
  EXPECT_TRUE(HasFinding(scan.findings, "DvCanarySqrtCall", "float arithmetic", "sqrt") ||
              HasFinding(scan.findings, "DvCanarySqrtCall", "math library", "sqrt"))
      << all;
  if (IsX86FileFormat(format)) {
    EXPECT_TRUE(HasFinding(scan.findings, "DvCanaryX87Multiply", "x87", "f")) << all;
  } else {
    // AArch64's long double is IEEE quad precision, multiplied by libgcc's __multf3.
    EXPECT_TRUE(HasFinding(scan.findings, "DvCanaryX87Multiply", "soft-float routine", "__multf3"))
        << all;
  }
  EXPECT_TRUE(HasFinding(scan.findings, "DvCanaryExpCall", "math library", "reference to exp"))
      << all;
}

TEST(FloatGuardCanary, SymbolScanFindsMathLibraryCalls) {
  const CommandResult r = NmUndefined(DV_CANARY_ARCHIVE);
  ASSERT_EQ(r.exit_code, 0) << "nm failed:\n" << r.output;
  const std::vector<ObjectFinding> f = ScanUndefinedSymbols(r.output);
  std::set<std::string> symbols;
  for (const auto& x : f) symbols.insert(x.item);
  EXPECT_EQ(symbols.count("exp"), 1u) << Report(f);
  EXPECT_EQ(symbols.count("sqrt"), 1u) << Report(f);  // the -fmath-errno fallback call
}

TEST(FloatGuardCanary, SourceScanFlagsCanarySource) {
  const std::vector<SourceFinding> f = ScanSource("canary.cc", ReadFile(DV_CANARY_SOURCE));
  std::set<std::string> tokens;
  for (const auto& x : f) tokens.insert(x.token);
  for (const char* t : {"<cmath>", "double", "sqrt", "exp"}) {
    EXPECT_EQ(tokens.count(t), 1u) << t << "\n" << Report(f);
  }
}

// ---------------------------------------------------------------------------------------------
// The integer core.

// The guarded archives: dv_core, and dv_backend_cpu where the build has it.
std::vector<std::string> GuardedArchives() { return Split(DV_GUARDED_ARCHIVES, '|'); }

TEST(FloatGuardCore, ObjectCodeHasNoFloatingPoint) {
  int64_t functions = 0;
  int64_t instructions = 0;
  for (const std::string& archive : GuardedArchives()) {
    const CommandResult r = Objdump(archive);
    ASSERT_EQ(r.exit_code, 0) << "objdump failed:\n" << r.output;
    const DisassemblyScan scan = ScanDisassembly(r.output);
    ASSERT_FALSE(scan.file_formats.empty()) << r.output.substr(0, 2000);
    for (const std::string& format : scan.file_formats) {
      if (!HasInstructionRules(format)) {
        GTEST_SKIP() << "object format " << format
                     << ": the instruction rules cover x86 and AArch64 (the symbol and source "
                        "scans still run)";
      }
    }
    EXPECT_GE(scan.functions, 1) << archive;
    functions += scan.functions;
    instructions += scan.instructions;
    EXPECT_TRUE(scan.findings.empty())
        << scan.findings.size() << " floating-point items in " << archive << ":\n"
        << Report(scan.findings);
  }
  // The archives hold real machine code (not, say, LTO bytecode the scan would pass vacuously).
  EXPECT_GE(functions, 10);
  EXPECT_GE(instructions, 1000);
}

TEST(FloatGuardCore, ReferencesNoFloatingPointSymbols) {
  for (const std::string& archive : GuardedArchives()) {
    const CommandResult r = NmUndefined(archive);
    ASSERT_EQ(r.exit_code, 0) << "nm failed:\n" << r.output;
    EXPECT_NE(r.output.find(" U "), std::string::npos) << "no undefined symbols listed:\n"
                                                       << r.output;
    const std::vector<ObjectFinding> f = ScanUndefinedSymbols(r.output);
    EXPECT_TRUE(f.empty()) << f.size() << " floating-point symbols referenced by " << archive
                           << ":\n"
                           << Report(f);
  }
}

// The core's sources: every source of the guarded targets (dv_base, dv_os, dv_core,
// dv_backend_cpu), the cpu backend's sources for every ISA whether this build compiles them or
// not (the NEON kernels on x86, the AVX ones on aarch64: DV_GUARD_SOURCES), and every file of the
// source tree they include, transitively.
std::vector<fs::path> CoreSourceFiles() {
  const fs::path root = DV_SOURCE_ROOT;
  std::vector<fs::path> seeds;
  for (const std::string& s : Split(DV_GUARDED_SOURCES, '|')) seeds.emplace_back(s);
  std::set<fs::path> seen;
  std::vector<fs::path> order;
  std::vector<fs::path> todo = seeds;
  while (!todo.empty()) {
    const fs::path p = fs::weakly_canonical(todo.back());
    todo.pop_back();
    if (!seen.insert(p).second) continue;
    order.push_back(p);
    if (!fs::exists(p)) continue;
    for (const std::string& inc : QuotedIncludes(ReadFile(p))) {
      for (const fs::path& base : {root, p.parent_path()}) {
        if (fs::exists(base / inc)) {
          todo.push_back(base / inc);
          break;
        }
      }
    }
  }
  std::sort(order.begin(), order.end());
  return order;
}

TEST(FloatGuardCore, SourcesHaveNoFloatingPointTokens) {
  const std::vector<fs::path> files = CoreSourceFiles();
  std::string listed;
  for (const auto& p : files) listed += "  " + p.string() + "\n";
  std::vector<SourceFinding> all;
  for (const auto& p : files) {
    ASSERT_TRUE(fs::exists(p)) << "core source missing: " << p;
    const auto f = ScanSource(p.string(), ReadFile(p));
    all.insert(all.end(), f.begin(), f.end());
  }
  const fs::path root = DV_SOURCE_ROOT;
  for (const char* must :
       {"engine/intmath.h", "engine/dyadic.h", "engine/ops/di_exp.h", "engine/ops/rope.h",
        "engine/backends/backend.h", "engine/model.cc", "engine/trace_recorder.cc",
        "engine/backends/reference_backend.cc", "engine/backends/matmul_i8_neon.cc",
        "engine/backends/matmul_i8_neondot.cc", "engine/backends/matmul_i8_avx512.cc",
        "engine/backends/attention_i8_avx2.cc", "engine/backends/row_kernels_avx512.cc",
        "engine/backends/cpu_backend.cc", "base/check.cc", "base/check.h"}) {
    EXPECT_NE(std::find(files.begin(), files.end(), fs::weakly_canonical(root / must)), files.end())
        << must << " not scanned; scanned:\n"
        << listed;
  }
  RecordProperty("files_scanned", static_cast<int>(files.size()));
  EXPECT_TRUE(all.empty()) << all.size() << " floating-point tokens in the core's sources:\n"
                           << Report(all) << "scanned:\n"
                           << listed;
}

// ---------------------------------------------------------------------------------------------
// Device code: the cuda backend's kernels as SASS (every real architecture it is built for) and
// PTX (the virtual one), and the device canary that proves the scans can fail.

TEST(FloatGuardClassifier, SassRules) {
  for (const char* op : {"FFMA", "FADD.FTZ", "FMUL", "FSETP.GT.AND", "FSEL", "I2F.S32", "F2I.TRUNC",
                         "F2F.F64.F32", "MUFU.EX2", "HFMA2.MMA", "HMMA.16816.F32", "DFMA", "DMUL",
                         "I2FP.F32.S32", "FMNMX", "HADD2"}) {
    EXPECT_TRUE(SassFloatRule(op).has_value()) << op;
  }
  for (const char* op : {"IMAD",         "IMAD.WIDE",    "IADD3",     "IDP.4A.S8.S8",
                         "LOP3.LUT",     "SHF.R.S32.HI", "SHFL.DOWN", "IMMA.16832.S8.S8",
                         "LDG.E",        "STG.E",        "BRA",       "EXIT",
                         "ISETP.GE.AND", "SEL",          "MOV",       "S2R",
                         "LDC",          "ULDC.64",      "IABS",      "IMNMX",
                         "FLO.U32",      "POPC",         "BAR.SYNC",  "NOP",
                         "LEA",          "PRMT"}) {
    EXPECT_FALSE(SassFloatRule(op).has_value()) << op;
  }
}

TEST(FloatGuardClassifier, ParsesCuobjdumpListings) {
  const std::string sass =
      "\tcode for sm_90\n"
      "\t\tFunction : _Z6kernelPf\n"
      "\t.headerflags\t@\"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)\"\n"
      "        /*0000*/                   LDC R1, c[0x0][0x28] ;   /* 0x00000a00ff017b82 */\n"
      "        /*0010*/              @!P0 FFMA R5, R2, R3, R4 ;    /* 0x0000000302057223 */\n"
      "        /*0020*/                   IDP.4A.S8.S8 R7, R8, R9, R7 ;\n"
      "        /*0028*/                   HFMA2.MMA R11, -RZ, RZ, 0, 0 ;  /* 0x00000000ff0b7435 "
      "*/\n"
      "        /*002c*/                   HFMA2 R12, R2, R3, -RZ ;\n"
      "        /*0030*/                   EXIT ;                   /* 0x000000000000794d */\n";
  const DisassemblyScan s = ScanSass(sass);
  EXPECT_EQ(s.functions, 1);
  EXPECT_EQ(s.instructions, 6);
  ASSERT_EQ(s.findings.size(), 2u) << Report(s.findings);
  EXPECT_EQ(s.findings[0].function, "_Z6kernelPf");
  EXPECT_EQ(s.findings[0].item.rfind("FFMA R5", 0), 0u) << s.findings[0].item;
  EXPECT_EQ(s.findings[1].item.rfind("HFMA2 R12", 0), 0u) << s.findings[1].item;
  const std::string ptx =
      ".visible .entry _Z6kernelPf(\n"
      "\t.param .u64 _Z6kernelPf_param_0\n"
      ")\n{\n"
      "\t.reg .f32 \t%f<4>;\n"
      "\tld.param.u64 \t%rd1, [_Z6kernelPf_param_0];\n"
      "\tdp4a.s32.s32 \t%r3, %r1, %r2, %r3;\n"
      "\tfma.rn.f32 \t%f3, %f1, %f2, %f1;\n"
      "\t@%p1 cvt.rn.f32.s32 \t%f1, %r1;\n"
      "\tret;\n}\n";
  const DisassemblyScan p = ScanPtx(ptx);
  EXPECT_EQ(p.functions, 1);
  ASSERT_EQ(p.findings.size(), 2u) << Report(p.findings);
  EXPECT_NE(p.findings[0].item.find("fma.rn.f32"), std::string::npos);
  EXPECT_NE(p.findings[1].item.find("cvt.rn.f32.s32"), std::string::npos);
}

bool HaveDeviceCode() { return std::string(DV_DEVICE_ARCHIVE).size() > 0; }

// The SASS of an archive's device code; skips (with the reason) without cuobjdump.
std::string SassOf(const std::string& archive) {
  const std::string tool = DV_CUOBJDUMP;
  if (tool.empty()) return {};
  const CommandResult r =
      RunCommand("LC_ALL=C " + ShellQuote(tool) + " -sass " + ShellQuote(archive));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.output;
}

// Every PTX file nvcc wrote for the guard (DV_DEVICE_PTX, DV_DEVICE_CANARY_PTX), concatenated.
std::string PtxOf(const char* joined) {
  std::string all;
  for (const std::string& path : Split(joined, '|')) {
    EXPECT_TRUE(fs::exists(path)) << path;
    all += ReadFile(path);
  }
  return all;
}

constexpr const char* kNoCuobjdump =
    "cuobjdump not found (DETVERIFY_CUOBJDUMP): the SASS cannot be scanned on this machine; the "
    "PTX scan ran (pip install nvidia-cuda-cuobjdump, or NVIDIA's toolkit, gives it)";

TEST(FloatGuardDeviceCanary, PtxScanFindsThePlantedItems) {
  if (!HaveDeviceCode()) GTEST_SKIP() << "this build has no device code (DETVERIFY_CUDA=OFF)";
  const DisassemblyScan p = ScanPtx(PtxOf(DV_DEVICE_CANARY_PTX));
  std::string items;
  for (const auto& f : p.findings) items += f.item + "\n";
  for (const char* want : {"fma.rn.f32", "cvt.rn.f32.s32", "ex2.approx", ".f64"}) {
    EXPECT_NE(items.find(want), std::string::npos) << want << "\n" << items;
  }
}

TEST(FloatGuardDeviceCanary, SassScanFindsThePlantedItems) {
  if (!HaveDeviceCode()) GTEST_SKIP() << "this build has no device code (DETVERIFY_CUDA=OFF)";
  if (std::string(DV_CUOBJDUMP).empty()) GTEST_SKIP() << kNoCuobjdump;
  const DisassemblyScan s = ScanSass(SassOf(DV_DEVICE_CANARY_ARCHIVE));
  std::set<std::string> rules;
  for (const auto& f : s.findings) rules.insert(f.rule);
  EXPECT_EQ(rules.count("float arithmetic"), 1u) << Report(s.findings);
  EXPECT_EQ(rules.count("float conversion"), 1u) << Report(s.findings);
  EXPECT_EQ(rules.count("special-function unit (rcp, rsq, ex2, lg2, sin, cos)"), 1u)
      << Report(s.findings);
}

TEST(FloatGuardDevice, PtxHasNoFloatingPoint) {
  if (!HaveDeviceCode()) GTEST_SKIP() << "this build has no device code (DETVERIFY_CUDA=OFF)";
  const DisassemblyScan p = ScanPtx(PtxOf(DV_DEVICE_PTX));
  EXPECT_GE(p.functions, 1);
  EXPECT_GE(p.instructions, 20);
  EXPECT_TRUE(p.findings.empty()) << p.findings.size() << " floating-point PTX instructions:\n"
                                  << Report(p.findings);
}

TEST(FloatGuardDevice, SassHasNoFloatingPoint) {
  if (!HaveDeviceCode()) GTEST_SKIP() << "this build has no device code (DETVERIFY_CUDA=OFF)";
  if (std::string(DV_CUOBJDUMP).empty()) GTEST_SKIP() << kNoCuobjdump;
  const std::string sass = SassOf(DV_DEVICE_ARCHIVE);
  const DisassemblyScan s = ScanSass(sass);
  EXPECT_GE(s.functions, 1) << sass.substr(0, 2000);
  EXPECT_GE(s.instructions, 20);
  EXPECT_FALSE(s.file_formats.empty()) << "no SASS architecture listed";
  EXPECT_TRUE(s.findings.empty()) << s.findings.size() << " floating-point SASS instructions:\n"
                                  << Report(s.findings);
}

}  // namespace
}  // namespace dv::float_guard
