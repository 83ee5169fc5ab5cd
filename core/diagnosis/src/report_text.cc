#include "tleak/diagnosis/report_text.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "tleak/allocator_error.h"

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

std::string render_text(const Report& r, std::size_t max_sites) {
  std::ostringstream out;
  const auto bytes = [](double n) { return format_bytes(n); };
  if (r.run.program) {
    out << "tleak " << r.run.scenario << " (program, " << r.run.iterations
        << (r.run.program->clock == "iterations" ? " iterations" : " time samples") << ")\n";
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
  out << "totals: peak live " << bytes(static_cast<double>(r.totals.peak_live_bytes)) << ", peak reserved "
      << bytes(static_cast<double>(r.totals.peak_reserved_bytes)) << ", leaked "
      << bytes(static_cast<double>(r.totals.leaked_bytes)) << " in " << r.totals.leaked_blocks << " blocks";
  if (r.run.program) {
    out << (r.run.program->exit_scan ? ", reachable at exit " : ", not freed (no exit scan) ")
        << bytes(static_cast<double>(r.run.program->exit_scan ? r.totals.reachable_at_exit_bytes
                                                              : r.totals.unjudged_at_exit_bytes));
  }
  out << "\n";
  out << "sites: " << r.summary.leak_sites << " leak, " << r.summary.growth_sites << " growth, "
      << r.summary.retained_sites << " retained, " << r.summary.bounded_sites << " bounded\n";
  for (std::size_t i = 0; i < r.sites.size() && i < max_sites; ++i) {
    const SiteReport& s = r.sites[i];
    char verdict[16];
    std::snprintf(verdict, sizeof verdict, "%-9s", s.verdict.c_str());
    out << "  " << verdict << s.label << " [" << s.allocator << "]\n";
    out << "           " << s.reason << "\n";
    // From the runtime call the label names, down its callers.
    const std::size_t user = user_frame_index(s.frames);
    const std::size_t first = user > 0 ? user - 1 : 0;
    for (std::size_t f = first; f < s.frames.size() && f < first + 3; ++f) {
      const Frame& frame = s.frames[f];
      out << "           at " << frame_short_name(frame);
      if (!frame.file.empty()) out << "  " << file_name(frame.file) << ":" << frame.line;
      out << "\n";
    }
  }
  if (r.sites.size() > max_sites) out << "  ... " << r.sites.size() - max_sites << " more in the JSON report\n";
  if (r.omitted_sites.sites > 0) {
    out << "  ... and " << r.omitted_sites.sites << " smaller bounded sites added up in the report (largest peak "
        << bytes(static_cast<double>(r.omitted_sites.largest_peak_live_bytes)) << ")\n";
  }
  for (const std::string& note : r.notes) out << "note: " << note << "\n";
  return out.str();
}

}  // namespace tleak::diagnosis
