// The layer table of detverify (docs/architecture.md has the diagram): every source folder is a
// module, engine/ is four components, and each may include headers of the components listed
// for it and of nothing else. tests/ may use anything and is not checked. A module that is not
// in the table fails the layering test until it is added here and in the diagram.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dv::layering {

// A narrower edge: of component `to`, only these headers may be included.
struct Through {
  std::string to;
  std::vector<std::string> headers;  // repository-relative, "engine/generate.h"
};

struct Component {
  std::string name;                   // "engine.core", "harness", ...
  std::vector<std::string> uses;      // components it may include
  std::string job;                    // one line: what lives there
  std::vector<Through> through = {};  // edges of `uses` limited to some headers
};

// The table, lowest layers first.
const std::vector<Component>& LayerTable();

// The component a repository-relative path belongs to ("engine/model.cc" -> "engine.core",
// "harness/runner.cc" -> "harness", "build_info.h" -> "build_info"); nullopt for a path outside
// every module (tests/, docs/, scripts/, ...).
std::optional<std::string> ComponentOf(std::string_view path);

struct Violation {
  std::string file;  // repository-relative
  int line = 0;
  std::string include;   // as written
  std::string from, to;  // components
};

// The quoted includes of `text` with their line numbers.
std::vector<std::pair<int, std::string>> QuotedIncludesWithLines(std::string_view text);

// Every include of `file` (repository-relative, with content `text`) that its component may not
// use. Includes that name no module (a sibling file, a system header in quotes) are ignored.
std::vector<Violation> CheckFile(const std::string& file, std::string_view text);

// The lines of `text` (1-based, with the marker found) that are OS-specific code: an OS
// conditional (__linux__, __APPLE__, ...), a /proc or /sys path, or a call or header only some
// systems have (sysctl, getauxval, thread affinity, madvise, getrusage, process spawning).
// Comments are not code. Such lines belong in os/ (one interface per concern, docs/
// architecture.md); everywhere else asks os/.
std::vector<std::pair<int, std::string>> OsSpecificLines(std::string_view text);

}  // namespace dv::layering
