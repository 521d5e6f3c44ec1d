// DSSE envelopes (Dead Simple Signing Envelope, v1) carrying an in-toto Statement, signed with
// Ed25519. Signatures cover PAE(payloadType, payload bytes), never the envelope's JSON text.
#pragma once

#include <openssl/evp.h>

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dv::attest {

inline constexpr const char* kInTotoPayloadType = "application/vnd.in-toto+json";

// The DSSE pre-authentication encoding:
// "DSSEv1" SP LEN(type) SP type SP LEN(payload) SP payload, lengths as ASCII decimal byte counts.
std::string Pae(std::string_view payload_type, std::string_view payload);

// An envelope JSON text (indented, newline-terminated) holding `statement` as its payload, signed
// by `key` with keyid KeyId(key). Throws AttestError when `statement` is not an in-toto v1
// Statement (IsInTotoStatement) or signing fails.
std::string SignStatement(const nlohmann::json& statement, EVP_PKEY* key);

// The Statement inside `envelope_text` once verified: the JSON is a DSSE envelope, payloadType is
// exactly kInTotoPayloadType, at least one signature is valid under `pub` over PAE of the decoded
// payload (keyids are ignored: every signature is tried), and the payload is an in-toto v1
// Statement. Otherwise throws AttestError "<source>: <problem>"; `source` names the file.
nlohmann::json VerifyEnvelope(const std::string& envelope_text, EVP_PKEY* pub,
                              std::string_view source = "envelope");

}  // namespace dv::attest
