#include "base/hash_chain.h"

#include <bit>

#include "base/sha256.h"

namespace dv {
namespace {

constexpr char kChainSeed[] = "detllm-demo-v1";

// One digest context per thread, reused: a decode step hashes every row's logits, and the
// rows of a batch are hashed on several threads.
Sha256& ThreadHasher() {
  thread_local Sha256 hasher;
  return hasher.Reset();
}

// SHA-256(a || b).
std::array<uint8_t, 32> Sha256Of(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  return ThreadHasher().Update(a).Update(b).Final();
}

}  // namespace

HashChain::HashChain()
    : state_(Sha256Of({reinterpret_cast<const uint8_t*>(kChainSeed), sizeof(kChainSeed) - 1}, {})) {
}

void HashChain::Update(std::span<const uint8_t> data) { state_ = Sha256Of(state_, data); }

// The logits as little-endian bytes: on a little-endian host that is their memory, hashed in
// place; elsewhere they are converted through a small buffer. Either way nothing is allocated.
void HashChain::UpdateLogits(std::span<const int32_t> logits) {
  if constexpr (std::endian::native == std::endian::little) {
    Update({reinterpret_cast<const uint8_t*>(logits.data()), logits.size_bytes()});
  } else {
    Sha256& hasher = ThreadHasher();
    hasher.Update(state_);
    std::array<uint8_t, 4096> bytes;
    for (size_t i = 0; i < logits.size();) {
      size_t n = 0;
      for (; n < bytes.size() && i < logits.size(); n += 4, ++i) {
        const auto v = static_cast<uint32_t>(logits[i]);
        for (size_t b = 0; b < 4; ++b) bytes[n + b] = static_cast<uint8_t>(v >> (8 * b));
      }
      hasher.Update({bytes.data(), n});
    }
    state_ = hasher.Final();
  }
}

void HashChain::UpdateToken(int64_t token_id) {
  std::array<uint8_t, 8> bytes{};
  const auto v = static_cast<uint64_t>(token_id);
  for (size_t b = 0; b < 8; ++b) bytes[b] = static_cast<uint8_t>(v >> (8 * b));
  Update(bytes);
}

std::string HashChain::Hex() const { return HexOf(state_); }

std::string HexOf(const std::array<uint8_t, 32>& state) { return HexLower(state); }

}  // namespace dv
