// Ed25519 keys for attestation signing, through OpenSSL's EVP API. Key files are PEM: the private
// key as PKCS#8 ("BEGIN PRIVATE KEY", mode 0600), the public key as SPKI ("BEGIN PUBLIC KEY").
// Every failure throws AttestError naming the file.
#pragma once

#include <openssl/evp.h>

#include <memory>
#include <string>
#include <string_view>

namespace dv::attest {

struct EvpPkeyDeleter {
  void operator()(EVP_PKEY* key) const;
};
// Owns one EVP_PKEY; pass .get() to the signing and verification calls.
using EvpPkeyPtr = std::unique_ptr<EVP_PKEY, EvpPkeyDeleter>;

struct GeneratedKey {
  std::string private_path;  // as given
  std::string public_path;   // PublicKeyPathFor(private_path)
  std::string keyid;         // KeyId of the new key
};

// Where the public key of `private_path` lives: the extension replaced by ".pub" (box.key ->
// box.pub), or ".pub" appended when there is none (box -> box.pub).
std::string PublicKeyPathFor(const std::string& private_path);

// Generates a fresh Ed25519 key pair: the private key at `private_path` (created exclusively with
// mode 0600), the public key at PublicKeyPathFor(private_path). Refuses to overwrite either file.
GeneratedKey GenerateEd25519Key(const std::string& private_path);

// Reads a PEM private key; refuses unreadable files, encrypted keys and non-Ed25519 keys.
EvpPkeyPtr LoadPrivateKey(const std::string& path);

// Reads a PEM SPKI public key; refuses unreadable files and non-Ed25519 keys.
EvpPkeyPtr LoadPublicKey(const std::string& path);

// Lowercase hex SHA-256 of the key's SPKI DER encoding (private keys: of their public half).
// Informational: verification never trusts a keyid.
std::string KeyId(EVP_PKEY* key);

// The 64-byte Ed25519 signature of `message` (pure Ed25519, no pre-hash). Throws AttestError for
// a null or non-Ed25519 key.
std::string SignEd25519(EVP_PKEY* key, std::string_view message);

// True when `signature` is a valid Ed25519 signature of `message` under `key`; false for any
// invalid signature, including one of the wrong length. Throws AttestError for a null or
// non-Ed25519 key.
bool VerifyEd25519(EVP_PKEY* key, std::string_view message, std::string_view signature);

}  // namespace dv::attest
