#include <iostream>
#include <memory>

#include "cli_error.h"
#include "commands.h"
#include "tleak/diagnosis/atomic_file.h"
#include "tleak/diagnosis/report_json.h"
#include "tleak/diagnosis/report_text.h"
#include "tleak/web/report_page.h"

namespace tleak::cli {

Command add_view_command(CommandLine& app) {
  Subcommand sub = app.add_subcommand(
      "view", "Write a report as one self-contained HTML page (no network needed to open it), or as the text summary tleak run prints");
  auto report_path = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("html");
  sub.option("report", *report_path, "A report (JSON from tleak run)").required();
  sub.option("-o,--output", *output, "Write the page (or the summary) to this file (atomically) instead of stdout");
  sub.option("--format", *format, "html (the page; the default) or text (the summary tleak run prints: verdict, top sites, sparkline)")
      .one_of({"html", "text"});
  return [report_path, output, format] {
    if (!output->empty()) diagnosis::check_writable(*output);
    diagnosis::Report report;
    try {
      report = diagnosis::read_report_file(*report_path);
    } catch (const diagnosis::ReportError& e) {
      throw UsageError(e.what());
    }
    const std::string page = *format == "text" ? diagnosis::render_text(report) : web::report_page(report);
    if (output->empty()) {
      std::cout << page << std::flush;
    } else {
      diagnosis::write_file_atomically(*output, page);
    }
    return kExitClean;
  };
}

}  // namespace tleak::cli
