#include "tleak/diagnosis/report_text.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "tleak/allocator_error.h"
#include "tleak/diagnosis/counted.h"
#include "tleak/diagnosis/signal_name.h"
#include "tleak/diagnosis/site_partings.h"
#include "tleak/diagnosis/step_words.h"

namespace tleak::diagnosis {

std::string sparkline(const std::vector<std::int64_t>& values, std::size_t width) {
  static const char* kLevels[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  if (values.empty()) return "";
  const std::int64_t high = std::max<std::int64_t>(*std::max_element(values.begin(), values.end()), 1);
  std::string line;
  const std::size_t n = std::min(width, values.size());
  for (std::size_t k = 0; k < n; ++k) {
    // Each character shows the largest value of the samples it stands for.
    const std::size_t from = k * values.size() / n, to = std::max(from + 1, (k + 1) * values.size() / n);
    const std::int64_t v = *std::max_element(values.begin() + static_cast<std::ptrdiff_t>(from),
                                             values.begin() + static_cast<std::ptrdiff_t>(to));
    line += kLevels[std::clamp<std::int64_t>(v * 7 / high, 0, 7)];
  }
  return line;
}

namespace {

// "killed by SIGTERM, ", "exit status 3, ", "stopped by --max-live, ", or nothing for a program
// that ended by itself with status 0: a saved report's summary says how its run ended.
std::string how_it_ended(const ProgramInfo& program) {
  if (!program.stopped_by.empty()) return "stopped by --" + program.stopped_by + ", ";
  if (program.exit_signal) return "killed by " + signal_name(*program.exit_signal) + ", ";
  if (program.exit_status.value_or(0) != 0) return "exit status " + std::to_string(*program.exit_status) + ", ";
  return "";
}

}  // namespace

std::string render_text(const Report& r, std::size_t max_sites) {
  std::ostringstream out;
  const auto bytes = [](double n) { return format_bytes(n); };
  if (r.run.program) {
    // A worker recorded with --record-fork says so first: its figures are not its parent's.
    out << "tleak " << r.run.scenario << " ("
        << (r.run.program->forked_copy ? "forked copy, pid " + std::to_string(r.run.program->pid) : std::string("program"))
        << ", " << how_it_ended(*r.run.program);
    if (r.run.program->clock == "iterations") {
      out << iteration_words().count(r.run.iterations) << ")\n";
    } else {
      out << counted(r.run.iterations, "time sample", "time samples") << ", one every "
          << step_words(r.run).per << ")\n";
    }
  } else {
    out << "tleak " << r.run.scenario << " (" << r.run.variant << ", " << r.run.mode << ", "
        << r.run.iterations << " iterations, scale " << r.run.scale << ")\n";
  }
  out << r.summary.sentence << "\n";
  std::vector<std::int64_t> live;
  for (const TimelineSample& s : r.timeline.samples) live.push_back(s.live_bytes);
  if (!live.empty()) {
    out << "live  " << sparkline(live) << "  peak " << bytes(static_cast<double>(r.totals.peak_live_bytes))
        << (r.run.program ? ", at exit " : ", after teardown ")
        << bytes(static_cast<double>(r.timeline.after_teardown.live_bytes)) << "\n";
  }
  // A program's allocator keeps its own reserve, which tleak does not see (null in its report):
  // said only of the scenarios' allocators, whose reserve tleak keeps.
  out << "totals: peak live " << bytes(static_cast<double>(r.totals.peak_live_bytes));
  if (r.totals.peak_reserved_bytes) out << ", peak reserved " << bytes(static_cast<double>(*r.totals.peak_reserved_bytes));
  out << ", leaked " << bytes(static_cast<double>(r.totals.leaked_bytes)) << " in "
      << counted(static_cast<std::uint64_t>(r.totals.leaked_blocks), "block", "blocks");
  if (r.run.program) {
    out << (r.run.program->exit_scan ? ", reachable at exit " : ", not freed (no exit scan) ")
        << bytes(static_cast<double>(r.run.program->exit_scan ? r.totals.reachable_at_exit_bytes
                                                              : r.totals.unjudged_at_exit_bytes));
    // Allocated by a thread still running after the scan's list was made.
    if (r.run.program->exit_scan && r.totals.unjudged_at_exit_bytes > 0) {
      out << ", unjudged " << bytes(static_cast<double>(r.totals.unjudged_at_exit_bytes));
    }
  }
  out << "\n";
  out << "sites: " << r.summary.leak_sites << " leak, " << r.summary.growth_sites << " growth, ";
  // Without uses seen (a program's run) no site can be judged retained: "0 retained" would read as
  // judged and none found.
  if (r.total_retained.measured) {
    out << r.summary.retained_sites << " retained, " << r.summary.bounded_sites << " bounded\n";
  } else {
    out << r.summary.bounded_sites << " bounded (retained not measured: no uses seen)\n";
  }
  // The frames shown begin where the label's frame does.
  const PythonUsersCode mine = python_users_code(r.run);
  const std::vector<std::vector<std::string>> vias = via_lines(r, max_sites);
  for (std::size_t i = 0; i < r.sites.size() && i < max_sites; ++i) {
    const SiteReport& s = r.sites[i];
    char verdict[16];
    std::snprintf(verdict, sizeof verdict, "%-9s", s.verdict.c_str());
    out << "  " << verdict << s.label << " [" << s.allocator << "]\n";
    out << "           " << s.reason << "\n";
    const auto print = [&](const char* how, const Frame& frame) {
      out << "           " << how << " " << frame_short_name(frame);
      if (!frame.file.empty()) out << "  " << file_name(frame.file) << ":" << frame.line;
      if (frame.kind == FrameKind::kInlined) out << "  (inlined)";
      out << "\n";
    };
    // What sets it apart from the sites listed that read alike.
    for (const std::string& via : vias[i]) out << "           " << via << "\n";
    const std::size_t first = first_shown_frame(s, mine);
    for (std::size_t f = first; f < s.frames.size() && f < first + kShownFrames; ++f) print("at", s.frames[f]);
  }
  if (r.sites.size() > max_sites) out << "  ... " << r.sites.size() - max_sites << " more in the JSON report\n";
  if (r.omitted_sites.sites > 0) {
    out << "  ... and " << counted(r.omitted_sites.sites, "smaller bounded site", "smaller bounded sites")
        << (r.omitted_sites.sites == 1 ? " added up in the report (its peak " : " added up in the report (largest peak ")
        << bytes(static_cast<double>(r.omitted_sites.largest_peak_live_bytes)) << ")\n";
  }
  for (const std::string& note : r.notes) out << "note: " << note << "\n";
  return out.str();
}

}  // namespace tleak::diagnosis
