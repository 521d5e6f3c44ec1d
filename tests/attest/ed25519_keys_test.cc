#include "attest/ed25519_keys.h"

#include <sys/stat.h>

#include <openssl/bio.h>
#include <openssl/pem.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "attest/attest_error.h"
#include "tests/support/scratch_files.h"

namespace dv::attest {
namespace {

using test_files::ScratchDir;

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A P-256 key written as PEM: a valid key of the wrong type.
void WriteEcKeyPair(const std::string& private_path, const std::string& public_path) {
  EvpPkeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  ASSERT_TRUE(key);
  BIO* priv = BIO_new_file(private_path.c_str(), "w");
  BIO* pub = BIO_new_file(public_path.c_str(), "w");
  ASSERT_TRUE(priv != nullptr && pub != nullptr);
  EXPECT_EQ(PEM_write_bio_PrivateKey(priv, key.get(), nullptr, nullptr, 0, nullptr, nullptr), 1);
  EXPECT_EQ(PEM_write_bio_PUBKEY(pub, key.get()), 1);
  BIO_free(priv);
  BIO_free(pub);
}

// Runs `fn`, expecting AttestError whose one-line message contains `needle`.
template <typename Fn>
void ExpectAttestError(Fn fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected AttestError containing '" << needle << "'";
  } catch (const AttestError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(needle), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(Ed25519KeysTest, PublicKeyPathReplacesOrAppendsExtension) {
  EXPECT_EQ(PublicKeyPathFor("box.key"), "box.pub");
  EXPECT_EQ(PublicKeyPathFor("/keys/box.key"), "/keys/box.pub");
  EXPECT_EQ(PublicKeyPathFor("box"), "box.pub");
  EXPECT_EQ(PublicKeyPathFor("dir.d/box"), "dir.d/box.pub");
}

TEST(Ed25519KeysTest, GenerateWritesPrivateKey0600AndPublicKey) {
  ScratchDir dir;
  const GeneratedKey generated = GenerateEd25519Key(dir.File("box.key"));
  EXPECT_EQ(generated.public_path, dir.File("box.pub"));
  EXPECT_EQ(generated.keyid.size(), 64u);

  struct stat st {};
  ASSERT_EQ(stat(generated.private_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_TRUE(std::filesystem::exists(generated.public_path));

  std::ifstream private_file(generated.private_path);
  std::string first_line;
  std::getline(private_file, first_line);
  EXPECT_EQ(first_line, "-----BEGIN PRIVATE KEY-----");

  EvpPkeyPtr private_key = LoadPrivateKey(generated.private_path);
  EvpPkeyPtr public_key = LoadPublicKey(generated.public_path);
  EXPECT_EQ(KeyId(private_key.get()), generated.keyid);
  EXPECT_EQ(KeyId(public_key.get()), generated.keyid);
}

TEST(Ed25519KeysTest, GenerateWithoutExtensionAppendsPub) {
  ScratchDir dir;
  const GeneratedKey generated = GenerateEd25519Key(dir.File("signing"));
  EXPECT_EQ(generated.public_path, dir.File("signing.pub"));
  EXPECT_TRUE(std::filesystem::exists(generated.public_path));
}

TEST(Ed25519KeysTest, GenerateRefusesToOverwriteExistingKey) {
  ScratchDir dir;
  const GeneratedKey first = GenerateEd25519Key(dir.File("box.key"));
  ExpectAttestError([&] { GenerateEd25519Key(dir.File("box.key")); }, "refusing to overwrite");
  // The original key is untouched.
  EXPECT_EQ(KeyId(LoadPrivateKey(first.private_path).get()), first.keyid);
}

TEST(Ed25519KeysTest, GenerateRefusesWhenPublicKeyExistsAndLeavesNoPrivateKey) {
  ScratchDir dir;
  WriteText(dir.File("box.pub"), "someone else's key\n");
  ExpectAttestError([&] { GenerateEd25519Key(dir.File("box.key")); }, "box.pub");
  EXPECT_FALSE(std::filesystem::exists(dir.File("box.key")));
}

TEST(Ed25519KeysTest, GenerateIntoMissingDirectoryFails) {
  ScratchDir dir;
  ExpectAttestError([&] { GenerateEd25519Key(dir.File("no/such/dir/box.key")); }, "cannot create");
}

TEST(Ed25519KeysTest, LoadMissingFileNamesTheFile) {
  ScratchDir dir;
  const std::string path = dir.File("absent.key");
  ExpectAttestError([&] { LoadPrivateKey(path); }, path + ": cannot read private key");
  ExpectAttestError([&] { LoadPublicKey(path); }, path + ": cannot read public key");
}

TEST(Ed25519KeysTest, LoadRejectsNonPemFiles) {
  ScratchDir dir;
  const std::string path = dir.File("junk.key");
  WriteText(path, "this is not a key\n");
  ExpectAttestError([&] { LoadPrivateKey(path); }, "not a PEM private key");
  ExpectAttestError([&] { LoadPublicKey(path); }, "not a PEM public key");
}

TEST(Ed25519KeysTest, LoadRejectsWrongKeyType) {
  ScratchDir dir;
  WriteEcKeyPair(dir.File("ec.key"), dir.File("ec.pub"));
  ExpectAttestError([&] { LoadPrivateKey(dir.File("ec.key")); }, "expected Ed25519");
  ExpectAttestError([&] { LoadPublicKey(dir.File("ec.pub")); }, "expected Ed25519");
}

TEST(Ed25519KeysTest, LoadPublicRejectsPrivateKeyFile) {
  ScratchDir dir;
  const GeneratedKey generated = GenerateEd25519Key(dir.File("box.key"));
  ExpectAttestError([&] { LoadPublicKey(generated.private_path); },
                    "is a private key, expected a public key");
  ExpectAttestError([&] { LoadPrivateKey(generated.public_path); },
                    "is a public key, expected a private key");
}

TEST(Ed25519KeysTest, LoadRejectsEncryptedPrivateKey) {
  ScratchDir dir;
  const GeneratedKey generated = GenerateEd25519Key(dir.File("box.key"));
  EvpPkeyPtr key = LoadPrivateKey(generated.private_path);
  BIO* out = BIO_new_file(dir.File("encrypted.key").c_str(), "w");
  ASSERT_NE(out, nullptr);
  static char passphrase[] = "secret";
  EXPECT_EQ(
      PEM_write_bio_PKCS8PrivateKey(out, key.get(), EVP_aes_256_cbc(), passphrase,
                                    static_cast<int>(sizeof(passphrase) - 1), nullptr, nullptr),
      1);
  BIO_free(out);
  ExpectAttestError([&] { LoadPrivateKey(dir.File("encrypted.key")); },
                    "encrypted private keys are not supported");
}

TEST(Ed25519KeysTest, SignVerifyRoundTrip) {
  ScratchDir dir;
  const GeneratedKey generated = GenerateEd25519Key(dir.File("box.key"));
  EvpPkeyPtr private_key = LoadPrivateKey(generated.private_path);
  EvpPkeyPtr public_key = LoadPublicKey(generated.public_path);
  const std::string signature = SignEd25519(private_key.get(), "message");
  EXPECT_EQ(signature.size(), 64u);
  EXPECT_TRUE(VerifyEd25519(public_key.get(), "message", signature));
  EXPECT_FALSE(VerifyEd25519(public_key.get(), "messagf", signature));
  EXPECT_FALSE(VerifyEd25519(public_key.get(), "message", signature.substr(1)));
  EXPECT_FALSE(VerifyEd25519(public_key.get(), "message", ""));
}

}  // namespace
}  // namespace dv::attest
