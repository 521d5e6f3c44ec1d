#include "engine/hash_chain.h"

#include <openssl/evp.h>

#include <bit>
#include <memory>
#include <stdexcept>

namespace dv {
namespace {

constexpr char kChainSeed[] = "detllm-demo-v1";

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

// One digest context per thread, reused: a decode step hashes every row's logits, and the
// rows of a batch are hashed on several threads.
EVP_MD_CTX* ThreadContext() {
  thread_local std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  return ctx.get();
}

// SHA-256(a || b).
std::array<uint8_t, 32> Sha256Of(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  EVP_MD_CTX* ctx = ThreadContext();
  std::array<uint8_t, 32> out{};
  unsigned int len = 0;
  if (ctx == nullptr || EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx, a.data(), a.size()) != 1 ||
      EVP_DigestUpdate(ctx, b.data(), b.size()) != 1 ||
      EVP_DigestFinal_ex(ctx, out.data(), &len) != 1 || len != 32) {
    throw std::runtime_error("SHA-256 failed");
  }
  return out;
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
    EVP_MD_CTX* ctx = ThreadContext();
    unsigned int len = 0;
    bool ok = ctx != nullptr && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1 &&
              EVP_DigestUpdate(ctx, state_.data(), state_.size()) == 1;
    std::array<uint8_t, 4096> bytes;
    for (size_t i = 0; ok && i < logits.size();) {
      size_t n = 0;
      for (; n < bytes.size() && i < logits.size(); n += 4, ++i) {
        const auto v = static_cast<uint32_t>(logits[i]);
        for (size_t b = 0; b < 4; ++b) bytes[n + b] = static_cast<uint8_t>(v >> (8 * b));
      }
      ok = EVP_DigestUpdate(ctx, bytes.data(), n) == 1;
    }
    if (!ok || EVP_DigestFinal_ex(ctx, state_.data(), &len) != 1 || len != 32) {
      throw std::runtime_error("SHA-256 failed");
    }
  }
}

void HashChain::UpdateToken(int64_t token_id) {
  std::array<uint8_t, 8> bytes{};
  const auto v = static_cast<uint64_t>(token_id);
  for (size_t b = 0; b < 8; ++b) bytes[b] = static_cast<uint8_t>(v >> (8 * b));
  Update(bytes);
}

std::string HashChain::Hex() const { return HexOf(state_); }

std::string HexOf(const std::array<uint8_t, 32>& state) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (uint8_t c : state) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

}  // namespace dv
