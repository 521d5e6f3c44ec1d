// detverify attest keygen|sign|verify: Ed25519 keys, and in-toto v1 Statements of a scenario's
// results in DSSE envelopes (attest/README.md). A statement covers one scenario: its subjects are
// the model artifact and the DB's results digest (attestations left out, so storing the envelope
// in the DB it describes does not change what it signs); its predicate carries the scenario, the
// machines' fingerprints, every configuration's final hashes and the gate's verdict.
#include <cstdio>
#include <ctime>
#include <span>

#include "attest/attest_error.h"
#include "attest/dsse_envelope.h"
#include "attest/ed25519_keys.h"
#include "attest/intoto_statement.h"
#include "base/file_io.h"
#include "build_info.h"
#include "cli/command.h"
#include "db/run_store.h"
#include "engine/safetensors.h"
#include "reports/fleet_results.h"
#include "verdict/verdict.h"

namespace dv::cli {
namespace {

struct KeygenOptions {
  std::string out;
};

struct SignOptions {
  std::string db;
  std::string key;
  std::string out;
  std::string scenario;
  bool no_store = false;
};

struct VerifyOptions {
  std::string file;
  std::string pub;
  std::string db;
};

// A failed verification: the message is printed as "detverify: <message>" and the exit code is 1.
class VerificationFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The one scenario a statement is about: `selector` (a name or an id prefix), or the DB's only
// scenario. Throws UsageError when that is not exactly one.
reports::FleetResults LoadOneScenario(const db::RunStore& store, const std::string& selector) {
  reports::FleetResults fleet = reports::LoadFleetResults(store, selector);
  if (fleet.scenarios.empty())
    throw UsageError(store.Path() + ": holds no scenarios, nothing to sign");
  if (fleet.scenarios.size() > 1) {
    std::string list;
    for (const auto& s : fleet.scenarios) {
      list += (list.empty() ? "" : ", ") + s.scenario.name + " (id " +
              reports::ShortHash(s.scenario.id, 8) + ")";
    }
    throw UsageError(store.Path() + ": " + std::to_string(fleet.scenarios.size()) +
                     " scenarios match (" + list +
                     "): a statement covers one; choose it with --scenario NAME or an id prefix");
  }
  return fleet;
}

// The Statement that the DB supports for its one selected scenario. `tool_version` names the
// detverify that builds (or built) the statement.
nlohmann::json StatementFor(const reports::FleetResults& fleet, const std::string& tool_version) {
  const reports::ScenarioResults& s = fleet.scenarios.front();
  if (s.artifact_ids.size() != 1) {
    throw UsageError(fleet.db_path + ": scenario " + s.label + " has runs of " +
                     std::to_string(s.artifact_ids.size()) + " artifacts; a statement names one");
  }
  // The scenario's one verdict (verdict/verdict.h), the same the gate and the reports show.
  const verdict::ScenarioVerdict& v = s.verdict;
  attest::AttestationInput input;
  input.artifact = {"model.safetensors", s.artifact_ids.front()};
  input.results = {"results", fleet.results_digest};
  input.scenario_name = s.scenario.name;
  input.scenario_id = s.scenario.id;
  for (const db::MachineRecord& m : fleet.machines) {
    nlohmann::json fp = nlohmann::json::parse(m.fingerprint_json, nullptr, false);
    if (fp.is_discarded()) fp = m.fingerprint_json;
    input.machines.push_back({m.id, fp});
  }
  for (const db::RunRecord& r : s.runs) {
    input.configurations.push_back(
        {r.configuration, std::string(KindName(r.engine)), std::string(KindName(r.backend)),
         r.machine.id, std::string(KindName(r.status)), r.final_logits_chain.value_or(""),
         r.final_token_chain.value_or(""), r.n_steps});
  }
  input.verdict = {v.int8_unique_logits, v.int8_unique_tokens, v.passed};
  input.tool_version = tool_version;
  input.spec_version =
      fleet.spec_versions.size() == 1 ? fleet.spec_versions.front() : dv::build::kSpecVersion;
  return attest::BuildStatement(input);
}

void RunKeygen(const KeygenOptions& o, CommandContext& ctx) {
  const attest::GeneratedKey key = attest::GenerateEd25519Key(o.out);
  std::printf("private key %s (PKCS#8 PEM, mode 0600)\npublic key  %s (SPKI PEM)\nkeyid       %s\n",
              key.private_path.c_str(), key.public_path.c_str(), key.keyid.c_str());
  ctx.exit_code = kExitOk;
}

void RunSign(const SignOptions& o, CommandContext& ctx) {
  const attest::EvpPkeyPtr key = attest::LoadPrivateKey(o.key);
  // A missing or foreign DB is refused read-only first: Open would create or migrate it.
  { const db::RunStore probe = db::RunStore::OpenReadOnly(o.db); }
  db::RunStore store = o.no_store ? db::RunStore::OpenReadOnly(o.db) : db::RunStore::Open(o.db);
  const reports::FleetResults fleet = LoadOneScenario(store, o.scenario);
  const nlohmann::json statement = StatementFor(fleet, dv::build::kToolVersion);
  const std::string envelope = attest::SignStatement(statement, key.get());
  WriteFileAtomic(o.out,
                  std::span(reinterpret_cast<const uint8_t*>(envelope.data()), envelope.size()));
  const reports::ScenarioResults& s = fleet.scenarios.front();
  const nlohmann::json& verdict = statement["predicate"]["verdict"];
  std::printf("signed scenario %s: %zu configurations on %zu machine%s, int8 %s, keyid %s\n",
              s.label.c_str(), s.runs.size(), fleet.machines.size(),
              fleet.machines.size() == 1 ? "" : "s",
              verdict.value("agree", false) ? "agree" : "do not agree",
              attest::KeyId(key.get()).substr(0, 16).c_str());
  std::printf("  statement written to %s\n", o.out.c_str());
  if (!o.no_store) {
    // Ed25519 signatures are deterministic: signing unchanged results again gives the same
    // envelope, which is stored once.
    bool stored = false;
    for (const db::AttestationRecord& a : store.Attestations())
      stored |= a.envelope_json == envelope;
    if (stored) {
      std::printf("  %s already holds this envelope\n", o.db.c_str());
    } else {
      const std::string id =
          store.AddAttestation({"", envelope, attest::KeyId(key.get()), UtcNow()});
      std::printf("  stored in %s as attestation %s\n", o.db.c_str(), id.substr(0, 16).c_str());
    }
  }
  ctx.exit_code = kExitOk;
}

// An envelope is a few kilobytes per machine and configuration; 64 MiB is far beyond any fleet.
std::string ReadEnvelopeFile(const std::string& path) {
  std::string text, why;
  if (!ReadFileBounded(path, 64 * kMiB, text, why)) throw UsageError(path + ": " + why);
  return text;
}

void CheckAgainstDb(const VerifyOptions& o, const nlohmann::json& statement) {
  const nlohmann::json* predicate =
      statement.contains("predicate") ? &statement["predicate"] : nullptr;
  std::string scenario_id, tool_version;
  if (predicate != nullptr && predicate->is_object()) {
    const auto scenario = predicate->find("scenario");
    if (scenario != predicate->end() && scenario->is_object() && scenario->contains("id") &&
        (*scenario)["id"].is_string()) {
      scenario_id = (*scenario)["id"].get<std::string>();
    }
    if (predicate->contains("tool_version") && (*predicate)["tool_version"].is_string()) {
      tool_version = (*predicate)["tool_version"].get<std::string>();
    }
  }
  if (scenario_id.empty()) {
    throw VerificationFailure(o.file +
                              ": the statement names no scenario id (predicate.scenario.id), so " +
                              o.db + " cannot confirm it");
  }
  const db::RunStore store = db::RunStore::OpenReadOnly(o.db);
  bool held = false;
  for (const db::ScenarioRecord& s : store.Scenarios()) held |= s.id == scenario_id;
  if (!held) {
    throw VerificationFailure(o.file + ": the statement is about scenario id " +
                              scenario_id.substr(0, 16) + ", which " + o.db + " does not hold");
  }
  const reports::FleetResults fleet = reports::LoadFleetResults(store, scenario_id);
  nlohmann::json expected;
  try {
    // The signing tool's version is not in the DB; everything else is rebuilt from it.
    expected = StatementFor(fleet, tool_version);
  } catch (const UsageError& e) {
    throw VerificationFailure(o.file + ": " + e.what());
  }
  std::string why;
  if (!attest::StatementMatches(statement, expected, &why)) {
    throw VerificationFailure(o.file + ": the statement does not match " + o.db + ": " + why);
  }
}

void RunVerify(const VerifyOptions& o, CommandContext& ctx) {
  const std::string text = ReadEnvelopeFile(o.file);
  const attest::EvpPkeyPtr pub = attest::LoadPublicKey(o.pub);
  try {
    nlohmann::json statement;
    try {
      statement = attest::VerifyEnvelope(text, pub.get(), o.file);
    } catch (const attest::AttestError& e) {
      throw VerificationFailure(e.what());
    }
    const nlohmann::json& predicate =
        statement.contains("predicate") ? statement["predicate"] : nlohmann::json();
    std::string scenario = "?";
    if (predicate.is_object() && predicate.contains("scenario") &&
        predicate["scenario"].is_object()) {
      scenario = predicate["scenario"].value("name", "?");
    }
    std::printf("%s: signature verified with %s (keyid %s)\n", o.file.c_str(), o.pub.c_str(),
                attest::KeyId(pub.get()).substr(0, 16).c_str());
    std::printf("  predicate %s, scenario %s\n", statement.value("predicateType", "?").c_str(),
                scenario.c_str());
    for (const nlohmann::json& subject : statement["subject"]) {
      std::printf("  subject %s sha256 %s\n", subject.value("name", "?").c_str(),
                  subject["digest"].value("sha256", "?").c_str());
    }
    if (!o.db.empty()) {
      CheckAgainstDb(o, statement);
      std::printf("  matches %s\n", o.db.c_str());
    }
    ctx.exit_code = kExitOk;
  } catch (const VerificationFailure& e) {
    std::fprintf(stderr, "detverify: %s\n", e.what());
    ctx.exit_code = kExitVerdict;
  }
}

}  // namespace

void SetupAttestCommand(CLI::App& app, CommandContext& ctx) {
  CLI::App* cmd = app.add_subcommand("attest", "sign and verify in-toto statements of a result DB");
  cmd->require_subcommand(1);

  auto keygen = std::make_shared<KeygenOptions>();
  CLI::App* k = cmd->add_subcommand(
      "keygen", "generate an Ed25519 key pair (KEY mode 0600, KEY.pub beside it)");
  k->add_option("--out", keygen->out,
                "private key file; the public key goes to the same name with .pub")
      ->required();
  k->callback([keygen, &ctx]() { RunKeygen(*keygen, ctx); });

  auto sign = std::make_shared<SignOptions>();
  CLI::App* s = cmd->add_subcommand("sign", "sign a statement of one scenario's results");
  s->add_option("db", sign->db, "result DB")->required();
  s->add_option("--key", sign->key, "Ed25519 private key (PEM)")->required();
  s->add_option("-o,--out", sign->out, "the DSSE envelope to write (e.g. results.intoto.json)")
      ->required();
  s->add_option("--scenario", sign->scenario,
                "the scenario (name or id prefix); needed when the DB has several");
  s->add_flag("--no-store", sign->no_store,
              "do not store the envelope in the DB (which is then only read)");
  s->callback([sign, &ctx]() { RunSign(*sign, ctx); });

  auto verify = std::make_shared<VerifyOptions>();
  CLI::App* v =
      cmd->add_subcommand("verify", "verify an envelope's signature and, given --db, its content");
  v->add_option("file", verify->file, "the DSSE envelope")->required();
  v->add_option("--pub", verify->pub, "Ed25519 public key (PEM)")->required();
  v->add_option("--db", verify->db, "check that the statement matches this result DB");
  v->callback([verify, &ctx]() { RunVerify(*verify, ctx); });
}

}  // namespace dv::cli
