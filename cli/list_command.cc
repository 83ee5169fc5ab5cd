#include <cstdio>
#include <string>

#include "cli_error.h"
#include "commands.h"
#include "scenario_lookup.h"
#include "tleak/scenarios/scenario.h"

namespace tleak::cli {

Command add_list_command(CLI::App& app) {
  app.add_subcommand("list", "List the built-in scenarios: id, document, modes, what it shows");
  return [] {
    std::printf("%-26s %-10s %-16s %s\n", "id", "document", "modes", "summary");
    for (const scenarios::Scenario& s : scenarios::all_scenarios()) {
      std::printf("%-26s %-10s %-16s %s\n", s.id.c_str(), s.document.c_str(), join(s.modes, ",").c_str(),
                  s.summary.c_str());
    }
    return kExitClean;
  };
}

Command add_explain_command(CLI::App& app) {
  auto* sub = app.add_subcommand("explain", "What a scenario's document claims, what tleak measures, and the fix");
  auto id = std::make_shared<std::string>();
  sub->add_option("scenario", *id, "Scenario id (see tleak list)")->required();
  return [id] {
    const scenarios::Scenario* s = &require_scenario(*id);
    std::printf("%s (document %s; modes %s)\n\n", s->id.c_str(), s->document.c_str(), join(s->modes, ", ").c_str());
    std::printf("Claim:\n  %s\n\nWhat tleak measures:\n  %s\n\nFix:\n  %s\n", s->claim.c_str(), s->measures.c_str(),
                s->fix.c_str());
    return kExitClean;
  };
}

}  // namespace tleak::cli
