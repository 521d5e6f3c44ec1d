// A machine's fingerprint (harness/fingerprint.h) as the short labelled facts a report shows
// above its full JSON.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace dv::reports {

// (label, value) pairs: cpu, arch, isa (the enabled features), cores and memory, os and kernel,
// compiler and flags, libraries, detverify version, gpu. Missing keys read "unknown"; a
// fingerprint that is not a JSON object gives one pair ("fingerprint", the raw text).
std::vector<std::pair<std::string, std::string>> MachineFacts(const std::string& fingerprint_json);

// The fingerprint re-indented for display (2 spaces), or the raw text when it is not JSON.
std::string PrettyFingerprint(const std::string& fingerprint_json);

}  // namespace dv::reports
