// Float-leak inspection (DESIGN.md §3): finds floating-point code in compiled objects and in C++
// sources. Used by test_float_guard on the integer core (dv_core) and on a planted canary.
//
// Object code: objdump's disassembly (x86 / x86-64 in AT&T syntax, and AArch64) is scanned for
// floating-point arithmetic, conversion and comparison instructions, x87 instructions and calls
// into the math library; nm's undefined symbols for math-library and soft-float routine functions
// and for functions whose signature takes or returns a floating-point type.
//
// What is not flagged, on purpose: plain moves, shuffles, blends and bitwise logic that happen to
// use the float-domain encodings (movss/movsd, movaps/movups/movapd/movupd, movhps/movlps,
// movhlps/movlhps, shufps/unpcklps, blendps, andps/andnps/orps/xorps, movmskps, broadcasts,
// vinsertf128/vextractf128 ...). Compilers emit these for integer data (memcpy of structs,
// zeroing registers, moving int64 pairs); they copy or mask bits and never round, so no
// floating-point result can arise from them alone: every computation needs one of the flagged
// arithmetic, conversion or comparison instructions, or a library call. Integer SIMD (the
// p-prefixed forms: paddd, pmaddubsw, vpdpbusd, pxor, movdqa, vmovdqu ...) is never flagged.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dv::float_guard {

// One floating-point item in object code.
struct ObjectFinding {
  std::string object;    // archive member or object file, e.g. "model.cc.o"
  std::string function;  // enclosing function (demangled), empty for symbol-table findings
  std::string item;      // the instruction ("mulsd %xmm1,%xmm0"), or the symbol referenced
  std::string rule;      // which rule matched, e.g. "float arithmetic", "math library"
};

// One floating-point token in a source file.
struct SourceFinding {
  std::string file;
  int line = 0;
  std::string token;
  std::string rule;
};

// The result of scanning `objdump -d -r -C --no-show-raw-insn -w` output.
struct DisassemblyScan {
  std::vector<ObjectFinding> findings;
  std::vector<std::string> file_formats;  // one per object, e.g. "elf64-x86-64"
  int64_t functions = 0;
  int64_t instructions = 0;
};

// The floating-point rule an x86 mnemonic (as objdump prints it, AT&T syntax) falls under, or
// nullopt for integer, move, shuffle and logic instructions.
std::optional<std::string> X86FloatRule(std::string_view mnemonic);

// True for file formats whose instructions X86FloatRule understands (elf64-x86-64, elf32-i386,
// elf32-x86-64, pe-x86-64 ...).
bool IsX86FileFormat(std::string_view format);

// The floating-point rule an AArch64 mnemonic (objdump's, A64: scalar FP, Advanced SIMD and SVE
// share the names) falls under, or nullopt. Every mnemonic that starts with 'f' or "bf" is
// floating point (fadd, fmul, fmla, fcvtzs, frintx, fcmp, fcsel, fsqrt, bfdot ...), as are the
// integer-to-float conversions scvtf and ucvtf; fmov is not flagged: compilers use it to move
// integer lanes between general and vector registers (fmov x0, d0), a bit copy, like movsd.
std::optional<std::string> Aarch64FloatRule(std::string_view mnemonic);

// True for elf64-littleaarch64 / elf64-bigaarch64 (the formats Aarch64FloatRule reads).
bool IsAarch64FileFormat(std::string_view format);

// True when one of the two rule sets applies to `format`.
bool HasInstructionRules(std::string_view format);

// The rule a referenced symbol falls under ("math library", "soft-float routine",
// "floating-point signature"), or nullopt. `name` may be demangled.
std::optional<std::string> FloatSymbolRule(std::string_view name);

DisassemblyScan ScanDisassembly(std::string_view objdump_output);

// Scans `nm -A -u -C` output (one "file:member: U symbol" line per reference).
std::vector<ObjectFinding> ScanUndefinedSymbols(std::string_view nm_output);

// Scans C++ source text, comments and string / character literals stripped: floating-point types
// (float, double, long double, _Float32 ...), floating literals (0.5, 1e3, 0x1p-3), math-library
// calls (sqrt(, std::exp(, __builtin_floor( ...), floating-point macros (INFINITY, DBL_MAX ...)
// and includes of floating-point headers (<cmath>, <math.h>, <cfloat> ...).
std::vector<SourceFinding> ScanSource(std::string_view file, std::string_view text);

// The quoted includes of a source ("engine/intmath.h"), comments stripped.
std::vector<std::string> QuotedIncludes(std::string_view text);

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};
// Runs a shell command (popen) and collects its output.
CommandResult RunCommand(const std::string& command);
// Single-quotes a string for /bin/sh.
std::string ShellQuote(std::string_view s);

// ---- Device code (the cuda backend's kernels), as `cuobjdump -sass` and `cuobjdump -ptx` print
// it. SASS: the rule a base opcode (before its first '.', predicate removed: "FFMA", "I2F",
// "HMMA", "MUFU") falls under -- FP32/FP16/FP64 arithmetic, compares and selects, conversions
// to and from integers, the special-function unit and the float tensor-core MMAs -- or nullopt
// for the integer, memory, control and integer-MMA opcodes (IMAD, IADD3, IDP, LOP3, SHF, IMMA,
// LDG, BRA ...).
std::optional<std::string> SassFloatRule(std::string_view opcode);

// The floating-point items of a `cuobjdump -sass` listing ("Function : name" headers, one
// "/*0040*/  @P0 FFMA R1, R2, R3, R4 ;" line per instruction). Not flagged: HFMA2 with both
// multiplicands RZ ("HFMA2.MMA R3, -RZ, RZ, 0, 0"), which nvcc emits to load a constant -- a bit
// copy, like the x86 moves above.
DisassemblyScan ScanSass(std::string_view cuobjdump_output);

// The floating-point instructions of a `cuobjdump -ptx` listing: every instruction whose type
// suffixes name a floating-point type (.f16, .f16x2, .bf16, .bf16x2, .tf32, .f32, .f64, .e4m3,
// .e5m2), e.g. "fma.rn.f32", "cvt.rn.f32.s32"; directives and integer instructions are not.
DisassemblyScan ScanPtx(std::string_view cuobjdump_output);

std::string Describe(const ObjectFinding& f);
std::string Describe(const SourceFinding& f);

}  // namespace dv::float_guard
