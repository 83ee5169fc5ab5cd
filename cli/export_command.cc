#include <iostream>
#include <memory>

#include "cli_error.h"
#include "commands.h"
#include "tleak/allocator_error.h"
#include "tleak/diagnosis/atomic_file.h"
#include "tleak/diagnosis/counted.h"
#include "tleak/diagnosis/report_export.h"
#include "tleak/diagnosis/report_json.h"

namespace tleak::cli {
namespace {

struct ExportArgs {
  std::string report;
  std::string format;
  std::string measure = "peak";
  std::string output;
  std::size_t top_sites = 8;
};

}  // namespace

Command add_export_command(CommandLine& app) {
  Subcommand sub = app.add_subcommand("export", "Write a report in a format other tools open (flame graphs, traces)");
  auto args = std::make_shared<ExportArgs>();
  sub.option("report", args->report, "A report (JSON from tleak run)").required();
  sub.option("--format", args->format,
             "collapsed (flamegraph.pl, inferno, speedscope), speedscope (its JSON file format), "
             "chrome-trace (Perfetto, chrome://tracing)")
      .required()
      .one_of({"collapsed", "speedscope", "chrome-trace"});
  sub.option("--measure", args->measure,
             "collapsed: weight stacks by peak (live bytes, default), leaked, growth (bytes per iteration) or "
             "retained (peak dead bytes)")
      .one_of({"peak", "leaked", "growth", "retained"});
  sub.option("--top-sites", args->top_sites, "chrome-trace: sites with their own counter track (default 8)")
      .within(std::size_t{0}, std::size_t{1000});
  sub.option("-o,--output", args->output, "Write to this file (atomically) instead of stdout");
  return [args, sub] {
    if (sub.count("--measure") > 0 && args->format != "collapsed") {
      throw UsageError("export: --measure applies to --format collapsed (speedscope has a profile per measure)");
    }
    if (sub.count("--top-sites") > 0 && args->format != "chrome-trace") {
      throw UsageError("export: --top-sites applies to --format chrome-trace");
    }
    if (!args->output.empty()) diagnosis::check_writable(args->output);
    diagnosis::Report report;
    try {
      report = diagnosis::read_report_file(args->report);
    } catch (const diagnosis::ReportError& e) {
      throw UsageError(e.what());
    }
    // Peaks of the sites the report left out (past tleak run's --max-sites) are in no export: said,
    // so that a flame graph by peak is not taken for the whole heap.
    const auto& omitted = report.omitted_sites;
    if (omitted.sites > 0 && (args->format == "speedscope" || (args->format == "collapsed" && args->measure == "peak"))) {
      std::cerr << "tleak export: the report lists " << diagnosis::counted(report.sites.size(), "site", "sites")
                << " and left out " << diagnosis::counted(omitted.sites, "smaller bounded one", "smaller bounded ones")
                << (omitted.sites == 1 ? " (at most " : " (each at most ")
                << format_bytes(static_cast<double>(omitted.largest_peak_live_bytes))
                << " at peak): their peaks are not in this export (tleak run --max-sites lists more)\n";
    }
    std::string text;
    if (args->format == "collapsed") {
      text = diagnosis::collapsed_stacks(report, *diagnosis::measure_from_string(args->measure));
    } else if (args->format == "speedscope") {
      text = diagnosis::speedscope_profile(report).dump() + "\n";
    } else {
      text = diagnosis::chrome_trace(report, args->top_sites).dump() + "\n";
    }
    if (args->output.empty()) {
      std::cout << text << std::flush;
    } else {
      diagnosis::write_file_atomically(args->output, text);
    }
    return kExitClean;
  };
}

}  // namespace tleak::cli
