#include "tleak/diagnosis/report_text.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "source_expression.h"
#include "tleak/allocator_error.h"
#include "tleak/diagnosis/counted.h"
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

// A frame as the text shows it: name and place.
bool shown_alike(const Frame& a, const Frame& b) {
  return a.line == b.line && a.file == b.file && frame_short_name(a) == frame_short_name(b);
}

// The frames the text shows for a site: from the runtime call its label names, down its callers.
std::size_t first_shown_frame(const SiteReport& s, PythonUsersCode mine) {
  const std::size_t user = user_frame_index(s.frames, mine);
  return user > 0 ? user - 1 : 0;
}

constexpr std::size_t kShownFrames = 3;

bool shown_alike(const SiteReport& a, const SiteReport& b, PythonUsersCode mine) {
  const std::size_t fa = first_shown_frame(a, mine), fb = first_shown_frame(b, mine);
  // By what is shown, not where: the stacks of numpy's array data and of its shape under one
  // "PyNumber_Multiply" are of different depths below it, and the deeper one, cut at the stack
  // depth kept, may show fewer frames: the frames both show read the same.
  if (a.label != b.label) return false;
  for (std::size_t k = 0; k < kShownFrames; ++k) {
    const bool in_a = fa + k < a.frames.size(), in_b = fb + k < b.frames.size();
    if (!in_a || !in_b) return k > 0;
    if (!shown_alike(a.frames[fa + k], b.frames[fb + k])) return false;
  }
  return true;
}

// Where two sites that read alike part on a line they share: a Python frame at the same place in
// both, same function and line, at another column (`self.l2(torch.relu(self.l1(x)))`: each layer's
// allocations come from a call on the one line). Null if none does.
const Frame* where_columns_part(const SiteReport& s, const SiteReport& other, PythonUsersCode mine) {
  const std::size_t fs = first_shown_frame(s, mine), fo = first_shown_frame(other, mine);
  for (std::size_t k = 0; fs + k < s.frames.size() && fo + k < other.frames.size(); ++k) {
    const Frame& a = s.frames[fs + k];
    const Frame& b = other.frames[fo + k];
    if (!shown_alike(a, b)) return nullptr;
    if (a.kind == FrameKind::kPython && a.column > 0 && b.column > 0 &&
        (a.column != b.column || a.end_column != b.end_column)) {
      return &a;
    }
  }
  return nullptr;
}

// What sets a site apart from another that reads alike: a frame, and whether it is a call on a line
// both share (a Python frame's columns: its expression is quoted).
struct Parting {
  const Frame* frame = nullptr;
  bool call_on_shared_line = false;
};

// For a site that would read exactly like another listed (same label, same frames shown: a
// PyTorch line whose module call allocates in several places), the function on its allocation path
// that the other's lacks: its innermost named frame, past allocation plumbing, not among the
// other's hidden frames ("t::call", the transpose, beside "addmm::call"). Failing that, the call on
// a shared line that is its own (where_columns_part); then its innermost such frame of the C++
// library; then, where the paths part only in a stripped library (Debian's numpy: an array's data
// and its shape, both under "PyNumber_Multiply"), its innermost such frame by module and offset,
// which debug symbols installed later resolve. No frame if there is none.
// Whether a frame reads like one of the frames a site's text hides (those before its shown ones).
bool among_hidden_frames(const Frame& frame, const SiteReport& other, PythonUsersCode mine) {
  const std::size_t hidden = first_shown_frame(other, mine);
  for (std::size_t m = 0; m < hidden; ++m) {
    if (shown_alike(frame, other.frames[m])) return true;
  }
  return false;
}

Parting where_stacks_part(const SiteReport& s, const SiteReport& other, PythonUsersCode mine) {
  const std::size_t hidden = first_shown_frame(s, mine);
  const Frame* unnamed_part = nullptr;
  const Frame* library_part = nullptr;
  for (std::size_t k = 0; k < hidden; ++k) {
    const Frame& frame = s.frames[k];
    if (among_hidden_frames(frame, other, mine)) continue;
    if (is_allocation_plumbing(frame)) {
      // The C++ library's own path may be all that differs: a map's node and the vector copied
      // into it, both under one "map::emplace" ("_Rb_tree::_M_get_node", "_Vector_base::_M_allocate").
      if (library_part == nullptr && frame_has_name(frame)) library_part = &frame;
      continue;
    }
    if (!frame_has_name(frame)) {
      if (unnamed_part == nullptr && !frame.module.empty()) unnamed_part = &frame;
      continue;
    }
    return {&frame, false};
  }
  if (const Frame* call = where_columns_part(s, other, mine)) return {call, true};
  return {library_part != nullptr ? library_part : unnamed_part, false};
}

// Whether what a via line says of site `s` (its parting from some other site) sets it apart from
// `other` as well: the frame is none of the other's hidden ones, or, a call on a shared line, the
// other's frame at the same place is another call.
bool sets_apart(const Parting& part, const SiteReport& s, const SiteReport& other, PythonUsersCode mine) {
  if (!part.call_on_shared_line) return !among_hidden_frames(*part.frame, other, mine);
  const std::size_t k = static_cast<std::size_t>(part.frame - s.frames.data()) - first_shown_frame(s, mine);
  const std::size_t at = first_shown_frame(other, mine) + k;
  if (at >= other.frames.size()) return false;
  const Frame& theirs = other.frames[at];
  return shown_alike(*part.frame, theirs) && (theirs.column != part.frame->column || theirs.end_column != part.frame->end_column);
}

// At most this many via lines for a site: each tells it from another of its group that the ones
// before did not (a PyTorch line's sites part in the kernel's path, then in which layer's call).
constexpr std::size_t kMaxPartings = 3;

}  // namespace

std::string render_text(const Report& r, std::size_t max_sites) {
  std::ostringstream out;
  const auto bytes = [](double n) { return format_bytes(n); };
  if (r.run.program) {
    out << "tleak " << r.run.scenario << " (program, ";
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
    // A call on a line another site shares: its own expression, quoted from the file, and column.
    const auto print_call = [&](const Frame& frame) {
      const std::optional<std::string> expression = source_expression(frame);
      out << "           via " << (expression ? *expression : frame_short_name(frame)) << "  "
          << file_name(frame.file) << ":" << frame.line << ":" << frame.column << "\n";
    };
    // Every site of a group that reads alike says what sets it apart from the others: from the
    // first other one, then from each other one that what it said so far does not set it apart from.
    const std::size_t listed = std::min(r.sites.size(), max_sites);
    std::vector<Parting> said;
    for (std::size_t j = 0; j < listed && said.size() < kMaxPartings; ++j) {
      if (j == i || !shown_alike(s, r.sites[j], mine)) continue;
      const SiteReport& other = r.sites[j];
      if (std::any_of(said.begin(), said.end(), [&](const Parting& p) { return sets_apart(p, s, other, mine); })) continue;
      const Parting part = where_stacks_part(s, other, mine);
      if (part.frame == nullptr) continue;
      if (part.call_on_shared_line) {
        print_call(*part.frame);
      } else {
        print("via", *part.frame);
      }
      said.push_back(part);
    }
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
