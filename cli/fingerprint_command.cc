// detverify fingerprint: this machine's hardware/build fingerprint as canonical JSON, and its id.
#include <cstdio>

#include "base/canonical_json.h"
#include "cli/command.h"
#include "fingerprint/fingerprint.h"

namespace dv::cli {

void SetupFingerprintCommand(CLI::App& app, CommandContext& ctx) {
  auto pretty = std::make_shared<bool>(false);
  CLI::App* cmd =
      app.add_subcommand("fingerprint", "print this machine's fingerprint as canonical JSON");
  cmd->add_flag("--pretty", *pretty, "indented JSON with the machine id");
  cmd->callback([pretty, &ctx]() {
    const nlohmann::json fp = fingerprint::CollectFingerprint();
    if (*pretty) {
      std::printf("%s\nmachine id: %s\n", fp.dump(2).c_str(), fingerprint::MachineId(fp).c_str());
    } else {
      std::printf("%s\n", CanonicalJson(fp).c_str());
    }
    ctx.exit_code = kExitOk;
  });
}

}  // namespace dv::cli
