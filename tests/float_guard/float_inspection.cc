#include "tests/float_guard/float_inspection.h"

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <regex>
#include <set>
#include <sstream>

namespace dv::float_guard {
namespace {

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string Lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

std::string Trim(std::string_view s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) {
      if (start < text.size()) lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

// Math-library functions (C99 / C23 / glibc) whose f / l / f128 / __*_finite variants are also
// math-library symbols.
const std::set<std::string>& MathBaseNames() {
  static const std::set<std::string> names = {
      "acos",    "asin",     "atan",        "atan2",     "cos",        "sin",       "tan",
      "sincos",  "acosh",    "asinh",       "atanh",     "cosh",       "sinh",      "tanh",
      "exp",     "exp2",     "exp10",       "expm1",     "log",        "log2",      "log10",
      "log1p",   "logb",     "ilogb",       "pow",       "pow10",      "sqrt",      "rsqrt",
      "cbrt",    "hypot",    "erf",         "erfc",      "lgamma",     "tgamma",    "gamma",
      "ceil",    "floor",    "trunc",       "round",     "roundeven",  "lround",    "llround",
      "rint",    "lrint",    "llrint",      "nearbyint", "fmod",       "remainder", "remquo",
      "drem",    "copysign", "nan",         "nextafter", "nexttoward", "fdim",      "fmax",
      "fmin",    "fma",      "fabs",        "frexp",     "ldexp",      "modf",      "scalb",
      "scalbn",  "scalbln",  "significand", "j0",        "j1",         "jn",        "y0",
      "y1",      "yn",       "isnan",       "isinf",     "finite",     "isfinite",  "fpclassify",
      "signbit", "strtod",   "strtof",      "strtold",   "atof"};
  return names;
}

// name, or name with a float-type suffix, is a math-library function.
bool IsMathName(std::string_view name) {
  const auto& base = MathBaseNames();
  if (base.count(std::string(name)) != 0) return true;
  for (std::string_view suffix : {"f128", "f64x", "f64", "f32x", "f32", "f", "l"}) {
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix &&
        base.count(std::string(name.substr(0, name.size() - suffix.size()))) != 0) {
      return true;
    }
  }
  return false;
}

bool IsMathSymbol(std::string_view name) {
  if (IsMathName(name)) return true;
  std::string_view s = name;
  if (StartsWith(s, "__")) {
    s.remove_prefix(2);
    if (s.size() > 7 && s.substr(s.size() - 7) == "_finite") s.remove_suffix(7);
    return IsMathName(s);
  }
  return false;
}

const std::regex& SoftFloatRegex() {
  // libgcc / compiler-rt soft-float routines: __muldf3, __floatdidf, __fixdfdi, __extendsfdf2,
  // __truncdfsf2, __eqdf2, __powidf2, __unordsf2 ...
  static const std::regex re(
      "__(add|sub|mul|div|neg|cmp|eq|ne|lt|le|gt|ge|unord|powi)(sf|df|tf|xf|hf|bf)[0-9]"
      "|__(float|floatun)(si|di|ti)(sf|df|tf|xf|hf|bf)"
      "|__(fix|fixuns)(sf|df|tf|xf|hf|bf)(si|di|ti)"
      "|__(extend|trunc)(sf|df|tf|xf|hf|bf)(sf|df|tf|xf|hf|bf)2"
      "|__(mul|div)(sc|dc|tc|xc)3");
  return re;
}

const std::regex& FloatWordRegex() {
  static const std::regex re(
      "\\b(float|double|_Float[0-9]+x?|__float128|__float80|__fp16|__bf16)\\b");
  return re;
}

const std::regex& X86ArithmeticRegex() {
  static const std::regex re(
      "(add|sub|mul|div|sqrt|min|max|rcp|rcp14|rcp28|rsqrt|rsqrt14|rsqrt28|round|rndscale|hadd|"
      "hsub|addsub|dp|dpbf16|exp2|getexp|getmant|scalef|reduce|range|fixupimm|fpclass)"
      "(ss|sd|ps|pd|sh|ph)");
  return re;
}
const std::regex& X86FmaRegex() {
  static const std::regex re("fn?m(add|sub|addsub|subadd)(132|213|231)?(ss|sd|ps|pd|sh|ph)");
  return re;
}
const std::regex& X86CompareRegex() {
  static const std::regex re("u?comis[sdh]|cmp[a-z_]*(ss|sd|ps|pd|sh|ph)");
  return re;
}
// AMX's float tile products (the integer ones, tdpb[su][su]d, are exact int32 sums).
const std::regex& X86AmxFloatRegex() {
  static const std::regex re("t(dpbf16|dpfp16|cmmimfp16|cmmrlfp16)ps");
  return re;
}
const std::regex& X86ThreeDNowRegex() {
  static const std::regex re("pf[a-z0-9]+|pi2f[dw]|pf2i[dw]");
  return re;
}

// Instruction prefixes objdump prints as separate words before the mnemonic.
bool IsPrefixWord(std::string_view w) {
  static const std::set<std::string, std::less<>> prefixes = {
      "cs",   "ds",  "es",   "fs",   "gs",    "ss",    "data16",  "data32", "addr16",   "addr32",
      "lock", "rep", "repz", "repe", "repnz", "repne", "notrack", "bnd",    "xacquire", "xrelease"};
  return prefixes.count(w) != 0 || StartsWith(w, "rex") || StartsWith(w, "{");
}

// The mnemonic of a disassembled instruction text "rep stos %rax,%es:(%rdi)" -> "stos".
std::string MnemonicOf(std::string_view insn) {
  std::istringstream words{std::string(insn)};
  std::string w;
  while (words >> w) {
    if (IsPrefixWord(w)) continue;
    const size_t comma = w.find(',');  // branch hints: "jne,pt"
    if (comma != std::string::npos) w.resize(comma);
    return Lower(w);
  }
  return {};
}

std::vector<std::string> SplitTabs(const std::string& s) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    const size_t tab = s.find('\t', start);
    fields.push_back(s.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) break;
    start = tab + 1;
  }
  return fields;
}

// Strips "+0x10" / "-0x4" addends from a relocation target.
std::string StripAddend(std::string s) {
  static const std::regex re("[+-]0x[0-9a-fA-F]+$");
  return std::regex_replace(s, re, "");
}

}  // namespace

std::optional<std::string> X86FloatRule(std::string_view mnemonic) {
  const std::string m = Lower(mnemonic);
  if (m.empty()) return std::nullopt;
  // x87: every mnemonic starting with 'f' (fld, fstp, fild, fistp, fadd, fmulp, fsqrt, fcomi,
  // fucomip, fldcw, fnstcw ...) except the state save / restore of fxsave / fxrstor.
  if (m[0] == 'f' && !StartsWith(m, "fxsave") && !StartsWith(m, "fxrstor")) return "x87";
  if (std::regex_match(m, X86ThreeDNowRegex())) return "3DNow! float";
  if (std::regex_match(m, X86AmxFloatRegex())) return "AMX float tile product";
  // SSE forms and their AVX (v-prefixed) encodings share the rules below.
  const std::string s = m[0] == 'v' ? m.substr(1) : m;
  if (StartsWith(s, "cvt")) return "float conversion";
  if (s == "ldmxcsr" || s == "stmxcsr") return "float control";
  if (std::regex_match(s, X86CompareRegex())) return "float compare";
  if (std::regex_match(s, X86FmaRegex())) return "float fused multiply-add";
  if (std::regex_match(s, X86ArithmeticRegex())) return "float arithmetic";
  return std::nullopt;
}

bool IsX86FileFormat(std::string_view format) {
  const std::string f = Lower(format);
  return f.find("x86-64") != std::string::npos || f.find("i386") != std::string::npos ||
         f.find("x86_64") != std::string::npos;
}

std::optional<std::string> Aarch64FloatRule(std::string_view mnemonic) {
  const std::string m = Lower(mnemonic);
  if (m.empty()) return std::nullopt;
  if (m == "scvtf" || m == "ucvtf" || StartsWith(m, "fcvt") || StartsWith(m, "bfcvt") ||
      StartsWith(m, "fjcvt")) {
    return "float conversion";
  }
  if (m == "fmov") return std::nullopt;  // a bit copy between register files
  if (StartsWith(m, "fcm") || StartsWith(m, "fccm") || StartsWith(m, "fac")) {
    return "float compare";
  }
  if (StartsWith(m, "fml") || StartsWith(m, "fmad") || StartsWith(m, "fmsb") ||
      StartsWith(m, "fmsub") || StartsWith(m, "fnm") || StartsWith(m, "bfml")) {
    return "float fused multiply-add";
  }
  // Every other "bf" mnemonic is bf16 arithmetic (bfdot, bfmmla, bfadd, ...) except the integer
  // bitfield move BFM and its aliases, which the OS layer's feature-bit decoding compiles to.
  if (m == "bfm" || m == "bfi" || m == "bfxil" || m == "bfc") return std::nullopt;
  if (m[0] == 'f' || StartsWith(m, "bf")) return "float arithmetic";
  return std::nullopt;
}

bool IsAarch64FileFormat(std::string_view format) {
  return Lower(format).find("aarch64") != std::string::npos;
}

bool HasInstructionRules(std::string_view format) {
  return IsX86FileFormat(format) || IsAarch64FileFormat(format);
}

std::optional<std::string> FloatSymbolRule(std::string_view name) {
  const std::string n = Trim(name);
  if (IsMathSymbol(n)) return "math library";
  if (std::regex_match(n, SoftFloatRegex())) return "soft-float routine";
  // A demangled C++ signature taking or returning a floating-point type, e.g.
  // std::__cxx11::to_string(double).
  if (n.find('(') != std::string::npos && std::regex_search(n, FloatWordRegex())) {
    return "floating-point signature";
  }
  return std::nullopt;
}

DisassemblyScan ScanDisassembly(std::string_view objdump_output) {
  static const std::regex object_re(R"(^(\S.*):\s+file format (\S+)\s*$)");
  static const std::regex function_re(R"(^[0-9a-fA-F]+ <(.*)>:\s*$)");
  // GNU objdump: "  20:\tmulsd  %xmm1,%xmm0"; LLVM's (clang builds, macOS): "      20:
  // \tmulsd\t..." with relocations on lines of their own, "\t\t0000000000000021:
  // R_X86_64_PLT32\tsqrt-0x4".
  static const std::regex insn_re(R"(^\s*[0-9a-fA-F]+: *\t(.*)$)");
  static const std::regex reloc_re(R"(^\s*[0-9a-fA-F]+:\s+(R_\S+)\s+(.+)$)");
  static const std::regex inline_reloc_re(R"(^\s*[0-9a-fA-F]+: R_\S+\s*$)");
  static const std::regex raw_bytes_re(R"(^[0-9a-fA-F]{2}( [0-9a-fA-F]{2})*\s*$)");
  DisassemblyScan scan;
  std::string object;
  std::string function;
  std::smatch m;
  // The rules of the current object's architecture; none for a format without rules.
  std::optional<std::string> (*rule_of)(std::string_view) = nullptr;
  for (std::string_view line_view : Lines(objdump_output)) {
    const std::string line(line_view);
    if (std::regex_match(line, m, object_re)) {
      object = m[1];
      function.clear();
      scan.file_formats.push_back(m[2]);
      rule_of = IsX86FileFormat(m[2].str())       ? &X86FloatRule
                : IsAarch64FileFormat(m[2].str()) ? &Aarch64FloatRule
                                                  : nullptr;
    } else if (std::regex_match(line, m, function_re)) {
      function = m[1];
      ++scan.functions;
    } else if (std::regex_match(line, m, reloc_re)) {
      const std::string target = StripAddend(Trim(m[2].str()));
      if (auto rule = FloatSymbolRule(target)) {
        scan.findings.push_back({object, function, "reference to " + target, *rule});
      }
    } else if (std::regex_match(line, m, insn_re)) {
      // Tab-separated: [raw bytes,] instruction [, "off: R_TYPE", target ...] (-w puts the
      // relocations of an instruction on its line).
      const std::vector<std::string> fields = SplitTabs(m[1].str());
      size_t idx = 0;
      if (fields.size() > 1 && std::regex_match(fields[0], raw_bytes_re)) idx = 1;
      const std::string insn = Trim(fields[idx]);
      const std::string mnemonic = MnemonicOf(insn);
      if (mnemonic.empty() || mnemonic == "(bad)") continue;
      ++scan.instructions;
      if (rule_of != nullptr) {
        if (auto rule = rule_of(mnemonic)) scan.findings.push_back({object, function, insn, *rule});
      }
      for (size_t j = idx + 1; j + 1 < fields.size(); ++j) {
        if (!std::regex_match(fields[j], inline_reloc_re)) continue;
        const std::string target = StripAddend(Trim(fields[j + 1]));
        if (auto rule = FloatSymbolRule(target)) {
          scan.findings.push_back({object, function, "reference to " + target, *rule});
        }
        ++j;
      }
    }
  }
  return scan;
}

std::vector<ObjectFinding> ScanUndefinedSymbols(std::string_view nm_output) {
  // "path/libdv_core.a:model.cc.o:                 U memcpy"
  static const std::regex line_re(R"(^(.+?):\s+U\s+(.+)$)");
  std::vector<ObjectFinding> findings;
  std::smatch m;
  for (std::string_view line_view : Lines(nm_output)) {
    const std::string line(line_view);
    if (!std::regex_match(line, m, line_re)) continue;
    const std::string symbol = Trim(m[2].str());
    if (auto rule = FloatSymbolRule(symbol)) {
      findings.push_back({m[1], "", symbol, *rule});
    }
  }
  return findings;
}

namespace {

// A lexer that keeps only what the compiler sees: identifiers, numbers and punctuation; comments
// and string / character literals are dropped. Include directives are reported separately.
struct Lexed {
  struct Token {
    std::string text;
    int line;
    bool identifier;
    bool number;
    char prev;  // last significant character before the token ('\0' at start)
    char next;  // first significant character after the token
  };
  std::vector<Token> tokens;
  struct Include {
    std::string header;
    bool angled;
    int line;
  };
  std::vector<Include> includes;
};

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

Lexed Lex(std::string_view t) {
  Lexed out;
  int line = 1;
  size_t i = 0;
  char prev = '\0';
  bool line_start = true;            // only whitespace so far on this line
  std::vector<size_t> pending_next;  // tokens waiting for their `next` character
  auto set_next = [&](char c) {
    for (size_t idx : pending_next) out.tokens[idx].next = c;
    pending_next.clear();
  };
  auto skip_quoted = [&](char quote) {  // i at the opening quote
    ++i;
    while (i < t.size() && t[i] != quote) {
      if (t[i] == '\\' && i + 1 < t.size()) ++i;
      if (t[i] == '\n') ++line;
      ++i;
    }
    ++i;
  };
  while (i < t.size()) {
    const char c = t[i];
    if (c == '\n') {
      ++line;
      line_start = true;
      ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < t.size() && t[i + 1] == '/') {
      while (i < t.size() && t[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < t.size() && t[i + 1] == '*') {
      const size_t end = t.find("*/", i + 2);
      const size_t stop = end == std::string_view::npos ? t.size() : end + 2;
      for (size_t j = i; j < stop; ++j) {
        if (t[j] == '\n') ++line;
      }
      i = stop;
      continue;
    }
    const bool at_line_start = line_start;
    line_start = false;
    if (c == '#' && at_line_start) {
      // Preprocessing directive: report includes, lex the rest of the line as code.
      size_t j = i + 1;
      while (j < t.size() && (t[j] == ' ' || t[j] == '\t')) ++j;
      if (t.substr(j, 7) == "include") {
        j += 7;
        while (j < t.size() && (t[j] == ' ' || t[j] == '\t')) ++j;
        if (j < t.size() && (t[j] == '<' || t[j] == '"')) {
          const char close = t[j] == '<' ? '>' : '"';
          const size_t end = t.find(close, j + 1);
          if (end != std::string_view::npos) {
            out.includes.push_back({std::string(t.substr(j + 1, end - j - 1)), close == '>', line});
            i = end + 1;
            continue;
          }
        }
      }
      set_next(c);
      prev = c;
      ++i;
      continue;
    }
    if (c == '"') {
      set_next(c);
      skip_quoted('"');
      prev = '"';
      continue;
    }
    if (c == '\'') {
      set_next(c);
      skip_quoted('\'');
      prev = '\'';
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && i + 1 < t.size() && std::isdigit(static_cast<unsigned char>(t[i + 1])))) {
      // pp-number: digits, letters, '.', digit separators, and signs after e / p exponents.
      size_t j = i + 1;
      while (j < t.size()) {
        const char d = t[j];
        if (IsIdentChar(d) || d == '.') {
          ++j;
        } else if (d == '\'' && j + 1 < t.size() && IsIdentChar(t[j + 1])) {
          j += 2;
        } else if ((d == '+' || d == '-') &&
                   (t[j - 1] == 'e' || t[j - 1] == 'E' || t[j - 1] == 'p' || t[j - 1] == 'P')) {
          ++j;
        } else {
          break;
        }
      }
      set_next(c);
      out.tokens.push_back({std::string(t.substr(i, j - i)), line, false, true, prev, '\0'});
      pending_next.push_back(out.tokens.size() - 1);
      prev = '0';
      i = j;
      continue;
    }
    if (IsIdentStart(c)) {
      size_t j = i + 1;
      while (j < t.size() && IsIdentChar(t[j])) ++j;
      const std::string_view word = t.substr(i, j - i);
      // String-literal prefixes: u8"", L"", R"delim(...)delim" ...
      if (j < t.size() && (t[j] == '"' || t[j] == '\'') &&
          (word == "u8" || word == "u" || word == "U" || word == "L" || word == "R" ||
           word == "u8R" || word == "uR" || word == "UR" || word == "LR")) {
        set_next(t[j]);
        if (t[j] == '"' && word.back() == 'R') {
          const size_t open = t.find('(', j);
          const std::string delim = ")" + std::string(t.substr(j + 1, open - j - 1)) + "\"";
          const size_t end = t.find(delim, open);
          const size_t stop = end == std::string_view::npos ? t.size() : end + delim.size();
          for (size_t k = i; k < stop; ++k) {
            if (t[k] == '\n') ++line;
          }
          i = stop;
        } else {
          i = j;
          skip_quoted(t[j]);
        }
        prev = '"';
        continue;
      }
      set_next(c);
      out.tokens.push_back({std::string(word), line, true, false, prev, '\0'});
      pending_next.push_back(out.tokens.size() - 1);
      prev = 'a';
      i = j;
      continue;
    }
    set_next(c);
    prev = c;
    ++i;
  }
  set_next('\0');
  return out;
}

bool IsFloatingLiteral(std::string_view num) {
  const std::string n = Lower(num);
  if (StartsWith(n, "0x"))
    return n.find('.') != std::string::npos || n.find('p') != std::string::npos;
  if (StartsWith(n, "0b")) return false;
  return n.find('.') != std::string::npos || n.find('e') != std::string::npos;
}

const std::set<std::string, std::less<>>& FloatTypeWords() {
  static const std::set<std::string, std::less<>> words = {
      "float",     "double",     "_Float16",   "_Float32",   "_Float64",  "_Float128",
      "_Float32x", "_Float64x",  "_Float128x", "__float128", "__float80", "__ibm128",
      "__fp16",    "__bf16",     "float_t",    "double_t",   "float16_t", "float32_t",
      "float64_t", "float128_t", "bfloat16_t"};
  return words;
}

const std::set<std::string, std::less<>>& FloatHeaders() {
  static const std::set<std::string, std::less<>> headers = {
      "cmath",   "math.h",    "cfloat",   "float.h", "stdfloat",
      "complex", "complex.h", "tgmath.h", "ctgmath", "numbers"};
  return headers;
}

bool IsFloatMacro(std::string_view w) {
  return w == "HUGE_VAL" || w == "HUGE_VALF" || w == "HUGE_VALL" || w == "INFINITY" || w == "NAN" ||
         StartsWith(w, "FLT_") || StartsWith(w, "DBL_") || StartsWith(w, "LDBL_");
}

}  // namespace

std::vector<SourceFinding> ScanSource(std::string_view file, std::string_view text) {
  const Lexed lexed = Lex(text);
  std::vector<SourceFinding> findings;
  const std::string f(file);
  for (const auto& inc : lexed.includes) {
    if (FloatHeaders().count(inc.header) != 0) {
      findings.push_back({f, inc.line,
                          (inc.angled ? "<" : "\"") + inc.header + (inc.angled ? ">" : "\""),
                          "floating-point header"});
    }
  }
  for (const auto& tok : lexed.tokens) {
    if (tok.number) {
      if (IsFloatingLiteral(tok.text)) {
        findings.push_back({f, tok.line, tok.text, "floating-point literal"});
      }
      continue;
    }
    if (FloatTypeWords().count(tok.text) != 0) {
      findings.push_back({f, tok.line, tok.text, "floating-point type"});
    } else if (IsFloatMacro(tok.text)) {
      findings.push_back({f, tok.line, tok.text, "floating-point macro"});
    } else if (tok.next == '(' && tok.prev != '.' && tok.prev != '>') {
      std::string_view name = tok.text;
      if (StartsWith(name, "__builtin_")) name.remove_prefix(10);
      if (IsMathName(name)) findings.push_back({f, tok.line, tok.text, "math-library call"});
    }
  }
  std::stable_sort(findings.begin(), findings.end(),
                   [](const SourceFinding& a, const SourceFinding& b) { return a.line < b.line; });
  return findings;
}

std::vector<std::string> QuotedIncludes(std::string_view text) {
  std::vector<std::string> headers;
  for (const auto& inc : Lex(text).includes) {
    if (!inc.angled) headers.push_back(inc.header);
  }
  return headers;
}

CommandResult RunCommand(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 65536> buf{};
  size_t got = 0;
  while ((got = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), got);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string ShellQuote(std::string_view s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

std::optional<std::string> SassFloatRule(std::string_view opcode) {
  static const std::set<std::string, std::less<>> kArithmetic = {
      "FADD", "FADD32I", "FMUL",      "FMUL32I", "FFMA",      "FFMA32I", "FMNMX",     "FSWZADD",
      "FCHK", "HADD2",   "HADD2_32I", "HMUL2",   "HMUL2_32I", "HFMA2",   "HFMA2_32I", "HMNMX2",
      "DADD", "DMUL",    "DFMA",      "DMNMX",   "FMUL2",     "FADD2",   "FFMA2"};
  static const std::set<std::string, std::less<>> kCompare = {"FSET",   "FSETP", "FSEL", "HSET2",
                                                              "HSETP2", "DSETP", "DSET"};
  static const std::set<std::string, std::less<>> kConversion = {
      "F2I", "I2F", "F2F", "F2IP", "I2FP", "F2FP", "FRND", "I2F64", "F2I64"};
  static const std::set<std::string, std::less<>> kTensor = {"HMMA", "DMMA",  "HGMMA",  "QMMA",
                                                             "OMMA", "QGMMA", "UTCHMMA"};
  const std::string m(opcode.substr(0, opcode.find('.')));
  if (kConversion.count(m)) return "float conversion";
  if (kCompare.count(m)) return "float compare";
  if (kArithmetic.count(m)) return "float arithmetic";
  if (kTensor.count(m)) return "float tensor-core MMA";
  if (m == "MUFU") return "special-function unit (rcp, rsq, ex2, lg2, sin, cos)";
  return std::nullopt;
}

DisassemblyScan ScanSass(std::string_view cuobjdump_output) {
  static const std::regex function_re(R"(^\s*Function\s*:\s*(\S+)\s*$)");
  static const std::regex arch_re(R"(^\s*arch\s*=\s*(sm_\w+)\s*$)");
  static const std::regex insn_re(
      R"(^\s*/\*[0-9a-fA-F]+\*/\s+(?:@!?U?P[0-9T]\s+)?([A-Z][A-Z0-9_.]*)(.*);)");
  DisassemblyScan scan;
  std::string function;
  std::smatch m;
  for (std::string_view line_view : Lines(cuobjdump_output)) {
    const std::string line(line_view);
    if (std::regex_match(line, m, function_re)) {
      function = m[1];
      ++scan.functions;
      continue;
    }
    if (std::regex_match(line, m, arch_re)) {
      scan.file_formats.push_back(m[1]);
      continue;
    }
    if (!std::regex_search(line, m, insn_re)) continue;
    ++scan.instructions;
    const std::string opcode = m[1];
    // "HFMA2.MMA R3, -RZ, RZ, 0, 0": -0 * 0 + an immediate pair, nvcc's way of loading a 32-bit
    // constant through the FMA pipe. It copies the immediate's bits (as movss copies integer
    // data on x86); no value is computed.
    static const std::regex move_idiom_re(R"(^\s*U?R[0-9]+,\s*-?RZ,\s*-?RZ,)");
    if (opcode.rfind("HFMA2", 0) == 0 && std::regex_search(std::string(m[2]), move_idiom_re)) {
      continue;
    }
    if (const auto rule = SassFloatRule(opcode)) {
      scan.findings.push_back({"device code", function, Trim(opcode + std::string(m[2])), *rule});
    }
  }
  return scan;
}

DisassemblyScan ScanPtx(std::string_view cuobjdump_output) {
  static const std::regex entry_re(R"(^\s*\.(?:visible\s+)?\.?(?:entry|func)\s+(\w+))");
  static const std::regex insn_re(R"(^\s*(?:@!?%\w+\s+)?([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*)\s)");
  static const std::regex float_type_re(
      R"(\.(f16|f16x2|bf16|bf16x2|tf32|f32|f64|e4m3|e5m2|e4m3x2|e5m2x2)(\.|$))");
  DisassemblyScan scan;
  std::string function;
  std::smatch m;
  for (std::string_view line_view : Lines(cuobjdump_output)) {
    const std::string line(line_view);
    if (std::regex_search(line, m, entry_re)) {
      function = m[1];
      ++scan.functions;
      continue;
    }
    const std::string trimmed = Trim(line);
    if (trimmed.empty() || trimmed[0] == '.' || trimmed[0] == '/' || trimmed[0] == '{' ||
        trimmed[0] == '}' || trimmed[0] == '$') {
      continue;
    }
    if (!std::regex_search(line, m, insn_re)) continue;
    ++scan.instructions;
    const std::string insn = m[1];
    if (std::regex_search(insn, float_type_re)) {
      scan.findings.push_back({"device code (PTX)", function, trimmed, "float instruction"});
    }
  }
  return scan;
}

std::string Describe(const ObjectFinding& f) {
  std::string s = f.object;
  if (!f.function.empty()) s += " in " + f.function;
  return s + ": " + f.item + "  [" + f.rule + "]";
}

std::string Describe(const SourceFinding& f) {
  return f.file + ":" + std::to_string(f.line) + ": " + f.token + "  [" + f.rule + "]";
}

}  // namespace dv::float_guard
