#include "attest/ed25519_keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "attest/attest_error.h"
#include "base/file_io.h"
#include "base/sha256.h"

namespace dv::attest {
namespace {

// Key files are a few hundred bytes; the cap stops a mistaken path (a device, a huge file) from
// being read whole.
constexpr size_t kMaxKeyFileBytes = 64 * 1024;
constexpr mode_t kPrivateKeyMode = 0600;
constexpr mode_t kPublicKeyMode = 0644;

struct BioDeleter {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using BioPtr = std::unique_ptr<BIO, BioDeleter>;

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, MdCtxDeleter>;

struct PkeyCtxDeleter {
  void operator()(EVP_PKEY_CTX* ctx) const { EVP_PKEY_CTX_free(ctx); }
};
using PkeyCtxPtr = std::unique_ptr<EVP_PKEY_CTX, PkeyCtxDeleter>;

// The most recent OpenSSL reason, and an empty error queue afterwards so that a later failure is
// not blamed on this one.
std::string OpensslReason() {
  const unsigned long code = ERR_peek_last_error();
  std::string reason = "unknown OpenSSL error";
  if (code != 0) {
    const char* text = ERR_reason_error_string(code);
    if (text != nullptr) reason = text;
  }
  ERR_clear_error();
  return reason;
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  // Closes now so that a close error (e.g. a full disk on NFS) is reported, not lost.
  int Close() {
    const int rc = close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

// A key file is read only when it is a regular file of at most kMaxKeyFileBytes: a FIFO would
// block the open, a device would never end (ReadFileBounded refuses both without blocking).
std::string ReadKeyFile(const std::string& path, const char* what) {
  std::string data, why;
  if (!ReadFileBounded(path, kMaxKeyFileBytes, data, why)) {
    throw AttestError(path + ": cannot read " + what + ": " + why);
  }
  return data;
}

// Creates `path` exclusively (never follows or replaces an existing file) and writes `data`.
void WriteNewFile(const std::string& path, const std::string& data, mode_t mode, const char* what) {
  FileDescriptor fd(open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode));
  if (fd.get() < 0) {
    const int err = errno;
    if (err == EEXIST) {
      throw AttestError(path + ": " + what + " already exists; refusing to overwrite it");
    }
    throw AttestError(path + ": cannot create " + what + ": " + std::strerror(err));
  }
  // The umask may only have removed bits; set the mode exactly so a private key is never
  // readable by others and always readable by its owner.
  if (fchmod(fd.get(), mode) != 0) {
    throw AttestError(path + ": cannot set mode of " + what + ": " + std::strerror(errno));
  }
  // A key cut short by a full disk must not stay behind looking like a key.
  const auto fail = [&](const char* doing) {
    const int err = errno;
    unlink(path.c_str());
    throw AttestError(path + ": cannot " + doing + " " + what + ": " + std::strerror(err));
  };
  size_t written = 0;
  while (written < data.size()) {
    const ssize_t n = write(fd.get(), data.data() + written, data.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write");
    }
    written += static_cast<size_t>(n);
  }
  if (fsync(fd.get()) != 0 || fd.Close() != 0) fail("write");
}

std::string BioContents(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  if (size <= 0 || data == nullptr) return {};
  return std::string(data, static_cast<size_t>(size));
}

bool IsEd25519(EVP_PKEY* key) { return EVP_PKEY_get_id(key) == EVP_PKEY_ED25519; }

// EVP would happily sign with an RSA or EC key (defaulting a digest); the envelope format promises
// Ed25519, so any other key is refused before it is used.
void RequireEd25519(EVP_PKEY* key, const char* use) {
  if (key == nullptr) throw AttestError(std::string(use) + ": no key given");
  if (!IsEd25519(key)) {
    const char* name = EVP_PKEY_get0_type_name(key);
    throw AttestError(std::string(use) + ": key is " + (name != nullptr ? name : "unknown") +
                      ", expected Ed25519");
  }
}

std::string KeyTypeName(EVP_PKEY* key) {
  const char* name = EVP_PKEY_get0_type_name(key);
  return name != nullptr ? name : "unknown";
}

// PEM_read_* would prompt on the terminal for an encrypted key's passphrase; refusing here turns
// an encrypted key into an ordinary load error instead.
int RefusePassphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*userdata*/) { return -1; }

BioPtr MemoryBioOf(const std::string& data) {
  BioPtr bio(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
  if (!bio) throw AttestError("cannot allocate an OpenSSL buffer: " + OpensslReason());
  return bio;
}

}  // namespace

void EvpPkeyDeleter::operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }

std::string PublicKeyPathFor(const std::string& private_path) {
  std::filesystem::path path(private_path);
  path.replace_extension(".pub");
  return path.string();
}

GeneratedKey GenerateEd25519Key(const std::string& private_path) {
  GeneratedKey result;
  result.private_path = private_path;
  result.public_path = PublicKeyPathFor(private_path);
  if (result.public_path == private_path) {
    throw AttestError(private_path + ": a private key file must not end in .pub");
  }
  // Check the public path first so that a refusal leaves no new private key behind.
  std::error_code ec;
  if (std::filesystem::symlink_status(result.public_path, ec).type() !=
      std::filesystem::file_type::not_found) {
    throw AttestError(result.public_path + ": public key already exists; refusing to overwrite it");
  }

  EVP_PKEY* raw_key = nullptr;
  {
    PkeyCtxPtr ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr));
    if (!ctx || EVP_PKEY_keygen_init(ctx.get()) != 1 || EVP_PKEY_keygen(ctx.get(), &raw_key) != 1) {
      throw AttestError(private_path + ": cannot generate an Ed25519 key: " + OpensslReason());
    }
  }
  EvpPkeyPtr key(raw_key);

  BioPtr private_pem(BIO_new(BIO_s_mem()));
  BioPtr public_pem(BIO_new(BIO_s_mem()));
  if (!private_pem || !public_pem ||
      PEM_write_bio_PrivateKey(private_pem.get(), key.get(), nullptr, nullptr, 0, nullptr,
                               nullptr) != 1 ||
      PEM_write_bio_PUBKEY(public_pem.get(), key.get()) != 1) {
    throw AttestError(private_path + ": cannot encode the new key as PEM: " + OpensslReason());
  }

  WriteNewFile(private_path, BioContents(private_pem.get()), kPrivateKeyMode, "private key");
  try {
    WriteNewFile(result.public_path, BioContents(public_pem.get()), kPublicKeyMode, "public key");
  } catch (const AttestError&) {
    // A private key without its public half is useless and confusing; remove the file we just
    // created (O_EXCL guarantees it is ours).
    std::filesystem::remove(private_path, ec);
    throw;
  }
  result.keyid = KeyId(key.get());
  return result;
}

EvpPkeyPtr LoadPrivateKey(const std::string& path) {
  const std::string pem = ReadKeyFile(path, "private key");
  BioPtr bio = MemoryBioOf(pem);
  EvpPkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, RefusePassphrase, nullptr));
  if (!key) {
    ERR_clear_error();
    // OpenSSL's decoder reasons ("unsupported", "no start line") do not tell a user what to fix;
    // name the common mix-ups instead.
    if (pem.find("-----BEGIN ENCRYPTED PRIVATE KEY-----") != std::string::npos) {
      throw AttestError(path + ": encrypted private keys are not supported");
    }
    if (pem.find("-----BEGIN PUBLIC KEY-----") != std::string::npos) {
      throw AttestError(path + ": is a public key, expected a private key");
    }
    throw AttestError(path + ": not a PEM private key");
  }
  if (!IsEd25519(key.get())) {
    throw AttestError(path + ": private key is " + KeyTypeName(key.get()) + ", expected Ed25519");
  }
  return key;
}

EvpPkeyPtr LoadPublicKey(const std::string& path) {
  const std::string pem = ReadKeyFile(path, "public key");
  BioPtr bio = MemoryBioOf(pem);
  EvpPkeyPtr key(PEM_read_bio_PUBKEY(bio.get(), nullptr, RefusePassphrase, nullptr));
  if (!key) {
    ERR_clear_error();
    if (pem.find("PRIVATE KEY-----") != std::string::npos) {
      throw AttestError(path + ": is a private key, expected a public key (the .pub file)");
    }
    throw AttestError(path + ": not a PEM public key (\"BEGIN PUBLIC KEY\")");
  }
  if (!IsEd25519(key.get())) {
    throw AttestError(path + ": public key is " + KeyTypeName(key.get()) + ", expected Ed25519");
  }
  return key;
}

std::string KeyId(EVP_PKEY* key) {
  if (key == nullptr) throw AttestError("keyid: no key given");
  unsigned char* der = nullptr;
  const int size = i2d_PUBKEY(key, &der);
  if (size <= 0 || der == nullptr) {
    throw AttestError("cannot encode a public key as SPKI DER: " + OpensslReason());
  }
  std::string id;
  try {
    id = Sha256Hex(std::span<const uint8_t>(der, static_cast<size_t>(size)));
  } catch (...) {
    OPENSSL_free(der);
    throw;
  }
  OPENSSL_free(der);
  return id;
}

std::string SignEd25519(EVP_PKEY* key, std::string_view message) {
  RequireEd25519(key, "signing");
  MdCtxPtr ctx(EVP_MD_CTX_new());
  // Ed25519 signs the message itself (no digest is named): the one-shot EVP_DigestSign is the
  // only form OpenSSL accepts for it.
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key) != 1) {
    throw AttestError("cannot start an Ed25519 signature: " + OpensslReason());
  }
  size_t size = 0;
  const auto* data = reinterpret_cast<const unsigned char*>(message.data());
  if (EVP_DigestSign(ctx.get(), nullptr, &size, data, message.size()) != 1) {
    throw AttestError("cannot size an Ed25519 signature: " + OpensslReason());
  }
  std::string signature(size, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &size, data,
                     message.size()) != 1) {
    throw AttestError("cannot compute an Ed25519 signature: " + OpensslReason());
  }
  signature.resize(size);
  return signature;
}

bool VerifyEd25519(EVP_PKEY* key, std::string_view message, std::string_view signature) {
  RequireEd25519(key, "verification");
  MdCtxPtr ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key) != 1) {
    throw AttestError("cannot start Ed25519 verification: " + OpensslReason());
  }
  const int rc = EVP_DigestVerify(
      ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
      reinterpret_cast<const unsigned char*>(message.data()), message.size());
  // Anything but 1 (0: mismatch, <0: malformed, e.g. wrong length) is an invalid signature.
  ERR_clear_error();
  return rc == 1;
}

}  // namespace dv::attest
