#include "reports/gate_output.h"

#include <algorithm>

#include "build_info.h"
#include "reports/markup_escape.h"

namespace dv::reports {
namespace {

std::string Plural(int64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The one-line verdict of a scenario.
std::string Headline(const ScenarioGate& g) {
  if (g.int8_ok == 0) return "no int8 configuration produced a hash";
  if (g.Disagrees()) {
    return "int8 configurations disagree: " +
           Plural(g.unique_logits, "unique logits hash", "unique logits hashes") + ", " +
           Plural(g.unique_tokens, "unique token hash", "unique token hashes");
  }
  const std::string hashes = std::to_string(g.steps) + " steps: logits " +
                             ShortHash(g.logits_chain) + ", tokens " + ShortHash(g.token_chain);
  if (g.int8_ok == 1) return "1 int8 configuration produced a hash after " + hashes;
  return std::to_string(g.int8_ok) + " int8 configurations agree after " + hashes;
}

int64_t Count(const ScenarioGate& g, CaseOutcome outcome) {
  return std::count_if(g.cases.begin(), g.cases.end(),
                       [outcome](const GateCase& c) { return c.outcome == outcome; });
}

}  // namespace

std::string RenderGateText(const GateResult& gate) {
  std::string out = "detverify gate  " + gate.db_path + "  (" +
                    Plural(static_cast<int64_t>(gate.scenarios.size()), "scenario", "scenarios") +
                    (gate.expect_given ? ", with --expect" : "") + ")\n";
  for (const std::string& p : gate.problems) out += "FAIL  " + p + "\n";
  for (const ScenarioGate& g : gate.scenarios) {
    out += std::string(g.passed ? "PASS  " : "FAIL  ") + g.label + ": " + Headline(g) + "\n";
    for (const std::string& p : g.problems) {
      if (p != Headline(g)) out += "      " + p + "\n";
    }
    for (const GateCase& c : g.cases) {
      if (c.outcome == CaseOutcome::kFail) out += "      " + c.name + ": " + c.message + "\n";
    }
    for (const std::string& n : g.notes) out += "      " + n + "\n";
  }
  out += gate.passed ? "gate: PASS\n" : "gate: FAIL\n";
  return out;
}

std::string RenderJunitXml(const GateResult& gate) {
  auto attr = [](const char* name, const std::string& value) {
    return std::string(" ") + name + "=\"" + EscapeXml(value) + "\"";
  };
  auto counts = [&](int64_t tests, int64_t failures, int64_t skipped) {
    return attr("tests", std::to_string(tests)) + attr("failures", std::to_string(failures)) +
           attr("errors", "0") + attr("skipped", std::to_string(skipped));
  };
  // A failed testcase for problems that belong to no single row.
  auto problem_case = [&](const std::string& classname, const std::string& name,
                          const std::vector<std::string>& problems) {
    std::string all;
    for (const std::string& p : problems) all += (all.empty() ? "" : "\n") + p;
    return "    <testcase" + attr("classname", classname) + attr("name", name) +
           ">\n      <failure" + attr("message", problems.front()) + attr("type", "gate") + ">" +
           EscapeXml(all) + "</failure>\n    </testcase>\n";
  };

  int64_t tests = 0, failures = 0, skipped = 0;
  std::string suites;
  if (!gate.problems.empty()) {
    tests += 1;
    failures += 1;
    suites += "  <testsuite" + attr("name", "detverify") + counts(1, 1, 0) + ">\n" +
              problem_case("detverify", "results", gate.problems) + "  </testsuite>\n";
  }
  for (const ScenarioGate& g : gate.scenarios) {
    const std::string classname = "detverify." + g.label;
    const int64_t extra = g.problems.empty() ? 0 : 1;
    const int64_t t = static_cast<int64_t>(g.cases.size()) + extra;
    const int64_t f = Count(g, CaseOutcome::kFail) + extra;
    const int64_t s = Count(g, CaseOutcome::kSkipped);
    tests += t;
    failures += f;
    skipped += s;
    suites += "  <testsuite" + attr("name", g.label) + counts(t, f, s) + ">\n";
    if (!g.problems.empty()) suites += problem_case(classname, g.label + " (scenario)", g.problems);
    for (const GateCase& c : g.cases) {
      suites += "    <testcase" + attr("classname", classname) + attr("name", c.name) + ">\n";
      suites += "      <properties>\n";
      for (const auto& [name, value] :
           {std::pair<const char*, const std::string&>{"device", c.device},
            {"status", c.status},
            {"logits_chain", c.logits_chain},
            {"token_chain", c.token_chain}}) {
        suites += "        <property" + attr("name", name) + attr("value", value) + "/>\n";
      }
      suites += "      </properties>\n";
      if (c.outcome == CaseOutcome::kFail) {
        suites += "      <failure" + attr("message", c.message) + attr("type", "gate") + ">" +
                  EscapeXml(c.name + ": " + c.message) + "</failure>\n";
      } else if (c.outcome == CaseOutcome::kSkipped) {
        suites += "      <skipped" + attr("message", c.message) + "/>\n";
      }
      suites += "    </testcase>\n";
    }
    suites += "  </testsuite>\n";
  }
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites" +
         attr("name", "detverify gate") + counts(tests, failures, skipped) + ">\n" + suites +
         "</testsuites>\n";
}

std::string RenderGateSummary(const GateResult& gate, size_t max_bytes) {
  // Room kept for the closing notes whatever the rows took.
  constexpr size_t kReserve = 4096;
  const size_t budget = max_bytes > kReserve * 2 ? max_bytes - kReserve : max_bytes / 2;
  for (const bool failing_only : {false, true}) {
    std::string out = std::string("## ") + (gate.passed ? "\u2705" : "\u274c") +
                      " detverify gate: " + (gate.passed ? "PASS" : "FAIL") + "\n\n";
    out += MarkdownCode(gate.db_path) + " \u00b7 " +
           Plural(static_cast<int64_t>(gate.scenarios.size()), "scenario", "scenarios") +
           " \u00b7 results digest " + MarkdownCode(ShortHash(gate.results_digest, 16)) +
           " \u00b7 detverify " + dv::build::kToolVersion + " (spec " + dv::build::kSpecVersion +
           ")" + (gate.expect_given ? " \u00b7 checked against --expect" : "") + "\n\n";
    for (const std::string& p : gate.problems) out += "- \u274c " + EscapeMarkdownCell(p) + "\n";
    if (!gate.problems.empty()) out += "\n";
    int64_t left_out = 0, left_out_passing = 0;
    bool any_skipped = false;
    for (const ScenarioGate& g : gate.scenarios) {
      out += std::string("### ") + (g.passed ? "\u2705 " : "\u274c ") +
             EscapeMarkdownCell(g.label) + "\n\n" + EscapeMarkdownCell(Headline(g)) + "\n\n";
      for (const std::string& p : g.problems) out += "- \u274c " + EscapeMarkdownCell(p) + "\n";
      if (!g.problems.empty()) out += "\n";
      if (!g.cases.empty()) {
        const std::string at = " @" + std::to_string(g.steps);
        out += "| configuration | device | engine | status | logits" + at + " | tokens" + at +
               " | gate |\n"
               "|---|---|---|---|---|---|---|\n";
      }
      for (const GateCase& c : g.cases) {
        if (c.outcome == CaseOutcome::kSkipped) any_skipped = true;
        if (failing_only && c.outcome == CaseOutcome::kPass) {
          ++left_out_passing;
          continue;
        }
        std::string verdict = c.outcome == CaseOutcome::kPass ? "\u2705 pass"
                              : c.outcome == CaseOutcome::kFail
                                  ? "\u274c " + EscapeMarkdownCell(c.message)
                                  : "\u23ed\ufe0f " + EscapeMarkdownCell(c.message);
        const std::string row =
            "| " + EscapeMarkdownCell(c.name) + " | " + EscapeMarkdownCell(c.device) + " | " +
            c.engine + " | " + EscapeMarkdownCell(c.status) + " | " +
            (c.logits_chain.empty() ? "" : MarkdownCode(ShortHash(c.logits_chain))) + " | " +
            (c.token_chain.empty() ? "" : MarkdownCode(ShortHash(c.token_chain))) + " | " +
            verdict + " |\n";
        if (out.size() + row.size() > budget) {
          ++left_out;
          continue;
        }
        out += row;
      }
      out += "\n";
      for (const std::string& n : g.notes) out += "- " + EscapeMarkdownCell(n) + "\n";
      if (!g.notes.empty()) out += "\n";
    }
    if (any_skipped) {
      out +=
          "Skipped rows (a backend this machine lacks) and float contrast rows are listed but do "
          "not fail the "
          "gate; an int8 row that crashed or timed out does.\n";
    }
    if (failing_only && left_out_passing > 0) {
      out += "\n" + Plural(left_out_passing, "passing row is", "passing rows are") +
             " left out to keep this summary under " + std::to_string(max_bytes / 1000) +
             " kB; the JUnit file and `detverify report` list every row.\n";
    }
    if (left_out > 0) {
      out += "\n" + Plural(left_out, "more row is", "more rows are") + " left out (size limit).\n";
    }
    if (!failing_only && left_out == 0 && out.size() <= budget) return out;
    if (failing_only) {
      // Scenario headings and problems are not counted against the budget; a DB with that many
      // scenarios is cut at the last whole line.
      if (out.size() > max_bytes) {
        const size_t cut = out.rfind('\n', max_bytes - 1);
        out.resize(cut == std::string::npos ? 0 : cut + 1);
      }
      return out;
    }
  }
  return {};
}

}  // namespace dv::reports
