#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_error.h"
#include "commands.h"
#include "scenario_lookup.h"
#include "tleak/scenarios/scenario.h"

namespace tleak::cli {

Command add_list_command(CommandLine& app) {
  Subcommand sub = app.add_subcommand("list",
                                      "List the built-in scenarios: id, document, modes, whether tleak's measurement confirms the "
                                      "document's claim, what it shows. The leaky variant runs the document's code as written, "
                                      "which may not leak; fixed runs the remedy");
  auto format = std::make_shared<std::string>("text");
  sub.option("--format", *format, "text (default), or json with every field, variants included")
      .one_of({"text", "json"});
  return [format] {
    if (*format == "json") {
      nlohmann::json out = nlohmann::json::array();
      for (const scenarios::Scenario& s : scenarios::all_scenarios()) {
        out.push_back({{"id", s.id}, {"document", s.document}, {"modes", s.modes}, {"variants", s.variants},
                       {"claim_status", s.claim_status}, {"summary", s.summary}});
      }
      std::cout << out.dump(2) << "\n";
      return kExitClean;
    }
    std::printf("%-26s %-10s %-16s %-18s %s\n", "id", "document", "modes", "claim", "summary");
    for (const scenarios::Scenario& s : scenarios::all_scenarios()) {
      std::printf("%-26s %-10s %-16s %-18s %s\n", s.id.c_str(), s.document.c_str(), join(s.modes, ",").c_str(),
                  scenarios::claim_status_or_dash(s).c_str(), s.summary.c_str());
    }
    return kExitClean;
  };
}

}  // namespace tleak::cli
