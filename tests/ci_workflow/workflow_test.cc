// docs/github-actions.yml is a fleet workflow: a matrix of runner kinds (x86-64 Linux, arm64
// Linux, Apple-silicon macOS, a self-hosted GPU machine), each running the scenario and uploading
// its DB, then one job that merges, gates, renders the reports and signs. Checked here: the
// schema lint passes (where a linter is installed), the shape is that fleet, and every detverify
// command in it exists with the options it passes -- a workflow that names a flag the binary does
// not have would fail only on GitHub, after the machines ran.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/reports/fleet_fixtures.h"

namespace dv {
namespace {

using fleet_testing::Detverify;
using fleet_testing::ReadFile;
using fleet_testing::RunProgram;
using fleet_testing::SourceDir;

std::string WorkflowPath() { return SourceDir() + "/docs/github-actions.yml"; }

YAML::Node Workflow() { return YAML::LoadFile(WorkflowPath()); }

// The `run:` scripts of a job's steps, in order.
std::vector<std::string> RunScripts(const YAML::Node& job) {
  std::vector<std::string> out;
  for (const YAML::Node& step : job["steps"]) {
    if (step["run"]) out.push_back(step["run"].as<std::string>());
  }
  return out;
}

std::string Joined(const std::vector<std::string>& scripts) {
  std::string all;
  for (const std::string& s : scripts) all += s + "\n";
  return all;
}

// The JSON assigned to `name='...'` in a shell script.
nlohmann::json ShellJson(const std::string& script, const std::string& name) {
  const size_t at = script.find(name + "='");
  if (at == std::string::npos) return nullptr;
  const size_t begin = at + name.size() + 2;
  const size_t end = script.find('\'', begin);
  return nlohmann::json::parse(script.substr(begin, end - begin));
}

TEST(FleetWorkflow, SchemaLintPasses) {
  const fleet_testing::CommandResult r =
      RunProgram("/bin/bash", {SourceDir() + "/scripts/lint_workflow.sh", WorkflowPath()});
  if (r.out.find("no workflow linter installed") != std::string::npos) {
    GTEST_SKIP() << "no workflow linter installed (scripts/install_deps.sh): " << r.out;
  }
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("passed"), std::string::npos) << r.out;
}

TEST(FleetWorkflow, TheMatrixIsTheFleet) {
  const YAML::Node jobs = Workflow()["jobs"];
  ASSERT_TRUE(jobs["machines"] && jobs["run"] && jobs["verdict"]);
  const std::string pick = Joined(RunScripts(jobs["machines"]));
  const nlohmann::json hosted = ShellJson(pick, "hosted");
  const nlohmann::json gpu = ShellJson(pick, "gpu");
  ASSERT_TRUE(hosted.is_array()) << pick;
  ASSERT_TRUE(gpu.is_object()) << pick;
  std::map<std::string, nlohmann::json> machines;
  for (const nlohmann::json& m : hosted) machines[m["machine"]] = m;
  machines[gpu["machine"]] = gpu;
  ASSERT_EQ(machines.size(), 4u);
  EXPECT_EQ(machines["linux-x86-64"]["runner"], nlohmann::json::array({"ubuntu-latest"}));
  EXPECT_EQ(machines["linux-x86-64"]["container"], "debian:12");
  EXPECT_EQ(machines["linux-arm64"]["runner"], nlohmann::json::array({"ubuntu-24.04-arm"}));
  EXPECT_EQ(machines["linux-arm64"]["container"], "debian:12");
  EXPECT_EQ(machines["macos-arm64"]["runner"], nlohmann::json::array({"macos-14"}));
  EXPECT_EQ(machines["macos-arm64"]["container"], "") << "macOS runners have no containers";
  const nlohmann::json gpu_labels = machines["gpu"]["runner"];
  EXPECT_EQ(gpu_labels.front(), "self-hosted");
  EXPECT_NE(std::find(gpu_labels.begin(), gpu_labels.end(), "gpu"), gpu_labels.end());
  EXPECT_NE(machines["gpu"]["cmake_args"].get<std::string>().find("-DDETVERIFY_CUDA=ON"),
            std::string::npos);
  // The GPU machine joins only when its runner exists, so that no job waits for one.
  EXPECT_NE(pick.find("GPU_RUNNER"), std::string::npos);

  const YAML::Node run = jobs["run"];
  EXPECT_EQ(run["strategy"]["matrix"]["include"].as<std::string>(),
            "${{ fromJSON(needs.machines.outputs.matrix) }}");
  EXPECT_FALSE(run["strategy"]["fail-fast"].as<bool>());
  EXPECT_EQ(run["runs-on"].as<std::string>(), "${{ matrix.runner }}");
  EXPECT_EQ(run["env"]["DB"].as<std::string>(), "results-${{ matrix.machine }}.db");
  // Every machine runs the scenario into its DB and uploads it under its own name.
  EXPECT_NE(Joined(RunScripts(run)).find("detverify run \"$SCENARIO\" --db \"$DB\""),
            std::string::npos);
  bool uploads_db = false;
  for (const YAML::Node& step : run["steps"]) {
    if (step["uses"] && step["uses"].as<std::string>().rfind("actions/upload-artifact@", 0) == 0 &&
        step["with"]["name"].as<std::string>() == "db-${{ matrix.machine }}") {
      uploads_db = step["if"].as<std::string>() == "always()" &&
                   step["with"]["path"].as<std::string>() == "${{ env.DB }}";
    }
  }
  EXPECT_TRUE(uploads_db) << "each machine uploads db-<machine>, whatever its own verdict";
}

TEST(FleetWorkflow, TheVerdictJobMergesGatesReportsAndSigns) {
  const YAML::Node verdict = Workflow()["jobs"]["verdict"];
  std::set<std::string> needs;
  for (const YAML::Node& n : verdict["needs"]) needs.insert(n.as<std::string>());
  EXPECT_EQ(needs, (std::set<std::string>{"machines", "run"}));
  EXPECT_NE(verdict["if"].as<std::string>().find("always()"), std::string::npos)
      << "a failed machine must not cancel the verdict over the others";
  bool downloads_every_db = false;
  for (const YAML::Node& step : verdict["steps"]) {
    if (step["with"] && step["with"]["pattern"]) {
      downloads_every_db = step["with"]["pattern"].as<std::string>() == "db-*" &&
                           step["with"]["merge-multiple"].as<bool>();
    }
  }
  EXPECT_TRUE(downloads_every_db);
  // In this order: merge, gate, report, sign.
  const std::string all = Joined(RunScripts(verdict));
  size_t at = 0;
  for (const char* verb : {"detverify merge dbs/*.db -o fleet.db", "detverify gate fleet.db",
                           "detverify report fleet.db", "detverify attest sign fleet.db"}) {
    const size_t found = all.find(verb, at);
    ASSERT_NE(found, std::string::npos) << verb << " (after offset " << at << ")";
    at = found;
  }
}

// One detverify command line of a script: its verb (and "attest"'s sub-verb) and options.
struct Invocation {
  std::vector<std::string> verb;
  std::vector<std::string> options;
  std::string line;
};

std::vector<Invocation> Invocations(const std::string& script) {
  // Continuation lines joined; a command ends at a newline, ';', '|' or '&&'.
  std::string text = std::regex_replace(script, std::regex("\\\\\n"), " ");
  std::vector<Invocation> out;
  const std::regex command("(^|[\\s/])detverify ([a-z-]+)( [a-z-]+)?([^\\n;|&]*)");
  const std::regex option("(^|[\\s+:])(--[a-z][a-z-]*|-o)\\b");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), command);
       it != std::sregex_iterator(); ++it) {
    Invocation inv;
    inv.line = (*it)[0];
    inv.verb.push_back((*it)[2]);
    std::string rest = (*it)[4];
    const std::string second = (*it)[3];
    if (inv.verb[0] == "attest" && !second.empty()) {
      inv.verb.push_back(second.substr(1));
    } else {
      rest = second + rest;
    }
    for (auto o = std::sregex_iterator(rest.begin(), rest.end(), option);
         o != std::sregex_iterator(); ++o) {
      inv.options.push_back((*o)[2]);
    }
    out.push_back(inv);
  }
  return out;
}

TEST(FleetWorkflow, InvocationsAreParsed) {
  const auto v = Invocations(
      "bin/detverify gate fleet.db \\\n --junit junit.xml ${EXPECT:+--expect \"$EXPECT\"}\n"
      "build/cli/detverify attest sign x.db --key k -o y || true\n");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].verb, std::vector<std::string>{"gate"});
  EXPECT_EQ(v[0].options, (std::vector<std::string>{"--junit", "--expect"}));
  EXPECT_EQ(v[1].verb, (std::vector<std::string>{"attest", "sign"}));
  EXPECT_EQ(v[1].options, (std::vector<std::string>{"--key", "-o"}));
}

TEST(FleetWorkflow, EveryDetverifyCommandExistsWithItsOptions) {
  const YAML::Node jobs = Workflow()["jobs"];
  size_t commands = 0;
  std::set<std::string> verbs;
  for (const auto& job : jobs) {
    for (const std::string& script : RunScripts(job.second)) {
      for (const Invocation& inv : Invocations(script)) {
        ++commands;
        std::vector<std::string> args = inv.verb;
        args.push_back("--help");
        const fleet_testing::CommandResult help = Detverify(args);
        ASSERT_EQ(help.code, 0) << "detverify has no verb '" << inv.line << "': " << help.err;
        verbs.insert(inv.verb[0]);
        for (const std::string& o : inv.options) {
          const std::regex listed("(^|[\\s,])" + o + "([\\s,]|$)");
          EXPECT_TRUE(std::regex_search(help.out, listed))
              << job.first.as<std::string>() << ": '" << inv.line << "': detverify " << inv.verb[0]
              << " has no option " << o;
        }
      }
    }
  }
  EXPECT_EQ(verbs, (std::set<std::string>{"run", "gate", "merge", "report", "attest"}));
  EXPECT_EQ(commands, 7u) << "run, this machine's gate; merge, gate, report twice, attest sign";
  // The option check can fail: an option gate does not have is not found in its help.
  const fleet_testing::CommandResult gate_help = Detverify({"gate", "--help"});
  EXPECT_FALSE(std::regex_search(gate_help.out, std::regex("(^|[\\s,])--expected([\\s,]|$)")));
  EXPECT_TRUE(std::regex_search(gate_help.out, std::regex("(^|[\\s,])--expect([\\s,]|$)")));
  // The scripts the workflow calls are the repository's.
  const std::string text = ReadFile(WorkflowPath());
  for (const char* script : {"scripts/install_deps.sh", "scripts/build.sh"}) {
    EXPECT_NE(text.find(script), std::string::npos);
    EXPECT_TRUE(std::filesystem::exists(SourceDir() + "/" + script)) << script;
  }
}

}  // namespace
}  // namespace dv
