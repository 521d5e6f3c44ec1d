#include "attest/dsse_envelope.h"

#include <optional>
#include <vector>

#include "attest/attest_error.h"
#include "attest/base64.h"
#include "attest/ed25519_keys.h"
#include "attest/intoto_statement.h"
#include "base/strict_json.h"

namespace dv::attest {
namespace {

// Untrusted text quoted in a message is cut so one hostile field cannot flood the terminal.
constexpr size_t kMaxQuotedChars = 80;

std::string Quoted(const std::string& text) {
  if (text.size() <= kMaxQuotedChars) return "\"" + text + "\"";
  return "\"" + text.substr(0, kMaxQuotedChars) + "...\"";
}

[[noreturn]] void Reject(std::string_view source, const std::string& problem) {
  throw AttestError(std::string(source) + ": " + problem);
}

const nlohmann::json& RequireString(const nlohmann::json& object, const char* key,
                                    std::string_view source, const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end()) Reject(source, where + key + " is missing");
  if (!it->is_string()) Reject(source, where + key + " is not a string");
  return *it;
}

}  // namespace

std::string Pae(std::string_view payload_type, std::string_view payload) {
  std::string out = "DSSEv1 ";
  out += std::to_string(payload_type.size());
  out += ' ';
  out += payload_type;
  out += ' ';
  out += std::to_string(payload.size());
  out += ' ';
  out += payload;
  return out;
}

std::string SignStatement(const nlohmann::json& statement, EVP_PKEY* key) {
  std::string why;
  if (!IsInTotoStatement(statement, &why)) {
    throw AttestError("statement: not an in-toto v1 Statement: " + why);
  }
  // Compact, sorted-key JSON: the payload bytes are a pure function of the statement, so signing
  // the same results twice yields the same payload.
  std::string payload;
  try {
    payload = statement.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
  } catch (const nlohmann::json::type_error&) {
    throw AttestError("statement: contains a string that is not valid UTF-8");
  }
  const std::string signature = SignEd25519(key, Pae(kInTotoPayloadType, payload));
  const nlohmann::json envelope = {
      {"payloadType", kInTotoPayloadType},
      {"payload", Base64Encode(payload)},
      {"signatures",
       nlohmann::json::array({{{"keyid", KeyId(key)}, {"sig", Base64Encode(signature)}}})},
  };
  return envelope.dump(2) + "\n";
}

nlohmann::json VerifyEnvelope(const std::string& envelope_text, EVP_PKEY* pub,
                              std::string_view source) {
  if (pub == nullptr) Reject(source, "cannot verify: no public key given");
  if (EVP_PKEY_get_id(pub) != EVP_PKEY_ED25519) {
    const char* name = EVP_PKEY_get0_type_name(pub);
    Reject(source, std::string("cannot verify: public key is ") +
                       (name != nullptr ? name : "unknown") + ", expected Ed25519");
  }
  // An envelope with a member twice (two payloads, two signature lists) means different things
  // to different readers: refused before anything in it is used.
  nlohmann::json envelope;
  JsonProblem problem;
  if (!ParseJsonStrict(envelope_text, envelope, problem)) {
    Reject(
        source,
        problem.kind == JsonProblem::Kind::kMalformed
            ? "not valid JSON (line " + std::to_string(problem.line) + ": " + problem.message + ")"
            : "ambiguous envelope: line " + std::to_string(problem.line) + ": " + problem.message);
  }
  if (!envelope.is_object()) Reject(source, "not a DSSE envelope (expected a JSON object)");

  const std::string payload_type =
      RequireString(envelope, "payloadType", source, "").get<std::string>();
  if (payload_type != kInTotoPayloadType) {
    Reject(source,
           "payloadType is " + Quoted(payload_type) + ", expected \"" + kInTotoPayloadType + "\"");
  }
  const std::optional<std::string> payload =
      Base64Decode(RequireString(envelope, "payload", source, "").get<std::string>());
  if (!payload) Reject(source, "payload is not valid base64");

  const auto signatures = envelope.find("signatures");
  if (signatures == envelope.end() || !signatures->is_array() || signatures->empty()) {
    Reject(source, "signatures is missing or empty");
  }
  // Decode every signature before checking any, so a malformed envelope is reported as such
  // rather than silently passing on the strength of one good entry.
  std::vector<std::string> decoded;
  for (size_t i = 0; i < signatures->size(); ++i) {
    const nlohmann::json& entry = (*signatures)[i];
    const std::string where = "signatures[" + std::to_string(i) + "].";
    if (!entry.is_object())
      Reject(source, "signatures[" + std::to_string(i) + "] is not an object");
    if (entry.contains("keyid") && !entry["keyid"].is_string()) {
      Reject(source, where + "keyid is not a string");
    }
    std::optional<std::string> sig =
        Base64Decode(RequireString(entry, "sig", source, where).get<std::string>());
    if (!sig) Reject(source, where + "sig is not valid base64");
    decoded.push_back(std::move(*sig));
  }

  // keyid is a hint chosen by whoever wrote the envelope; trusting it would let an attacker steer
  // verification. Try the caller's key against every signature instead.
  const std::string message = Pae(payload_type, *payload);
  bool verified = false;
  for (const std::string& sig : decoded) {
    if (VerifyEd25519(pub, message, sig)) {
      verified = true;
      break;
    }
  }
  if (!verified) {
    Reject(source, "no signature is valid under the given public key (keyid " + KeyId(pub) + ", " +
                       std::to_string(decoded.size()) + " signature(s) checked)");
  }

  nlohmann::json statement;
  if (!ParseJsonStrict(*payload, statement, problem)) {
    Reject(source, problem.kind == JsonProblem::Kind::kMalformed
                       ? "signed payload is not valid JSON (line " + std::to_string(problem.line) +
                             ": " + problem.message + ")"
                       : "signed payload is ambiguous: line " + std::to_string(problem.line) +
                             ": " + problem.message);
  }
  std::string why;
  if (!IsInTotoStatement(statement, &why)) {
    Reject(source, "signed payload is not an in-toto v1 Statement: " + why);
  }
  return statement;
}

}  // namespace dv::attest
