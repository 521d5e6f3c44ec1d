// `detverify attest keygen|sign|verify` through the binary: the round trip on a DB that
// `detverify run` produced, the statement's content, statements stored in and merged with DBs,
// and every rejection: a flipped byte in payload or signature, a wrong key, a wrong payload type
// and a statement that does not match the DB exit 1; unreadable files exit 2.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "attest/base64.h"
#include "tests/reports/fleet_fixtures.h"

namespace dv {
namespace {

using fleet_testing::Detverify;
using fleet_testing::LineCount;
using fleet_testing::ReadFile;
using fleet_testing::ScratchDir;
using fleet_testing::WriteFile;

class AttestCli : public ::testing::Test {
 protected:
  std::string Keygen(const std::string& name) {
    const std::string key = dir_.File(name + ".key");
    const auto r = Detverify({"attest", "keygen", "--out", key});
    EXPECT_EQ(r.code, 0) << r.err;
    return key;
  }
  std::string Pub(const std::string& name) { return dir_.File(name + ".pub"); }
  std::string RunQuick(const std::string& name) {
    const std::string db = dir_.File(name);
    const auto r = Detverify({"run", fleet_testing::SourceDir() + "/scenarios/quick.yaml", "--db",
                              db, "--config", "int8-ref-b1", "--config", "int8-ref-split",
                              "--config", "int8-cuda-b1"});
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    return db;
  }
  std::string Sign(const std::string& db, const std::string& key, const std::string& out,
                   const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"attest", "sign", db, "--key", key, "-o", out};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = Detverify(args);
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    return out;
  }
  fleet_testing::CommandResult Verify(const std::string& file, const std::string& pub,
                                      const std::string& db = "") {
    std::vector<std::string> args = {"attest", "verify", file, "--pub", pub};
    if (!db.empty()) args.insert(args.end(), {"--db", db});
    return Detverify(args);
  }
  // Verification must fail with exit 1 and one line naming the file and containing `needle`.
  void ExpectRejected(const std::string& file, const std::string& pub, const std::string& db,
                      const std::string& needle) {
    const auto r = Verify(file, pub, db);
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    EXPECT_EQ(LineCount(r.err), 1u) << r.err;
    EXPECT_EQ(r.err.rfind("detverify: " + file + ": ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }
  static nlohmann::json Payload(const nlohmann::json& envelope) {
    return nlohmann::json::parse(*attest::Base64Decode(envelope["payload"].get<std::string>()));
  }
  std::string WriteEnvelope(const std::string& name, const nlohmann::json& envelope) {
    WriteFile(dir_.File(name), envelope.dump(2));
    return dir_.File(name);
  }

  ScratchDir dir_{"attest-cli"};
};

TEST_F(AttestCli, KeygenWritesAPrivateKeyOnlyItsOwnerReadsAndThePublicKeyBeside) {
  const auto r = Detverify({"attest", "keygen", "--out", dir_.File("box.key")});
  ASSERT_EQ(r.code, 0) << r.err;
  struct stat st {};
  ASSERT_EQ(::stat(dir_.File("box.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(ReadFile(dir_.File("box.key")).rfind("-----BEGIN PRIVATE KEY-----", 0), 0u);
  EXPECT_EQ(ReadFile(dir_.File("box.pub")).rfind("-----BEGIN PUBLIC KEY-----", 0), 0u);
  EXPECT_NE(r.out.find("keyid"), std::string::npos);
  const std::string before = ReadFile(dir_.File("box.key"));
  const auto again = Detverify({"attest", "keygen", "--out", dir_.File("box.key")});
  EXPECT_EQ(again.code, 2);
  EXPECT_EQ(LineCount(again.err), 1u) << again.err;
  EXPECT_EQ(ReadFile(dir_.File("box.key")), before) << "an existing key is never overwritten";
}

TEST_F(AttestCli, SignedStatementDescribesTheDbAndVerifies) {
  const std::string db = RunQuick("quick.db");
  const std::string key = Keygen("box");
  const std::string results = db::ContentDigest(db, db::DigestScope::kResultsOnly);
  const std::string file = Sign(db, key, dir_.File("quick.intoto.json"));

  const nlohmann::json envelope = nlohmann::json::parse(ReadFile(file));
  EXPECT_EQ(envelope["payloadType"], "application/vnd.in-toto+json");
  const nlohmann::json statement = Payload(envelope);
  EXPECT_EQ(statement["_type"], "https://in-toto.io/Statement/v1");
  EXPECT_EQ(statement["predicateType"], "https://detverify.dev/attestation/run-results/v1");
  const db::RunStore store = db::RunStore::OpenReadOnly(db);
  const auto runs = store.Runs(store.Scenarios().at(0).id);
  std::map<std::string, std::string> subjects;
  for (const auto& s : statement["subject"]) subjects[s["name"]] = s["digest"]["sha256"];
  EXPECT_EQ(subjects["model.safetensors"], runs.at(0).artifact.id);
  EXPECT_EQ(subjects["results"], results);
  const nlohmann::json& p = statement["predicate"];
  EXPECT_EQ(p["scenario"]["name"], "quick");
  EXPECT_EQ(p["machines"].size(), 1u);
  EXPECT_EQ(p["machines"][0]["fingerprint"]["arch"],
            nlohmann::json::parse(runs[0].machine.fingerprint_json)["arch"]);
  ASSERT_EQ(p["configurations"].size(), 3u);
  for (const auto& c : p["configurations"]) {
    for (const auto& run : runs) {
      if (c["configuration"] == run.configuration) {
        EXPECT_EQ(c["final_logits_chain"], run.final_logits_chain.value_or(""));
        EXPECT_EQ(c["status"], KindName(run.status));
      }
    }
  }
  EXPECT_EQ(p["verdict"]["agree"], true);
  EXPECT_EQ(p["verdict"]["int8_unique_logits_hashes"], 1);

  // Stored in the DB it describes, without changing the results digest; signing again stores
  // nothing new (Ed25519 gives the same envelope).
  EXPECT_EQ(store.Attestations().size(), 1u);
  EXPECT_EQ(store.Attestations()[0].envelope_json, ReadFile(file));
  EXPECT_EQ(db::ContentDigest(db, db::DigestScope::kResultsOnly), results);
  Sign(db, key, dir_.File("again.intoto.json"));
  EXPECT_EQ(ReadFile(dir_.File("again.intoto.json")), ReadFile(file));
  EXPECT_EQ(db::RunStore::OpenReadOnly(db).Attestations().size(), 1u);

  const auto plain = Verify(file, Pub("box"));
  EXPECT_EQ(plain.code, 0) << plain.err;
  EXPECT_NE(plain.out.find("signature verified"), std::string::npos);
  const auto with_db = Verify(file, Pub("box"), db);
  EXPECT_EQ(with_db.code, 0) << with_db.err;
  EXPECT_NE(with_db.out.find("matches " + db), std::string::npos) << with_db.out;
}

TEST_F(AttestCli, NoStoreLeavesTheDbAsItWas) {
  const std::string db = RunQuick("quick.db");
  const std::string key = Keygen("box");
  const std::string before = db::ContentDigest(db);
  Sign(db, key, dir_.File("s.json"), {"--no-store"});
  EXPECT_EQ(db::ContentDigest(db), before);
  EXPECT_EQ(Verify(dir_.File("s.json"), Pub("box"), db).code, 0);
}

TEST_F(AttestCli, TamperedEnvelopesAreRejected) {
  const std::string db = RunQuick("quick.db");
  const std::string key = Keygen("box");
  Keygen("other");
  const std::string file = Sign(db, key, dir_.File("s.json"));
  const nlohmann::json envelope = nlohmann::json::parse(ReadFile(file));

  // One byte of the statement changed, re-encoded as valid base64.
  std::string payload = *attest::Base64Decode(envelope["payload"].get<std::string>());
  const size_t at = payload.find("int8-ref-split");
  ASSERT_NE(at, std::string::npos);
  payload[at + 5] = 'x';
  nlohmann::json bad_payload = envelope;
  bad_payload["payload"] = attest::Base64Encode(payload);
  ExpectRejected(WriteEnvelope("payload.json", bad_payload), Pub("box"), "", "signature");

  // One bit of the signature flipped.
  std::string sig = *attest::Base64Decode(envelope["signatures"][0]["sig"].get<std::string>());
  sig[10] = static_cast<char>(sig[10] ^ 0x01);
  nlohmann::json bad_sig = envelope;
  bad_sig["signatures"][0]["sig"] = attest::Base64Encode(sig);
  ExpectRejected(WriteEnvelope("sig.json", bad_sig), Pub("box"), "", "signature");

  // Another key.
  ExpectRejected(file, Pub("other"), "", "signature");

  // Another payload type.
  nlohmann::json bad_type = envelope;
  bad_type["payloadType"] = "application/json";
  ExpectRejected(WriteEnvelope("type.json", bad_type), Pub("box"), "", "payloadType");

  // Not an envelope at all.
  WriteFile(dir_.File("text.json"), "hello\n");
  ExpectRejected(dir_.File("text.json"), Pub("box"), "", "");
}

TEST_F(AttestCli, UrlSafeBase64AndAnyKeyidAreAccepted) {
  const std::string db = RunQuick("quick.db");
  const std::string file = Sign(db, Keygen("box"), dir_.File("s.json"));
  nlohmann::json envelope = nlohmann::json::parse(ReadFile(file));
  auto url_safe = [](std::string text) {
    std::replace(text.begin(), text.end(), '+', '-');
    std::replace(text.begin(), text.end(), '/', '_');
    text.erase(std::remove(text.begin(), text.end(), '='), text.end());
    return text;
  };
  envelope["payload"] = url_safe(envelope["payload"]);
  envelope["signatures"][0]["sig"] = url_safe(envelope["signatures"][0]["sig"]);
  envelope["signatures"][0]["keyid"] = "not-the-keyid";
  const auto r = Verify(WriteEnvelope("url.json", envelope), Pub("box"), db);
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST_F(AttestCli, StatementThatDoesNotMatchTheDbIsRejected) {
  const std::string db = RunQuick("quick.db");
  const std::string key = Keygen("box");
  const std::string file = Sign(db, key, dir_.File("s.json"));
  // Another DB: different results (and no such scenario id in an unrelated one).
  const std::string other = fleet_testing::WriteDemoDb(dir_.File("other.db"));
  ExpectRejected(file, Pub("box"), other, "does not hold");
  // The same scenario with one more run recorded after signing.
  const auto more = Detverify({"run", fleet_testing::SourceDir() + "/scenarios/quick.yaml", "--db",
                               db, "--config", "int8-ref-b4"});
  ASSERT_EQ(more.code, 0) << more.err;
  ExpectRejected(file, Pub("box"), db, "does not match");
}

TEST_F(AttestCli, MergedDbCarriesEveryStatementAndTheMergersStillMatches) {
  const std::string a = fleet_testing::WriteDemoDb(dir_.File("a.db"), 16, "Box A");
  const std::string b = fleet_testing::WriteDemoDb(dir_.File("b.db"), 16, "Box B");
  const std::string sa = Sign(a, Keygen("a"), dir_.File("a.intoto.json"));
  const std::string sb = Sign(b, Keygen("b"), dir_.File("b.intoto.json"));
  const auto merged = Detverify({"merge", a, b, "-o", dir_.File("fleet.db")});
  ASSERT_EQ(merged.code, 0) << merged.err;
  const std::string fleet = dir_.File("fleet.db");
  EXPECT_EQ(db::RunStore::OpenReadOnly(fleet).Attestations().size(), 2u)
      << "each machine's statement";

  const std::string sm = Sign(fleet, Keygen("merger"), dir_.File("fleet.intoto.json"));
  EXPECT_EQ(db::RunStore::OpenReadOnly(fleet).Attestations().size(), 3u);
  const auto r = Verify(sm, Pub("merger"), fleet);
  EXPECT_EQ(r.code, 0) << r.err;
  const nlohmann::json statement = Payload(nlohmann::json::parse(ReadFile(sm)));
  EXPECT_EQ(statement["predicate"]["machines"].size(), 2u);
  EXPECT_EQ(statement["predicate"]["configurations"].size(), 14u);

  // Each machine's statement still verifies against its own DB; against the fleet it describes
  // other results.
  EXPECT_EQ(Verify(sa, Pub("a"), a).code, 0);
  EXPECT_EQ(Verify(sb, Pub("b"), b).code, 0);
  ExpectRejected(sa, Pub("a"), fleet, "does not match");
}

TEST_F(AttestCli, SeveralScenariosNeedScenario) {
  const std::string a = fleet_testing::WriteDemoDb(dir_.File("a.db"));
  const std::string q = RunQuick("quick.db");
  ASSERT_EQ(Detverify({"merge", a, q, "-o", dir_.File("fleet.db")}).code, 0);
  const std::string key = Keygen("box");
  const auto r =
      Detverify({"attest", "sign", dir_.File("fleet.db"), "--key", key, "-o", dir_.File("s.json")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("2 scenarios match (demo"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--scenario"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_.File("s.json")));
  Sign(dir_.File("fleet.db"), key, dir_.File("quick.json"), {"--scenario", "quick"});
  Sign(dir_.File("fleet.db"), key, dir_.File("demo.json"), {"--scenario", "demo"});
  EXPECT_EQ(Verify(dir_.File("quick.json"), Pub("box"), dir_.File("fleet.db")).code, 0);
  EXPECT_EQ(Verify(dir_.File("demo.json"), Pub("box"), dir_.File("fleet.db")).code, 0);
  EXPECT_EQ(Payload(nlohmann::json::parse(
                ReadFile(dir_.File("demo.json"))))["predicate"]["scenario"]["name"],
            "demo");
}

TEST_F(AttestCli, UnreadableFilesExitTwo) {
  const std::string db = fleet_testing::WriteDemoDb(dir_.File("a.db"));
  const std::string key = Keygen("box");
  const std::string file = Sign(db, key, dir_.File("s.json"));
  WriteFile(dir_.File("junk.pem"), "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n");
  const std::vector<std::vector<std::string>> cases = {
      {"attest", "verify", dir_.File("missing.json"), "--pub", Pub("box")},
      {"attest", "verify", file, "--pub", dir_.File("missing.pub")},
      {"attest", "verify", file, "--pub", dir_.File("junk.pem")},
      {"attest", "verify", file, "--pub", Pub("box"), "--db", dir_.File("missing.db")},
      {"attest", "sign", dir_.File("missing.db"), "--key", key, "-o", dir_.File("out.json")},
      {"attest", "sign", db, "--key", dir_.File("missing.key"), "-o", dir_.File("out.json")},
      {"attest", "sign", db, "--key", Pub("box"), "-o", dir_.File("out.json")},
      {"attest", "sign", db, "--key", key, "-o", dir_.File("no/such/dir/out.json")},
  };
  for (const auto& args : cases) {
    const auto r = Detverify(args);
    EXPECT_EQ(r.code, 2) << args[1] << " " << args[2] << ": " << r.out << r.err;
    EXPECT_EQ(LineCount(r.err), 1u) << r.err;
    EXPECT_EQ(r.err.rfind("detverify: ", 0), 0u) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_.File("missing.db"))) << "sign never creates a DB";
  EXPECT_FALSE(std::filesystem::exists(dir_.File("out.json")));
  EXPECT_EQ(Detverify({"attest"}).code, 2) << "a subcommand is required";
}

}  // namespace
}  // namespace dv
