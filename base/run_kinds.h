// The vocabulary of a run: which engine, which backend, how it ended, which float type. Each is an
// enum inside the program and has exactly one spelling at the edges (scenario YAML, run plans,
// DB rows, reports, attestations), defined here once. Adding a backend or a status is one entry
// in its list; parsing, listing and printing follow.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dv {

// int8: the integer engine (the thing detverify proves reproducible); float: a contrast row of
// the same model in floating point, expected to diverge.
enum class EngineKind : uint8_t { kInt8, kFloat };
// reference: plain scalar loops; cpu: SIMD + threads; cuda: the GPU backend.
enum class BackendKind : uint8_t { kReference, kCpu, kCuda };
// How a run ended. ok: it produced its hashes; skipped: it could not run here (no GPU, no float
// engine, no emulator); timeout: killed at its time limit; killed: SIGKILL from elsewhere;
// crashed: any other signal (a failed DV_CHECK aborts); error: a non-zero exit.
enum class RunStatus : uint8_t { kOk, kCrashed, kTimeout, kKilled, kSkipped, kError };
// The float engine's element type.
enum class FloatDType : uint8_t { kFp32, kBf16, kFp16 };

// The spellings of each enum, in the order of its values.
template <typename E>
struct KindSpellings;
template <>
struct KindSpellings<EngineKind> {
  static constexpr std::array<std::string_view, 2> kNames = {"int8", "float"};
  static constexpr std::string_view kWhat = "engine";
};
template <>
struct KindSpellings<BackendKind> {
  static constexpr std::array<std::string_view, 3> kNames = {"reference", "cpu", "cuda"};
  static constexpr std::string_view kWhat = "backend";
};
template <>
struct KindSpellings<RunStatus> {
  static constexpr std::array<std::string_view, 6> kNames = {"ok",     "crashed", "timeout",
                                                             "killed", "skipped", "error"};
  static constexpr std::string_view kWhat = "status";
};
template <>
struct KindSpellings<FloatDType> {
  static constexpr std::array<std::string_view, 3> kNames = {"fp32", "bf16", "fp16"};
  static constexpr std::string_view kWhat = "dtype";
};

// "int8", "cpu", "skipped", ...
template <typename E>
constexpr std::string_view KindName(E value) {
  const auto i = static_cast<size_t>(value);
  return i < KindSpellings<E>::kNames.size() ? KindSpellings<E>::kNames[i] : "unknown";
}

// The value spelled `text`, or nullopt.
template <typename E>
constexpr std::optional<E> ParseKind(std::string_view text) {
  for (size_t i = 0; i < KindSpellings<E>::kNames.size(); ++i) {
    if (KindSpellings<E>::kNames[i] == text) return static_cast<E>(i);
  }
  return std::nullopt;
}

// Every value, in order.
template <typename E>
constexpr std::array<E, KindSpellings<E>::kNames.size()> AllKinds() {
  std::array<E, KindSpellings<E>::kNames.size()> out{};
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<E>(i);
  return out;
}

// The spellings joined by `separator`: "reference | cpu | cuda".
template <typename E>
std::string KindList(std::string_view separator = " | ") {
  std::string out;
  for (std::string_view name : KindSpellings<E>::kNames) {
    if (!out.empty()) out += separator;
    out += name;
  }
  return out;
}

}  // namespace dv
