#include <cstdio>
#include <memory>
#include <string>

#include "cli_error.h"
#include "commands.h"
#include "scenario_lookup.h"
#include "tleak/allocator_error.h"
#include "tleak/diagnosis/session.h"

namespace tleak::cli {
namespace {

void print_measured(const scenarios::Scenario& scenario, const std::string& variant) {
  const diagnosis::Report r = diagnosis::run_workload(scenario.run, run_options(scenario, {variant, "", std::nullopt, std::nullopt}));
  std::printf("  %s: %s\n", variant.c_str(), r.summary.sentence.c_str());
  std::string per_allocator;
  for (const diagnosis::AllocatorTotals& a : r.totals.allocators) {
    if (a.peak_live_bytes == 0) continue;
    per_allocator += (per_allocator.empty() ? "" : ", ") + a.name + " " + format_bytes(static_cast<double>(a.peak_live_bytes));
  }
  std::printf("  %*s  peak live %s (%s), leaked %s\n", static_cast<int>(variant.size()), "",
              format_bytes(static_cast<double>(r.totals.peak_live_bytes)).c_str(),
              per_allocator.empty() ? "nothing tracked" : per_allocator.c_str(),
              format_bytes(static_cast<double>(r.totals.leaked_bytes)).c_str());
  for (const std::string& note : r.notes) std::printf("  %*s  %s\n", static_cast<int>(variant.size()), "", note.c_str());
}

}  // namespace

Command add_explain_command(CommandLine& app) {
  Subcommand sub = app.add_subcommand("explain", "What a scenario's document claims, what tleak measures (run now), and the fix");
  auto id = std::make_shared<std::string>();
  sub.option("scenario", *id, "Scenario id (see tleak list)").required();
  return [id] {
    const scenarios::Scenario& s = require_scenario(*id);
    std::printf("%s (document %s; modes %s)\n\n", s.id.c_str(), s.document.c_str(), join(s.modes, ", ").c_str());
    const std::string status = s.claim_status.empty() ? "" : " (" + s.claim_status + " by tleak's measurement)";
    std::printf("Claim%s:\n  %s\n\nWhat tleak measures:\n  %s\n\nFix:\n  %s\n\n", status.c_str(), s.claim.c_str(),
                s.measures.c_str(), s.fix.c_str());
    std::printf("Measured now (%s mode, %llu iterations, scale 1; leaky is the %s as written, which may not leak):\n",
                s.modes.front().c_str(),
                static_cast<unsigned long long>(s.default_iterations),
                s.document == "beyond" || s.document == "tleak" ? "pattern" : "document's code");
    std::fflush(stdout);
    for (const std::string& variant : s.variants) print_measured(s, variant);
    return kExitClean;
  };
}

}  // namespace tleak::cli
