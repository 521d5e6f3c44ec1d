// SHA-256 through OpenSSL's EVP API, as raw digests and as 64 lowercase hex digits: artifact and
// config identities, content-addressed DB ids, machine ids, key ids. EVP_Digest* fails only when
// memory is exhausted; that is reported as std::bad_alloc (an internal error), never as a value.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace dv {

using Sha256Digest = std::array<uint8_t, 32>;

// Incremental SHA-256: Update any number of times, then Final once; Reset starts over with the
// same context, so a hot loop (a hash chain per decode step) allocates nothing after the first.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  Sha256& Reset();
  Sha256& Update(std::span<const uint8_t> bytes);
  Sha256& Update(std::string_view bytes) {
    return Update({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  }
  Sha256Digest Final();
  std::string FinalHex();

 private:
  evp_md_ctx_st* ctx_ = nullptr;
};

Sha256Digest Sha256Of(std::span<const uint8_t> bytes);
std::string Sha256Hex(std::span<const uint8_t> bytes);
std::string Sha256Hex(std::string_view bytes);
// SHA-256 of a whole regular file, read in pieces (never held in memory whole). Throws FileError
// naming the file when it is missing, not a regular file, or unreadable.
std::string Sha256FileHex(const std::string& path);

// Lowercase hex of any bytes.
std::string HexLower(std::span<const uint8_t> bytes);
// True for exactly 64 characters of [0-9a-f].
bool IsSha256Hex(std::string_view text);

}  // namespace dv
