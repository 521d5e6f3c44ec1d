#include "attest/dsse_envelope.h"

#include <gtest/gtest.h>

#include "attest/attest_error.h"
#include "attest/base64.h"
#include "attest/ed25519_keys.h"
#include "attest/intoto_statement.h"
#include "tests/support/scratch_files.h"

namespace dv::attest {
namespace {

using test_files::ScratchDir;

AttestationInput SampleInput() {
  AttestationInput input;
  input.artifact = {"model.safetensors", std::string(64, 'a')};
  input.results = {"results", std::string(64, 'b')};
  input.scenario_name = "sonnet18";
  input.scenario_id = std::string(64, 'c');
  input.machines = {{"m1", {{"cpu_model", "Test CPU"}, {"logical_cores", 8}}}};
  input.configurations = {
      {"int8-cpu-b1", "int8", "cpu", "m1", "ok", std::string(64, 'd'), std::string(64, 'e'), 512}};
  input.verdict = {1, 1, true};
  return input;
}

struct KeyPair {
  EvpPkeyPtr private_key;
  EvpPkeyPtr public_key;
};

KeyPair MakeKeyPair(const ScratchDir& dir, const std::string& name) {
  const GeneratedKey generated = GenerateEd25519Key(dir.File(name + ".key"));
  return {LoadPrivateKey(generated.private_path), LoadPublicKey(generated.public_path)};
}

// Runs VerifyEnvelope expecting a rejection whose one-line message names the source and contains
// `needle`.
void ExpectRejected(const std::string& envelope_text, EVP_PKEY* pub, const std::string& needle) {
  try {
    VerifyEnvelope(envelope_text, pub, "fleet.intoto.json");
    ADD_FAILURE() << "envelope accepted; expected rejection containing '" << needle << "'";
  } catch (const AttestError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("fleet.intoto.json: ", 0), 0u) << message;
    EXPECT_NE(message.find(needle), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

std::string FlipByte(std::string bytes, size_t index) {
  bytes[index] = static_cast<char>(bytes[index] ^ 0x01);
  return bytes;
}

class DsseEnvelopeTest : public ::testing::Test {
 protected:
  DsseEnvelopeTest()
      : signer_(MakeKeyPair(dir_, "signer")),
        other_(MakeKeyPair(dir_, "other")),
        statement_(BuildStatement(SampleInput())),
        envelope_text_(SignStatement(statement_, signer_.private_key.get())),
        envelope_(nlohmann::json::parse(envelope_text_)) {}

  ScratchDir dir_;
  KeyPair signer_;
  KeyPair other_;
  nlohmann::json statement_;
  std::string envelope_text_;
  nlohmann::json envelope_;
};

TEST(PaeTest, MatchesDsseSpecificationVector) {
  EXPECT_EQ(Pae("http://example.com/HelloWorld", "hello world"),
            "DSSEv1 29 http://example.com/HelloWorld 11 hello world");
}

TEST(PaeTest, CountsBytesNotCharacters) {
  EXPECT_EQ(Pae("", ""), "DSSEv1 0  0 ");
  EXPECT_EQ(Pae("t", "\xc3\xa9"), "DSSEv1 1 t 2 \xc3\xa9");
}

TEST_F(DsseEnvelopeTest, EnvelopeHasDsseShape) {
  EXPECT_EQ(envelope_["payloadType"], kInTotoPayloadType);
  ASSERT_EQ(envelope_["signatures"].size(), 1u);
  EXPECT_EQ(envelope_["signatures"][0]["keyid"], KeyId(signer_.public_key.get()));
  const std::string payload = Base64Decode(envelope_["payload"].get<std::string>()).value();
  EXPECT_EQ(nlohmann::json::parse(payload), statement_);
}

TEST_F(DsseEnvelopeTest, SignThenVerifyRoundTrip) {
  EXPECT_EQ(VerifyEnvelope(envelope_text_, signer_.public_key.get()), statement_);
}

TEST_F(DsseEnvelopeTest, SigningIsDeterministic) {
  EXPECT_EQ(SignStatement(statement_, signer_.private_key.get()), envelope_text_);
}

TEST_F(DsseEnvelopeTest, AcceptsUrlSafeUnpaddedEncodings) {
  nlohmann::json envelope = envelope_;
  for (std::string* field : {&envelope["payload"].get_ref<std::string&>(),
                             &envelope["signatures"][0]["sig"].get_ref<std::string&>()}) {
    std::string& text = *field;
    for (char& c : text) {
      if (c == '+') c = '-';
      if (c == '/') c = '_';
    }
    while (!text.empty() && text.back() == '=') text.pop_back();
  }
  EXPECT_EQ(VerifyEnvelope(envelope.dump(), signer_.public_key.get()), statement_);
}

TEST_F(DsseEnvelopeTest, RejectsFlippedPayloadByte) {
  std::string payload = Base64Decode(envelope_["payload"].get<std::string>()).value();
  const size_t at = payload.find("512");  // n_steps: still valid JSON after the flip
  ASSERT_NE(at, std::string::npos);
  nlohmann::json envelope = envelope_;
  envelope["payload"] = Base64Encode(FlipByte(payload, at));
  ExpectRejected(envelope.dump(), signer_.public_key.get(), "no signature is valid");
}

TEST_F(DsseEnvelopeTest, RejectsFlippedPayloadByteAnywhere) {
  const std::string payload = Base64Decode(envelope_["payload"].get<std::string>()).value();
  for (size_t at = 0; at < payload.size(); at += 97) {
    nlohmann::json envelope = envelope_;
    envelope["payload"] = Base64Encode(FlipByte(payload, at));
    EXPECT_THROW(VerifyEnvelope(envelope.dump(), signer_.public_key.get()), AttestError)
        << "byte " << at;
  }
}

TEST_F(DsseEnvelopeTest, RejectsFlippedSignatureByte) {
  const std::string sig =
      Base64Decode(envelope_["signatures"][0]["sig"].get<std::string>()).value();
  for (size_t at : {size_t{0}, size_t{31}, size_t{63}}) {
    nlohmann::json envelope = envelope_;
    envelope["signatures"][0]["sig"] = Base64Encode(FlipByte(sig, at));
    ExpectRejected(envelope.dump(), signer_.public_key.get(), "no signature is valid");
  }
}

TEST_F(DsseEnvelopeTest, RejectsWrongKey) {
  ExpectRejected(envelope_text_, other_.public_key.get(), "no signature is valid");
}

TEST_F(DsseEnvelopeTest, RejectsWrongPayloadType) {
  nlohmann::json envelope = envelope_;
  envelope["payloadType"] = "application/json";
  ExpectRejected(envelope.dump(), signer_.public_key.get(), "payloadType is \"application/json\"");
}

TEST_F(DsseEnvelopeTest, RejectsWrongPayloadTypeEvenWhenSignedForIt) {
  // A valid signature over a different payload type must not be reinterpreted as in-toto.
  const std::string payload = statement_.dump();
  const std::string sig = SignEd25519(signer_.private_key.get(), Pae("application/json", payload));
  const nlohmann::json envelope = {{"payloadType", "application/json"},
                                   {"payload", Base64Encode(payload)},
                                   {"signatures", {{{"keyid", ""}, {"sig", Base64Encode(sig)}}}}};
  ExpectRejected(envelope.dump(), signer_.public_key.get(), "payloadType");
}

TEST_F(DsseEnvelopeTest, IgnoresKeyidNamingAnotherKeyWhenSignatureIsValid) {
  nlohmann::json envelope = envelope_;
  envelope["signatures"][0]["keyid"] = KeyId(other_.public_key.get());
  EXPECT_EQ(VerifyEnvelope(envelope.dump(), signer_.public_key.get()), statement_);
  envelope["signatures"][0].erase("keyid");
  EXPECT_EQ(VerifyEnvelope(envelope.dump(), signer_.public_key.get()), statement_);
}

TEST_F(DsseEnvelopeTest, RejectsMatchingKeyidWithInvalidSignature) {
  // The other key signs, but the envelope claims the signer's keyid: the keyid buys nothing.
  const std::string payload = Base64Decode(envelope_["payload"].get<std::string>()).value();
  const std::string forged =
      SignEd25519(other_.private_key.get(), Pae(kInTotoPayloadType, payload));
  nlohmann::json envelope = envelope_;
  envelope["signatures"][0]["keyid"] = KeyId(signer_.public_key.get());
  envelope["signatures"][0]["sig"] = Base64Encode(forged);
  ExpectRejected(envelope.dump(), signer_.public_key.get(), "no signature is valid");
}

TEST_F(DsseEnvelopeTest, AcceptsWhenAnySignatureIsValid) {
  const std::string payload = Base64Decode(envelope_["payload"].get<std::string>()).value();
  const std::string other_sig =
      SignEd25519(other_.private_key.get(), Pae(kInTotoPayloadType, payload));
  nlohmann::json envelope = envelope_;
  const nlohmann::json other_entry = nlohmann::json::object(
      {{"keyid", KeyId(other_.public_key.get())}, {"sig", Base64Encode(other_sig)}});
  envelope["signatures"].insert(envelope["signatures"].begin(), other_entry);
  EXPECT_EQ(VerifyEnvelope(envelope.dump(), signer_.public_key.get()), statement_);
  EXPECT_EQ(VerifyEnvelope(envelope.dump(), other_.public_key.get()), statement_);
}

TEST_F(DsseEnvelopeTest, RejectsMalformedJson) {
  ExpectRejected(envelope_text_.substr(0, envelope_text_.size() / 2), signer_.public_key.get(),
                 "not valid JSON");
  ExpectRejected("", signer_.public_key.get(), "not valid JSON");
  ExpectRejected("[1, 2]", signer_.public_key.get(), "not a DSSE envelope");
}

TEST_F(DsseEnvelopeTest, RejectsMissingFields) {
  for (const char* key : {"payloadType", "payload", "signatures"}) {
    nlohmann::json envelope = envelope_;
    envelope.erase(key);
    ExpectRejected(envelope.dump(), signer_.public_key.get(), key);
  }
  nlohmann::json envelope = envelope_;
  envelope["signatures"] = nlohmann::json::array();
  ExpectRejected(envelope.dump(), signer_.public_key.get(), "signatures is missing or empty");
}

TEST_F(DsseEnvelopeTest, RejectsBadBase64) {
  nlohmann::json envelope = envelope_;
  envelope["payload"] = "***";
  ExpectRejected(envelope.dump(), signer_.public_key.get(), "payload is not valid base64");
  envelope = envelope_;
  envelope["signatures"][0]["sig"] = "not base64!";
  ExpectRejected(envelope.dump(), signer_.public_key.get(),
                 "signatures[0].sig is not valid base64");
}

TEST_F(DsseEnvelopeTest, RejectsSignedPayloadThatIsNotAStatement) {
  const std::string payload = R"({"_type":"https://in-toto.io/Statement/v0.1","subject":[]})";
  const std::string sig = SignEd25519(signer_.private_key.get(), Pae(kInTotoPayloadType, payload));
  const nlohmann::json envelope = {{"payloadType", kInTotoPayloadType},
                                   {"payload", Base64Encode(payload)},
                                   {"signatures", {{{"sig", Base64Encode(sig)}}}}};
  ExpectRejected(envelope.dump(), signer_.public_key.get(), "not an in-toto v1 Statement");
}

TEST_F(DsseEnvelopeTest, RefusesNonEd25519Keys) {
  EvpPkeyPtr ec_key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  ASSERT_TRUE(ec_key);
  EXPECT_THROW(SignStatement(statement_, ec_key.get()), AttestError);
  ExpectRejected(envelope_text_, ec_key.get(), "expected Ed25519");
  ExpectRejected(envelope_text_, nullptr, "no public key given");
}

TEST_F(DsseEnvelopeTest, SignRefusesNonStatement) {
  EXPECT_THROW(SignStatement({{"hello", "world"}}, signer_.private_key.get()), AttestError);
}

}  // namespace
}  // namespace dv::attest

namespace dv::attest {
namespace {

// An envelope with a member twice means one thing to a reader that keeps the first and another
// to one that keeps the last (nlohmann::json keeps the last): a tampered payload placed first,
// beside the genuinely signed one, used to verify. Refused, whichever comes first.
class DsseAmbiguityTest : public DsseEnvelopeTest {
 protected:
  // The envelope's text with `member` (a `"key": value` pair) inserted right after the '{'.
  std::string WithLeadingMember(const std::string& member) const {
    return "{" + member + "," + envelope_text_.substr(envelope_text_.find('{') + 1);
  }
};

TEST_F(DsseAmbiguityTest, TwoPayloadMembersAreRejected) {
  nlohmann::json tampered = statement_;
  tampered["predicate"]["scenario"] = "tampered";
  const std::string forged = Base64Encode(tampered.dump());
  ExpectRejected(WithLeadingMember("\"payload\": \"" + forged + "\""), signer_.public_key.get(),
                 "ambiguous envelope: line 2: duplicate key \"payload\" (first at line 1)");
  // The genuine payload twice is still ambiguous.
  ExpectRejected(WithLeadingMember("\"payload\": " + envelope_["payload"].dump()),
                 signer_.public_key.get(), "duplicate key \"payload\"");
}

TEST_F(DsseAmbiguityTest, OtherDuplicateMembersAreRejected) {
  ExpectRejected(WithLeadingMember("\"payloadType\": \"application/vnd.in-toto+json\""),
                 signer_.public_key.get(), "duplicate key \"payloadType\"");
  ExpectRejected(WithLeadingMember("\"signatures\": []"), signer_.public_key.get(),
                 "duplicate key \"signatures\"");
}

// The signed payload itself (the in-toto Statement) with a key twice: validly signed, still
// refused.
TEST_F(DsseAmbiguityTest, StatementWithDuplicateKeysIsRejected) {
  std::string statement_text = statement_.dump();
  statement_text.insert(1, "\"_type\": \"https://in-toto.io/Statement/v0.1\",");
  nlohmann::json envelope = envelope_;
  envelope["payload"] = Base64Encode(statement_text);
  envelope["signatures"][0]["sig"] =
      Base64Encode(SignEd25519(signer_.private_key.get(), Pae(kInTotoPayloadType, statement_text)));
  ExpectRejected(envelope.dump(), signer_.public_key.get(),
                 "signed payload is ambiguous: line 1: duplicate key \"_type\"");
}

}  // namespace
}  // namespace dv::attest
