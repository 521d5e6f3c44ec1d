#include "tests/layering/layer_rules.h"

#include <algorithm>

namespace dv::layering {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::string_view FileName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

const std::vector<Component>& LayerTable() {
  static const std::vector<Component> kTable = {
      {"base", {}, "errors and checks, SHA-256, bounded file reads, atomic writes, canonical JSON"},
      {"build_info", {}, "generated build provenance (version, spec, commit, compiler)"},
      {"os",
       {"base"},
       "one small interface per OS concern: CPU and memory facts, huge pages, "
       "affinity, processes (Linux and macOS)"},
      {"cuda_device",
       {},
       "the CUDA device count and the runtime owners the CUDA targets share (DETVERIFY_CUDA)"},
      {"engine.core",
       {"base"},
       "the float-free integer core: intmath, dyadic, ops, IntQwen3, "
       "the backend interface, the reference backend, the K/V layout, the device-neutral "
       "block programs and resident forward pass"},
      {"engine.cpu", {"engine.core", "os", "base"}, "the cpu backend: SIMD kernels, threads"},
      {"engine.cuda",
       {"engine.cpu", "engine.core", "cuda_device", "base"},
       "the cuda backend: exact int8 GEMMs on NVIDIA GPUs (cuBLASLt, dp4a), the resident "
       "forward pass's kernels and graphs (or row work on the host's cpu backend)"},
      {"engine.backends",
       {"engine.core", "engine.cpu", "engine.cuda", "cuda_device", "base"},
       "the backend registry: every backend by name"},
      {"engine.io",
       {"engine.core", "base"},
       "artifacts, safetensors, synthetic models, hash chains, greedy generation"},
      {"tokenizer", {"base"}, "byte-level BPE tokenizers (Qwen3, SmolLM2), chat templates"},
      {"checkpoint",
       {"engine.io", "os", "base"},
       "Hugging Face checkpoints: reader, validation, synthetic BF16 checkpoints (float side)",
       {{"engine.io",
         {"engine/safetensors.h",       // the container: MappedFile, ParseSafetensors, DType
          "engine/synth.h",             // the int presets' shapes, for the same-shape float presets
          "engine/prng.h",              // the synthetic models' SplitMix64 streams
          "engine/model_source.h"}}}},  // the cache root the synthetic models share
      {"gguf",
       {"checkpoint", "engine.io", "tokenizer", "base"},
       "GGUF files: container, dequantizers, Llama models, the tokenizer a GGUF carries, the "
       "float checkpoint a Llama GGUF becomes (float side; engine.io for MappedFile)"},
      {"float_engine",
       {"checkpoint", "gguf", "engine.io", "os", "cuda_device", "base"},
       "the float forward (OpenBLAS) of contrast rows and fidelity (float side)",
       // What both engines' generation shares, so a float row is chained exactly as an int8 row.
       {{"engine.io", {"engine/generate.h"}}}},
      {"fingerprint", {"os", "base", "build_info"}, "hardware/build fingerprint, machine ids"},
      {"plan",
       {"engine.io", "engine.core", "engine.backends", "float_engine", "checkpoint", "gguf",
        "fingerprint", "base", "build_info"},
       "the RunPlan, its canonical JSON, the result protocol, the child that executes a plan"},
      {"db", {"base"}, "the SQLite result store"},
      {"float_contrast",
       {},
       "the float rows' statistics: token agreement, first divergence, step-0 cushion (float "
       "side)"},
      {"verdict",
       {"db", "fingerprint", "float_contrast", "base"},
       "the one verdict per scenario, the run table"},
      {"fidelity",
       {"float_engine", "engine.io", "engine.core", "checkpoint", "verdict", "db", "base"},
       "statistics of float against int (compare, perplexity); float side"},
      {"prepare",
       {"checkpoint", "gguf", "float_engine", "fidelity", "engine.io", "engine.core", "tokenizer",
        "base"},
       "calibration and quantization: a checkpoint in, an int artifact out (float side)"},
      {"harness",
       {"plan", "engine.io", "engine.core", "engine.backends", "float_engine", "checkpoint", "gguf",
        "prepare", "tokenizer", "fingerprint", "os", "db", "verdict", "base", "build_info"},
       "scenarios, run plans, the child runner, progress"},
      {"reports",
       {"verdict", "fidelity", "db", "fingerprint", "base", "build_info"},
       "Markdown/HTML reports, the gate"},
      {"attest", {"base", "build_info"}, "in-toto statements, DSSE, Ed25519"},
      {"cli", {"*"}, "one file per verb; the two binaries"},
      {"bench",
       {"engine.io", "engine.core", "engine.cpu", "engine.backends", "float_engine", "tokenizer",
        "os", "base"},
       "Google Benchmark micro-benchmarks"},
  };
  return kTable;
}

std::optional<std::string> ComponentOf(std::string_view path) {
  if (path == "build_info.h" || path == "git_commit.h") return "build_info";
  const size_t slash = path.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const std::string module(path.substr(0, slash));
  if (module == "engine") {
    const std::string_view rest = path.substr(slash + 1);
    if (StartsWith(rest, "backends/")) {
      const std::string_view name = FileName(rest);
      if (StartsWith(name, "backend_registry")) return "engine.backends";
      // The interface every backend implements: backend.h, backend_error.h, backend_kind.h.
      // ... and the device-neutral programs of a resident forward pass (block_row_ops.h,
      // device_forward.h): core code that a device backend compiles for its device.
      if (StartsWith(name, "backend") || name == "row_ops.h" ||
          StartsWith(name, "reference_backend") || name == "block_row_ops.h" ||
          name == "device_forward.h") {
        return "engine.core";
      }
      if (StartsWith(name, "cuda_")) return "engine.cuda";
      return "engine.cpu";  // cpu_*, matmul_i8_*, attention_i8_*, row_kernels_*
    }
    if (StartsWith(rest, "ops/")) return "engine.core";
    for (const char* core :
         {"intmath.h", "dyadic.h", "model.h", "model.cc", "model_weights.h", "model_weights.cc",
          "trace.h", "trace_recorder.h", "trace_recorder.cc"}) {
      if (rest == core) return "engine.core";
    }
    return "engine.io";
  }
  for (const Component& c : LayerTable()) {
    if (c.name == module) return module;
  }
  if (module == "tests" || module == "docs" || module == "scripts" || module == "scenarios" ||
      module == "cmake") {
    return std::nullopt;
  }
  return "unknown:" + module;  // a module the table does not list
}

std::vector<std::pair<int, std::string>> QuotedIncludesWithLines(std::string_view text) {
  std::vector<std::pair<int, std::string>> out;
  int line_number = 0;
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    ++line_number;
    at = end + 1;
    size_t i = line.find_first_not_of(" \t");
    if (i == std::string_view::npos || line[i] != '#') continue;
    i = line.find_first_not_of(" \t", i + 1);
    if (i == std::string_view::npos || line.substr(i, 7) != "include") continue;
    const size_t open = line.find('"', i + 7);
    if (open == std::string_view::npos) continue;
    const size_t close = line.find('"', open + 1);
    if (close == std::string_view::npos) continue;
    out.emplace_back(line_number, std::string(line.substr(open + 1, close - open - 1)));
    if (end == text.size()) break;
  }
  return out;
}

std::vector<std::pair<int, std::string>> OsSpecificLines(std::string_view text) {
  static const char* const kMarkers[] = {
      "__linux__", "__APPLE__",     "__MACH__",  "_WIN32",         "\"/proc/",
      "\"/sys/",   "sysctl",        "getauxval", "sys/auxv.h",     "affinity(",
      "madvise",   "MADV_",         "getrusage", "sys/resource.h", "_NSGetExecutablePath",
      "mach-o/",   "boost/process", "fork(",     "posix_spawn",    "execv"};
  std::vector<std::pair<int, std::string>> out;
  int line_number = 0;
  bool in_block_comment = false;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string code(text.substr(at, end - at));
    ++line_number;
    at = end + 1;
    // Drop comments: the rest of a block comment, /* ... */ spans, and // to the end of the line.
    std::string kept;
    for (size_t i = 0; i < code.size(); ++i) {
      if (in_block_comment) {
        if (code.compare(i, 2, "*/") == 0) {
          in_block_comment = false;
          ++i;
        }
        continue;
      }
      if (code.compare(i, 2, "/*") == 0) {
        in_block_comment = true;
        ++i;
        continue;
      }
      if (code.compare(i, 2, "//") == 0) break;
      kept.push_back(code[i]);
    }
    for (const char* marker : kMarkers) {
      if (kept.find(marker) != std::string::npos) {
        out.emplace_back(line_number, marker);
        break;
      }
    }
  }
  return out;
}

std::vector<Violation> CheckFile(const std::string& file, std::string_view text) {
  std::vector<Violation> out;
  const std::optional<std::string> from = ComponentOf(file);
  if (!from) return out;
  const Component* rules = nullptr;
  for (const Component& c : LayerTable()) {
    if (c.name == *from) rules = &c;
  }
  for (const auto& [line, include] : QuotedIncludesWithLines(text)) {
    const std::optional<std::string> to = ComponentOf(include);
    if (!to || *to == *from) continue;
    const bool allowed =
        rules != nullptr &&
        (std::find(rules->uses.begin(), rules->uses.end(), "*") != rules->uses.end() ||
         std::find(rules->uses.begin(), rules->uses.end(), *to) != rules->uses.end());
    if (!allowed) {
      out.push_back({file, line, include, *from, *to});
      continue;
    }
    for (const Through& t : rules->through) {
      if (t.to == *to &&
          std::find(t.headers.begin(), t.headers.end(), include) == t.headers.end()) {
        std::string only;
        for (const std::string& h : t.headers) only += (only.empty() ? "" : ", ") + h;
        out.push_back({file, line, include, *from, *to + " (only " + only + ")"});
      }
    }
  }
  return out;
}

}  // namespace dv::layering
