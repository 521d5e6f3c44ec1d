#include "base/sha256.h"

#include <openssl/evp.h>

#include <new>

#include "base/file_io.h"

namespace dv {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr) throw std::bad_alloc();
  Reset();
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

Sha256& Sha256::Reset() {
  if (EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) throw std::bad_alloc();
  return *this;
}

Sha256& Sha256::Update(std::span<const uint8_t> bytes) {
  if (!bytes.empty() && EVP_DigestUpdate(ctx_, bytes.data(), bytes.size()) != 1) {
    throw std::bad_alloc();
  }
  return *this;
}

Sha256Digest Sha256::Final() {
  Sha256Digest digest{};
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(ctx_, digest.data(), &length) != 1 || length != digest.size()) {
    throw std::bad_alloc();
  }
  return digest;
}

std::string Sha256::FinalHex() { return HexLower(Final()); }

Sha256Digest Sha256Of(std::span<const uint8_t> bytes) {
  Sha256Digest digest{};
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1 ||
      length != digest.size()) {
    throw std::bad_alloc();
  }
  return digest;
}

std::string Sha256Hex(std::span<const uint8_t> bytes) { return HexLower(Sha256Of(bytes)); }

std::string Sha256Hex(std::string_view bytes) {
  return Sha256Hex({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
}

std::string Sha256FileHex(const std::string& path) {
  Sha256 hash;
  ReadFileInPieces(path, [&](std::span<const uint8_t> piece) { hash.Update(piece); });
  return hash.FinalHex();
}

std::string HexLower(std::span<const uint8_t> bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex(2 * bytes.size(), '0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    hex[2 * i] = kHex[bytes[i] >> 4];
    hex[2 * i + 1] = kHex[bytes[i] & 0x0f];
  }
  return hex;
}

bool IsSha256Hex(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace dv
