#include <cstdio>
#include <string>

#include "cli_error.h"
#include "commands.h"
#include "scenario_lookup.h"
#include "tleak/scenarios/scenario.h"

namespace tleak::cli {

Command add_list_command(CLI::App& app) {
  app.add_subcommand("list",
                     "List the built-in scenarios: id, document, modes, whether tleak's measurement confirms the "
                     "document's claim, what it shows. The leaky variant runs the document's code as written, "
                     "which may not leak; fixed runs the remedy");
  return [] {
    std::printf("%-26s %-10s %-16s %-18s %s\n", "id", "document", "modes", "claim", "summary");
    for (const scenarios::Scenario& s : scenarios::all_scenarios()) {
      std::printf("%-26s %-10s %-16s %-18s %s\n", s.id.c_str(), s.document.c_str(), join(s.modes, ",").c_str(),
                  scenarios::claim_status_or_dash(s).c_str(), s.summary.c_str());
    }
    return kExitClean;
  };
}

}  // namespace tleak::cli
