// The DSSE envelope verifier and in-toto Statement checks (attest/) on arbitrary text. The key is
// fixed (tests/fuzz/keys/fuzz.pub), so that the seed envelopes signed with it
// (corpus/fuzz_dsse) reach the payload and Statement checks; mutations then explore both sides of
// the signature check.
#include <nlohmann/json.hpp>
#include <string>

#include "attest/dsse_envelope.h"
#include "attest/ed25519_keys.h"
#include "attest/intoto_statement.h"
#include "base/expected_error.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

dv::attest::EvpPkeyPtr g_pub;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_pub = dv::attest::LoadPublicKey(DV_FUZZ_SOURCE_DIR "/tests/fuzz/keys/fuzz.pub");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(dv::fuzz::AsText(data, size));
  try {
    const nlohmann::json statement = dv::attest::VerifyEnvelope(text, g_pub.get(), "fuzz.dsse");
    std::string why;
    (void)dv::attest::IsInTotoStatement(statement, &why);
    (void)dv::attest::StatementMatches(statement, statement, &why);
  } catch (const dv::ExpectedError&) {
  }
  // The Statement checks on their own, on any JSON value (they must not throw).
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded()) {
    std::string why;
    (void)dv::attest::IsInTotoStatement(j, &why);
  }
  return 0;
}
