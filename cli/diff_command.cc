#include <cstdio>
#include <iostream>
#include <memory>

#include "cli_error.h"
#include "commands.h"
#include "fail_policy.h"
#include "tleak/diagnosis/diff.h"
#include "tleak/diagnosis/atomic_file.h"
#include "tleak/diagnosis/report_json.h"
#include "tleak/web/report_page.h"

namespace tleak::cli {
namespace {

struct DiffArgs {
  std::string a, b;
  std::string format = "text";
  std::vector<std::string> fail_on;
  std::string max_increase;
  std::string html;
  bool force = false;
};

}  // namespace

Command add_diff_command(CommandLine& app) {
  Subcommand sub = app.add_subcommand("diff", "Compare two reports of a workload: what got worse, what got better");
  auto args = std::make_shared<DiffArgs>();
  sub.option("a", args->a, "The earlier report (JSON from tleak run)").required();
  sub.option("b", args->b, "The later report").required();
  sub.option("--format", args->format, "text (default) or json").one_of({"text", "json"});
  sub.option("--fail-on", args->fail_on, "Exit 1 on a regression of this kind (repeatable)")
      .one_of({"leak", "growth", "retained", "any"})
      .one_value_each_time();
  sub.option("--max-increase", args->max_increase,
             "Tolerate regressions up to this many bytes (1MiB, 512KiB, ...); fail when the total peak grows more");
  sub.flag("--force", args->force, "Compare reports of different scenarios or programs");
  sub.option("--html", args->html,
             "Also write the diff as a self-contained HTML page to FILE (atomically): both timelines, "
             "regressions first, a differential flame graph");
  return [args] {
    const diagnosis::FailPolicy policy = policy_from(args->fail_on, args->max_increase);
    if (!args->html.empty()) diagnosis::check_writable(args->html);
    diagnosis::Diff diff;
    try {
      diff = diagnosis::diff_report_files(args->a, args->b, args->force);
      if (!args->html.empty()) {
        // The page draws what the diff does not carry: both timelines and every site's frames.
        const diagnosis::Report a = diagnosis::read_report_file(args->a), b = diagnosis::read_report_file(args->b);
        diagnosis::write_file_atomically(args->html, web::diff_page(diagnosis::to_json(diff), a, b));
      }
    } catch (const diagnosis::ReportError& e) {
      throw UsageError(e.what());
    } catch (const diagnosis::DiffError& e) {
      throw UsageError(e.what());
    }
    if (args->format == "json") {
      std::cout << diagnosis::to_json(diff).dump(2) << "\n";
    } else {
      std::cout << diagnosis::render_text(diff);
    }
    if (!diagnosis::fails(diff, policy)) return kExitClean;
    if (diff.regressions().empty() && !diff.totals.leaks_judged_b) {
      std::fprintf(stderr, "tleak: a gate on leaks: B's leaks were not judged (no exit scan; its notes say why)\n");
    }
    return kExitFinding;
  };
}

}  // namespace tleak::cli
