#include "engine/hash_chain.h"

#include <openssl/evp.h>

#include <memory>
#include <stdexcept>
#include <vector>

namespace dv {
namespace {

constexpr char kChainSeed[] = "detllm-demo-v1";

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

std::array<uint8_t, 32> Sha256Of(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  std::array<uint8_t, 32> out{};
  unsigned int len = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), a.data(), a.size()) != 1 ||
      EVP_DigestUpdate(ctx.get(), b.data(), b.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), out.data(), &len) != 1 || len != 32) {
    throw std::runtime_error("SHA-256 failed");
  }
  return out;
}

}  // namespace

HashChain::HashChain()
    : state_(Sha256Of({reinterpret_cast<const uint8_t*>(kChainSeed), sizeof(kChainSeed) - 1}, {})) {}

void HashChain::Update(std::span<const uint8_t> data) { state_ = Sha256Of(state_, data); }

void HashChain::UpdateLogits(std::span<const int32_t> logits) {
  std::vector<uint8_t> bytes(logits.size() * 4);
  for (size_t i = 0; i < logits.size(); ++i) {
    const auto v = static_cast<uint32_t>(logits[i]);
    for (size_t b = 0; b < 4; ++b) bytes[4 * i + b] = static_cast<uint8_t>(v >> (8 * b));
  }
  Update(bytes);
}

void HashChain::UpdateToken(int64_t token_id) {
  std::array<uint8_t, 8> bytes{};
  const auto v = static_cast<uint64_t>(token_id);
  for (size_t b = 0; b < 8; ++b) bytes[b] = static_cast<uint8_t>(v >> (8 * b));
  Update(bytes);
}

std::string HashChain::Hex() const {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (uint8_t c : state_) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

}  // namespace dv
