// The result DB opener and its readers (db/run_store.h) on an arbitrary file: a hostile or
// corrupt SQLite file (or not SQLite at all) opened read-only, then every record read back with
// the validation the readers apply.
#include <string>

#include "base/expected_error.h"
#include "db/run_store.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = dv::fuzz::ScratchDir() + "/fuzz.db";
  dv::fuzz::WriteScratchFile(path, dv::fuzz::AsText(data, size));
  try {
    const dv::db::RunStore store =
        dv::db::RunStore::OpenReadOnly(path, {.lock_timeout = std::chrono::milliseconds(0)});
    for (const auto& scenario : store.Scenarios()) {
      for (const auto& run : store.Runs(scenario.id, dv::db::StepLoading::kWithSteps)) {
        (void)store.Run(run.id);
      }
    }
    (void)store.Machines();
    (void)store.Artifacts();
    (void)store.Attestations();
  } catch (const dv::ExpectedError&) {
  }
  return 0;
}
