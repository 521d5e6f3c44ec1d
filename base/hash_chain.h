// The DetLLM demo hash chains (docs/SPEC.md §7): H0 = SHA-256("detllm-demo-v1"), then
// H = SHA-256(H || data). Logits data: the step's int32 logits, little-endian; token data: the
// id as an 8-byte little-endian unsigned integer. Host byte order never matters.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

namespace dv {

class HashChain {
 public:
  HashChain();
  void Update(std::span<const uint8_t> data);
  void UpdateLogits(std::span<const int32_t> logits);
  void UpdateToken(int64_t token_id);
  const std::array<uint8_t, 32>& state() const { return state_; }
  std::string Hex() const;  // 64 hex digits
  std::string Hex(size_t digits) const { return Hex().substr(0, digits); }

 private:
  std::array<uint8_t, 32> state_;
};

// 64 lower-case hex digits of a chain state.
std::string HexOf(const std::array<uint8_t, 32>& state);

}  // namespace dv
