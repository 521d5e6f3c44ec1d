// Every file `detverify` reads, replaced by something that is not a regular file: a FIFO (opening
// it for reading would wait for a writer forever), /dev/zero (never ends) and /dev/urandom (never
// ends, never repeats). Each verb must refuse it at once: exit 2, one line on stderr that names
// the file, within the timeout (exit 124 from timeout(1) is a hang).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <functional>

#include "db/run_store.h"
#include "engine/synth.h"
#include "tests/reports/fleet_fixtures.h"

namespace dv {
namespace {

namespace fs = std::filesystem;
using fleet_testing::CommandResult;
using fleet_testing::LineCount;
using fleet_testing::ScratchDir;
using fleet_testing::WriteFile;

constexpr const char* kTimeout = "30";

CommandResult DetverifyWithin(const std::vector<std::string>& args) {
  std::vector<std::string> full = {"-s", "KILL", kTimeout, DETVERIFY_BIN};
  full.insert(full.end(), args.begin(), args.end());
  return fleet_testing::RunProgram("/usr/bin/timeout", full);
}

// The kinds of non-files, each made at `path` (replacing whatever is there).
struct Hostile {
  const char* what;
  std::function<void(const std::string&)> make;
};

const std::vector<Hostile>& Hostiles() {
  static const std::vector<Hostile> kinds = {
      {"FIFO",
       [](const std::string& p) {
         fs::remove_all(p);
         ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0) << p;
       }},
      {"/dev/zero",
       [](const std::string& p) {
         fs::remove_all(p);
         fs::create_symlink("/dev/zero", p);
       }},
      {"/dev/urandom",
       [](const std::string& p) {
         fs::remove_all(p);
         fs::create_symlink("/dev/urandom", p);
       }},
  };
  return kinds;
}

class HostileInputCli : public ::testing::Test {
 protected:
  void SetUp() override {
    artifact_ = dir_.File("art");
    WriteSynthArtifact(FindSynthPreset("qwen3-tiny"), 7, artifact_);
    db_ = dir_.File("empty.db");
    { db::RunStore::Open(db_); }
    WriteFile(dir_.File("good.yaml"),
              "name: t\nmodel: { fallback: synthetic:qwen3-tiny }\nprompt: { text_file: "
              "prompt.txt }\ngenerate: { max_new: 1 }\nconfigurations: [ { name: a, engine: "
              "int8 } ]\n");
    WriteFile(dir_.File("envelope.json"), "{}");
    const CommandResult keygen = DetverifyWithin({"attest", "keygen", "--out", dir_.File("k.key")});
    ASSERT_EQ(keygen.code, 0) << keygen.err;
  }

  // Replaces `victim` with each hostile kind in turn and runs `args`: exit 2, one line naming
  // `victim` (as given on the command line or in the file that points to it).
  void ExpectRefused(const std::string& victim, const std::vector<std::string>& args,
                     const std::function<void()>& restore = {}) {
    for (const Hostile& h : Hostiles()) {
      h.make(victim);
      const CommandResult r = DetverifyWithin(args);
      SCOPED_TRACE(std::string(h.what) + " as " + victim);
      EXPECT_NE(r.code, 124) << "hung";
      EXPECT_EQ(r.code, 2) << r.out << r.err;
      EXPECT_EQ(LineCount(r.err), 1u) << r.err;
      EXPECT_NE(r.err.find(victim), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
      fs::remove_all(victim);
      if (restore) restore();
    }
  }

  ScratchDir dir_{"hostile"};
  std::string artifact_, db_;
};

TEST_F(HostileInputCli, ScenarioAndItsTextFile) {
  ExpectRefused(dir_.File("s.yaml"), {"run", dir_.File("s.yaml"), "--db", dir_.File("r.db")});
  ExpectRefused(dir_.File("prompt.txt"),
                {"run", dir_.File("good.yaml"), "--db", dir_.File("r.db")});
}

TEST_F(HostileInputCli, ArtifactFiles) {
  const auto rewrite = [&] { WriteSynthArtifact(FindSynthPreset("qwen3-tiny"), 7, artifact_); };
  for (const char* file : {"config.json", "model.safetensors"}) {
    ExpectRefused(artifact_ + "/" + file,
                  {"generate", "--artifact", artifact_, "--prompt-ids", "1,2", "--max-new", "1"},
                  rewrite);
  }
}

TEST_F(HostileInputCli, TokenizerInputs) {
  ExpectRefused(dir_.File("tok.json"),
                {"tokenize", "--tokenizer", dir_.File("tok.json"), "--text", "hi"});
  ExpectRefused(artifact_ + "/tokenizer.json",
                {"tokenize", "--artifact", artifact_, "--text", "hi"});
  ExpectRefused(dir_.File("in.txt"), {"tokenize", "--file", dir_.File("in.txt")});
  ExpectRefused(dir_.File("in.jsonl"), {"tokenize", "--jsonl", dir_.File("in.jsonl")});
}

TEST_F(HostileInputCli, GgufFile) {
  ExpectRefused(dir_.File("m.gguf"), {"gguf-info", dir_.File("m.gguf")});
  ExpectRefused(dir_.File("m.gguf"), {"tokenize", "--gguf", dir_.File("m.gguf"), "--text", "hi"});
}

TEST_F(HostileInputCli, GateExpectFile) {
  ExpectRefused(dir_.File("e.json"), {"gate", db_, "--expect", dir_.File("e.json")});
}

TEST_F(HostileInputCli, AttestKeysAndEnvelopes) {
  ExpectRefused(dir_.File("p.pub"),
                {"attest", "verify", dir_.File("envelope.json"), "--pub", dir_.File("p.pub")});
  ExpectRefused(dir_.File("x.json"),
                {"attest", "verify", dir_.File("x.json"), "--pub", dir_.File("k.pub")});
  ExpectRefused(dir_.File("s.key"),
                {"attest", "sign", db_, "--key", dir_.File("s.key"), "-o", dir_.File("o.json")});
}

}  // namespace
}  // namespace dv
