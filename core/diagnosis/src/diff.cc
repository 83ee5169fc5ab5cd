#include "tleak/diagnosis/diff.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <future>
#include <sstream>
#include <unordered_map>

#include "tleak/allocator_error.h"
#include "tleak/diagnosis/counted.h"

namespace tleak::diagnosis {
namespace {

int severity(const std::string& verdict) {
  const auto v = verdict_from_string(verdict);
  return v ? static_cast<int>(*v) : -1;
}

std::string signed_bytes(double n) { return (n >= 0 ? "+" : "-") + format_bytes(std::abs(n)); }

// A figure a run did not measure is unknown, not 0 B: `unknown` ("not measured", "not judged").
std::string bytes_or(bool known, std::int64_t bytes, const char* unknown) {
  return known ? format_bytes(static_cast<double>(bytes)) : unknown;
}

// A change of slope smaller than this share is noise of the fit, not a regression.
constexpr double kSlopeTolerance = 0.05;

// `leaks_judged_b`: B looked for leaks (ReportSummary::leaks_judged); if not, a site A called a leak
// is no leak fixed in B, only not looked at.
void compare(SiteDelta& d, const std::string& label, const StepWords& words, bool leaks_judged_b) {
  const bool in_a = !d.verdict_a.empty(), in_b = !d.verdict_b.empty();
  const auto add = [&](RegressionKind kind, std::int64_t bytes, const std::string& what, bool verdict_worse = false) {
    d.regressions.push_back({kind, label + ": " + what, bytes, verdict_worse});
  };
  if (in_b && (!in_a || severity(d.verdict_b) > severity(d.verdict_a))) {
    const std::string change =
        (in_a ? d.verdict_a : std::string(d.unlisted_a ? "not listed in A" : "new site")) + " -> " + d.verdict_b;
    if (d.verdict_b == "leak") add(RegressionKind::kLeak, d.leaked_b - d.leaked_a, change, true);
    if (d.verdict_b == "growth") add(RegressionKind::kGrowth, static_cast<std::int64_t>(d.slope_b), change, true);
    if (d.verdict_b == "retained") add(RegressionKind::kRetained, d.retained_peak_b - d.retained_peak_a, change, true);
  }
  if (in_a && in_b && severity(d.verdict_b) < severity(d.verdict_a) && (leaks_judged_b || d.verdict_a != "leak")) {
    d.improvements.push_back(label + ": " + d.verdict_a + " -> " + d.verdict_b);
  }
  if (in_a && in_b && d.verdict_a == d.verdict_b) {
    if (d.leaked_b > d.leaked_a) add(RegressionKind::kLeak, d.leaked_b - d.leaked_a, "leaks " + signed_bytes(static_cast<double>(d.leaked_b - d.leaked_a)) + " more");
    if (d.verdict_b == "growth" && d.slope_b > d.slope_a * (1 + kSlopeTolerance)) {
      add(RegressionKind::kGrowth, static_cast<std::int64_t>(d.slope_b - d.slope_a),
          "grows " + signed_bytes(d.slope_b - d.slope_a) + " more per " + words.per);
    }
    if (d.verdict_b == "retained" && d.retained_peak_b > d.retained_peak_a) {
      add(RegressionKind::kRetained, d.retained_peak_b - d.retained_peak_a,
          "retains " + signed_bytes(static_cast<double>(d.retained_peak_b - d.retained_peak_a)) + " more");
    }
  }
  if (d.unlisted_a) {
    // Its peak in A is anywhere up to A's largest left-out peak: only what B's exceeds that by is
    // sure to have grown.
    const std::int64_t at_least = d.peak_live_b - d.unlisted_peak_at_most;
    if (at_least > 0) {
      add(RegressionKind::kPeak, at_least,
          "peak at least " + signed_bytes(static_cast<double>(at_least)) + " (not listed in A, where it peaked at most " +
              format_bytes(static_cast<double>(d.unlisted_peak_at_most)) + ")");
    }
  } else if (in_b && d.peak_live_b > d.peak_live_a) {
    add(RegressionKind::kPeak, d.peak_live_b - d.peak_live_a,
        "peak " + signed_bytes(static_cast<double>(d.peak_live_b - d.peak_live_a)));
  }
  // A side's unknown figures (not listed there) count for no change of their own.
  const auto sure_change = [&](std::int64_t a, std::int64_t b) {
    if (d.unlisted_a) return static_cast<double>(std::max<std::int64_t>(0, b - d.unlisted_peak_at_most));
    if (d.unlisted_b) return static_cast<double>(std::max<std::int64_t>(0, a - d.unlisted_peak_at_most));
    return std::abs(static_cast<double>(b - a));
  };
  d.magnitude = std::max({sure_change(d.peak_live_a, d.peak_live_b), sure_change(d.final_live_a, d.final_live_b),
                          std::abs(static_cast<double>(d.leaked_b - d.leaked_a)),
                          std::abs(static_cast<double>(d.retained_peak_b - d.retained_peak_a)),
                          std::abs(d.slope_b - d.slope_a)});
}

}  // namespace

const char* to_string(RegressionKind kind) {
  switch (kind) {
    case RegressionKind::kLeak: return "leak";
    case RegressionKind::kGrowth: return "growth";
    case RegressionKind::kRetained: return "retained";
    case RegressionKind::kPeak: return "peak";
  }
  return "peak";
}

void append_frame_loose_key(std::string& key, std::string_view function, std::string_view module) {
  key += function;
  key += '|';
  key += module;
  key += '\n';
}

void append_frame_key(std::string& key, std::string_view function, std::string_view module, std::string_view file,
                      std::int64_t line, std::int64_t column, std::int64_t end_column) {
  key += function;
  key += '|';
  key += module;
  key += '|';
  key += file_name(file);
  key += ':';
  key += std::to_string(line);
  if (column > 0) {
    key += ':';
    key += std::to_string(column);
    key += '-';
    key += std::to_string(end_column);
  }
  key += '\n';
}

std::string site_key(const std::vector<Frame>& frames) {
  std::string key;
  for (const Frame& f : frames) append_frame_key(key, f.function, f.module, f.file, f.line, f.column, f.end_column);
  return key;
}

std::string site_line_key(const std::vector<Frame>& frames) {
  std::string key;
  for (const Frame& f : frames) append_frame_key(key, f.function, f.module, f.file, f.line);
  return key;
}

std::string site_loose_key(const std::vector<Frame>& frames) {
  std::string key;
  for (const Frame& f : frames) append_frame_loose_key(key, f.function, f.module);
  return key;
}

std::string site_physical_key(const std::vector<Frame>& frames) {
  std::string key;
  for (const Frame& f : frames) {
    if (f.kind != FrameKind::kInlined) append_frame_loose_key(key, f.function, f.module);
  }
  return key;
}

std::vector<Regression> Diff::regressions() const {
  std::vector<Regression> all;
  for (const SiteDelta& s : sites) all.insert(all.end(), s.regressions.begin(), s.regressions.end());
  return all;
}

namespace {

// A site's label with the column of the frame it names ("serve.py:9 in forward" -> "serve.py:9:35
// in forward", "main (calls.cc:22)" -> "main (calls.cc:22:41)"), read from the site's key; the label
// as it was when that frame has no column there.
std::string label_with_column(std::string_view key, const std::string& label) {
  for (std::size_t begin = 0; begin < key.size();) {
    std::size_t end = key.find('\n', begin);
    if (end == std::string_view::npos) end = key.size();
    const std::string_view line = key.substr(begin, end - begin);
    begin = end + 1;
    // function|module|file:line:column-end_column
    const std::string_view function = line.substr(0, line.find('|'));
    const std::string_view place = line.substr(line.rfind('|') + 1);
    const std::size_t column_at = place.rfind(':');
    if (column_at == std::string_view::npos || place.find('-', column_at) == std::string_view::npos ||
        place.find(':') == column_at) {
      continue;
    }
    const std::string_view file_line = place.substr(0, column_at);
    const std::string_view column = place.substr(column_at + 1, place.find('-', column_at) - column_at - 1);
    // A native site's label, "function (file:line)": the column goes inside.
    const std::string native_tail = "(" + std::string(file_line) + ")";
    if (label.ends_with(native_tail)) return label.substr(0, label.size() - 1) + ":" + std::string(column) + ")";
    const std::string tail = " in " + std::string(function);
    if (!label.ends_with(tail)) continue;
    const std::string_view shown = std::string_view(label).substr(0, label.size() - tail.size());
    if (!shown.ends_with(file_line)) continue;
    return std::string(shown) + ":" + std::string(column) + tail;
  }
  return label;
}

// Deltas whose labels read alike (two calls on one line: their frames part only in the columns) are labelled with the column of the call each is, where that tells them apart.
void label_calls_apart(std::vector<SiteDelta>& sites, const std::unordered_map<std::string_view, std::size_t>& index) {
  std::vector<std::string_view> key_of(sites.size());
  for (const auto& [key, position] : index) key_of[position] = key;
  std::unordered_map<std::string, std::vector<std::size_t>> by_label;
  for (std::size_t i = 0; i < sites.size(); ++i) by_label[sites[i].label].push_back(i);
  for (const auto& [label, positions] : by_label) {
    if (positions.size() < 2) continue;
    std::vector<std::string> labels;
    for (const std::size_t i : positions) labels.push_back(label_with_column(key_of[i], label));
    if (std::all_of(labels.begin(), labels.end(), [&](const std::string& l) { return l == labels.front(); })) continue;
    for (std::size_t k = 0; k < positions.size(); ++k) sites[positions[k]].label = labels[k];
  }
}

}  // namespace

Diff diff_reports(const ReportSummary& a, const ReportSummary& b, bool force) {
  // Two runs of one command are of one program, whatever each report names it (an older tleak
  // named a Python program by its interpreter, python3.11; a newer one by its script), unless each
  // recorded another of its processes (--record, --record-fork).
  const bool same_command =
      !a.command.empty() && a.command == b.command && a.record == b.record && a.forked_copy == b.forked_copy;
  if (a.scenario != b.scenario && !same_command && !force) {
    throw DiffError("the reports are of different scenarios or programs ('" + a.scenario + "' and '" + b.scenario +
                    "'); pass --force to compare them anyway");
  }
  // A worker and the process that forked it run one program's code, but not one program's work.
  if (a.forked_copy != b.forked_copy && !force) {
    throw DiffError(std::string("report ") + (a.forked_copy ? "A" : "B") +
                    " is of a forked copy of its command's process (--record-fork), the other of a process "
                    "started anew; pass --force to compare them anyway");
  }
  Diff diff;
  diff.scenario_a = a.scenario;
  diff.scenario_b = b.scenario;
  diff.variant_a = a.variant;
  diff.variant_b = b.variant;
  diff.forced = (a.scenario != b.scenario && !same_command) || a.forked_copy != b.forked_copy;
  diff.words_a = a.words;
  diff.words_b = b.words;

  std::unordered_map<std::string_view, std::size_t> index;  // key -> position in diff.sites
  index.reserve(a.sites.size() + b.sites.size());
  diff.sites.reserve(a.sites.size() + b.sites.size());
  const auto slot = [&](const SiteSummary& s) -> SiteDelta& {
    auto [it, fresh] = index.try_emplace(s.key, diff.sites.size());
    if (fresh) {
      diff.sites.emplace_back();
      diff.sites.back().label = s.label;
    }
    return diff.sites[it->second];
  };
  // Adds a site's figures to side A or B of its delta (sites with equal frames are summed, and the
  // merged verdict is the worst of them).
  const auto add_to = [&](SiteDelta& d, const SiteSummary& s, bool side_b) {
    std::string& verdict = side_b ? d.verdict_b : d.verdict_a;
    if (verdict.empty() || severity(s.verdict) > severity(verdict)) verdict = s.verdict;
    (side_b ? d.peak_live_b : d.peak_live_a) += s.peak_live_bytes;
    (side_b ? d.final_live_b : d.final_live_a) += s.final_live_bytes;
    (side_b ? d.leaked_b : d.leaked_a) += s.leaked_bytes;
    (side_b ? d.slope_b : d.slope_a) += s.slope_bytes_per_iteration;
    (side_b ? d.retained_peak_b : d.retained_peak_a) += s.retained_peak_bytes;
  };
  for (const SiteSummary& s : a.sites) add_to(slot(s), s, false);
  // One of the A sites of each delta A made (they share their keys: equal frames).
  std::vector<const SiteSummary*> a_site(diff.sites.size(), nullptr);
  for (const SiteSummary& s : a.sites) a_site[index.at(s.key)] = &s;
  // B's sites by exact frames first.
  std::vector<const SiteSummary*> unmatched_b;
  for (const SiteSummary& s : b.sites) {
    const auto it = index.find(s.key);
    if (it != index.end()) {
      add_to(diff.sites[it->second], s, true);
    } else {
      unmatched_b.push_back(&s);
    }
  }
  // What is left matches, pass by pass, an A site left alone when each is the only one of its kind
  // left on its side: by frames without columns (a report that gave none: there, the sites of one
  // line's calls were one site, which takes all of B's of that line), by frames without lines (the
  // code moved), then by the frames not inlined (a report written before tleak named inlined
  // frames, or a build that inlined other calls). Else it is new.
  for (std::string SiteSummary::*key : {&SiteSummary::line_key, &SiteSummary::loose_key, &SiteSummary::physical_key}) {
    std::unordered_map<std::string_view, std::vector<std::size_t>> a_alone;  // key -> A-only deltas
    for (std::size_t position = 0; position < a_site.size(); ++position) {
      if (diff.sites[position].verdict_b.empty()) a_alone[a_site[position]->*key].push_back(position);
    }
    std::unordered_map<std::string_view, std::size_t> b_alone;
    for (const SiteSummary* s : unmatched_b) ++b_alone[s->*key];
    std::vector<const SiteSummary*> still_unmatched;
    for (const SiteSummary* s : unmatched_b) {
      const auto candidates = a_alone.find(s->*key);
      const bool one_call_site_in_a = key == &SiteSummary::line_key && candidates != a_alone.end() &&
                                      !a_site[candidates->second.front()]->has_columns;
      if (candidates != a_alone.end() && candidates->second.size() == 1 &&
          (b_alone[s->*key] == 1 || one_call_site_in_a)) {
        add_to(diff.sites[candidates->second.front()], *s, true);
      } else {
        still_unmatched.push_back(s);
      }
    }
    unmatched_b = std::move(still_unmatched);
  }
  for (const SiteSummary* s : unmatched_b) {
    auto [it, fresh] = index.try_emplace(s->key, diff.sites.size());
    if (fresh) {
      diff.sites.emplace_back();
      diff.sites.back().label = s->label;
    }
    add_to(diff.sites[it->second], *s, true);
  }
  label_calls_apart(diff.sites, index);
  diff.listed_a = {a.sites.size(), a.unlisted_sites, a.unlisted_largest_peak};
  diff.listed_b = {b.sites.size(), b.unlisted_sites, b.unlisted_largest_peak};
  for (SiteDelta& d : diff.sites) {
    const bool in_a = !d.verdict_a.empty(), in_b = !d.verdict_b.empty();
    // Listed on one side only, while the other report left bounded sites out: it may be one of them.
    d.unlisted_a = !in_a && a.unlisted_sites > 0;
    d.unlisted_b = !in_b && b.unlisted_sites > 0;
    if (d.unlisted_a) d.unlisted_peak_at_most = a.unlisted_largest_peak;
    if (d.unlisted_b) d.unlisted_peak_at_most = b.unlisted_largest_peak;
    compare(d, d.label, diff.words_b, b.leaks_judged);
    if (d.unlisted_a || d.unlisted_b) {
      d.status = d.unlisted_a ? "unlisted_a" : "unlisted_b";
      ++diff.unlisted_sites;
      if (d.unlisted_b && severity(d.verdict_a) > 0) {
        d.improvements.push_back(d.label + ": " + d.verdict_a + " -> not listed in B (bounded there, if anywhere)");
      }
    } else if (!in_a) {
      d.status = "new";
      ++diff.new_sites;
    } else if (!in_b) {
      d.status = "gone";
      ++diff.gone_sites;
      if (severity(d.verdict_a) > 0) d.improvements.push_back(d.label + ": " + d.verdict_a + " site gone");
    } else if (d.magnitude > 0 || d.verdict_a != d.verdict_b) {
      d.status = "changed";
      ++diff.changed_sites;
    } else {
      d.status = "unchanged";
    }
  }
  std::stable_sort(diff.sites.begin(), diff.sites.end(), [](const SiteDelta& x, const SiteDelta& y) {
    const bool xr = !x.regressions.empty(), yr = !y.regressions.empty();
    if (xr != yr) return xr;
    return x.magnitude > y.magnitude;
  });
  diff.totals = {a.peak_live_bytes, b.peak_live_bytes, a.final_live_bytes, b.final_live_bytes, a.leaked_bytes,
                 b.leaked_bytes, a.retained_peak_bytes, b.retained_peak_bytes, a.slope_bytes_per_iteration,
                 b.slope_bytes_per_iteration, a.retained_measured, b.retained_measured, a.leaks_judged, b.leaks_judged};
  return diff;
}

Diff diff_report_files(const std::string& a, const std::string& b, bool force) {
  // The two reads are independent and take most of the time: one on another core.
  auto later = std::async(std::launch::async, [&] { return read_report_summary(b); });
  const ReportSummary first = read_report_summary(a);
  const ReportSummary second = later.get();
  return diff_reports(first, second, force);
}

namespace {

nlohmann::json listing(const Listing& l) {
  return {{"sites", l.sites}, {"left_out", l.left_out}, {"left_out_largest_peak_bytes", l.left_out_largest_peak}};
}

}  // namespace

nlohmann::json to_json(const Diff& d) {
  const DiffTotals& t = d.totals;
  // A figure a side did not measure is null, not 0 B: leaks where it made no exit scan, dead-held
  // bytes where it saw no uses (a program's run).
  const auto known = [](bool known_a, std::int64_t a, bool known_b, std::int64_t b) {
    return nlohmann::json{{"a", known_a ? nlohmann::json(a) : nlohmann::json(nullptr)},
                          {"b", known_b ? nlohmann::json(b) : nlohmann::json(nullptr)}};
  };
  const auto leaked = [&](std::int64_t a, std::int64_t b) { return known(t.leaks_judged_a, a, t.leaks_judged_b, b); };
  const auto retained = [&](std::int64_t a, std::int64_t b) {
    return known(t.retained_measured_a, a, t.retained_measured_b, b);
  };
  nlohmann::json sites = nlohmann::json::array();
  for (const SiteDelta& s : d.sites) {
    nlohmann::json regressions = nlohmann::json::array();
    for (const Regression& r : s.regressions) regressions.push_back({{"kind", to_string(r.kind)}, {"what", r.what}, {"bytes", r.bytes}});
    // A side that does not list the site has no peak or final figure of it: null, and at most
    // unlisted_peak_at_most.
    const auto pair = [&](std::int64_t a, std::int64_t b) {
      return nlohmann::json{{"a", s.unlisted_a ? nlohmann::json(nullptr) : nlohmann::json(a)},
                            {"b", s.unlisted_b ? nlohmann::json(nullptr) : nlohmann::json(b)}};
    };
    sites.push_back({{"status", s.status},
                     {"label", s.label},
                     {"verdict", {{"a", s.verdict_a}, {"b", s.verdict_b}}},
                     {"peak_live_bytes", pair(s.peak_live_a, s.peak_live_b)},
                     {"final_live_bytes", pair(s.final_live_a, s.final_live_b)},
                     {"unlisted_peak_at_most",
                      s.unlisted_a || s.unlisted_b ? nlohmann::json(s.unlisted_peak_at_most) : nlohmann::json(nullptr)},
                     {"leaked_bytes", leaked(s.leaked_a, s.leaked_b)},
                     {"growth_bytes_per_iteration", {{"a", s.slope_a}, {"b", s.slope_b}}},
                     {"retained_peak_bytes", retained(s.retained_peak_a, s.retained_peak_b)},
                     {"regressions", regressions},
                     {"improvements", s.improvements}});
  }
  return {{"schema", kDiffSchema},
          {"a", {{"scenario", d.scenario_a}, {"variant", d.variant_a}}},
          {"b", {{"scenario", d.scenario_b}, {"variant", d.variant_b}}},
          {"forced", d.forced},
          {"totals",
           {{"peak_live_bytes", {{"a", t.peak_live_a}, {"b", t.peak_live_b}}},
            {"final_live_bytes", {{"a", t.final_live_a}, {"b", t.final_live_b}}},
            {"leaked_bytes", leaked(t.leaked_a, t.leaked_b)},
            {"retained_peak_bytes", retained(t.retained_peak_a, t.retained_peak_b)},
            {"retained_measured", {{"a", t.retained_measured_a}, {"b", t.retained_measured_b}}},
            {"leaks_judged", {{"a", t.leaks_judged_a}, {"b", t.leaks_judged_b}}},
            {"growth_bytes_per_iteration", {{"a", t.slope_a}, {"b", t.slope_b}}}}},
          {"listed", {{"a", listing(d.listed_a)}, {"b", listing(d.listed_b)}}},
          {"counts", {{"new", d.new_sites}, {"gone", d.gone_sites}, {"changed", d.changed_sites}, {"unlisted", d.unlisted_sites},
                      {"regressions", d.regressions().size()}}},
          {"sites", sites}};
}

std::string render_text(const Diff& d, std::size_t max_sites) {
  std::ostringstream out;
  // A slope's unit: "/iter", or a program's sampling period ("/100 ms").
  const auto per = [](const StepWords& w) { return "/" + w.per_abbreviated; };
  const auto line = [&](const char* name, double a, double b, bool per_step = false) {
    out << "  " << name << ": " << format_bytes(a) << (per_step ? per(d.words_a) : "") << " -> " << format_bytes(b)
        << (per_step ? per(d.words_b) : "") << " (" << signed_bytes(b - a) << ")\n";
  };
  out << "tleak diff: " << d.scenario_a << " (" << d.variant_a << ") -> " << d.scenario_b << " (" << d.variant_b << ")\n";
  if (d.forced) out << "note: different scenarios or programs, compared because of --force\n";
  if (d.words_a.per != d.words_b.per) {
    out << "note: the runs' growth is per different steps (A per " << d.words_a.per << ", B per " << d.words_b.per
        << "): slopes compare only as figures\n";
  }
  const DiffTotals& t = d.totals;
  out << "totals:\n";
  line("peak live", static_cast<double>(t.peak_live_a), static_cast<double>(t.peak_live_b));
  // A report's final live bytes are those of its last sample (before a program's exit, or a
  // scenario's teardown): said so, not "final", which reads as what was left at the end.
  const std::string last = "live at last " + (d.words_a.one == d.words_b.one ? d.words_b.one : std::string("sample"));
  line(last.c_str(), static_cast<double>(t.final_live_a), static_cast<double>(t.final_live_b));
  // A figure one run did not measure: what each side knows, and why the other does not.
  const auto line_or = [&](const char* name, bool known_a, std::int64_t a, bool known_b, std::int64_t b,
                           const char* unknown, const char* why) {
    if (known_a && known_b) return line(name, static_cast<double>(a), static_cast<double>(b));
    out << "  " << name << ": " << bytes_or(known_a, a, unknown) << " -> " << bytes_or(known_b, b, unknown) << " (" << why
        << ")\n";
  };
  // A program that ended without an exit scan left its blocks unjudged; a program's run sees no
  // uses of its blocks, so its dead-but-held bytes are not measured.
  line_or("leaked", t.leaks_judged_a, t.leaked_a, t.leaks_judged_b, t.leaked_b, "not judged",
          "no exit scan: the report's notes say why");
  line_or("retained peak", t.retained_measured_a, t.retained_peak_a, t.retained_measured_b, t.retained_peak_b,
          "not measured", "no uses seen: tleak does not see a program's");
  line("growth", t.slope_a, t.slope_b, true);
  const auto regressions = d.regressions();
  for (const auto& [side, listing] : {std::pair{"A", d.listed_a}, std::pair{"B", d.listed_b}}) {
    if (listing.left_out == 0) continue;
    out << "note: " << side << " lists " << counted(listing.sites, "site", "sites") << " and leaves out "
        << counted(listing.left_out, "smaller bounded one", "smaller bounded ones")
        << (listing.left_out == 1 ? " (at most " : " (each at most ")
        << format_bytes(static_cast<double>(listing.left_out_largest_peak))
        << " at peak): a site the other lists may be among them, \"not listed in " << side
        << "\" below (tleak run --max-sites lists more)\n";
  }
  out << "sites: " << d.changed_sites << " changed, " << d.new_sites << " new, " << d.gone_sites << " gone";
  if (d.unlisted_sites > 0) out << ", " << d.unlisted_sites << " listed in one run only";
  out << "; " << counted(regressions.size(), "regression", "regressions") << "\n";
  std::size_t shown = 0;
  for (const SiteDelta& s : d.sites) {
    if (s.status == "unchanged" || shown++ >= max_sites) continue;
    const std::string status = s.unlisted_a ? "not listed in A" : s.unlisted_b ? "not listed in B" : s.status;
    out << "  [" << status << "] " << s.label << "\n";
    if (s.verdict_a != s.verdict_b) {
      out << "      verdict " << (s.verdict_a.empty() ? "-" : s.verdict_a) << " -> " << (s.verdict_b.empty() ? "-" : s.verdict_b) << "\n";
    }
    const std::string at_most = "at most " + format_bytes(static_cast<double>(s.unlisted_peak_at_most));
    out << "      peak " << (s.unlisted_a ? at_most : format_bytes(static_cast<double>(s.peak_live_a))) << " -> "
        << (s.unlisted_b ? at_most : format_bytes(static_cast<double>(s.peak_live_b))) << ", leaked "
        << bytes_or(t.leaks_judged_a, s.leaked_a, "not judged") << " -> " << bytes_or(t.leaks_judged_b, s.leaked_b, "not judged")
        << "\n";
    for (const Regression& r : s.regressions) out << "      regression (" << to_string(r.kind) << "): " << r.what << "\n";
    for (const std::string& i : s.improvements) out << "      improvement: " << i << "\n";
  }
  return out.str();
}

bool fails(const Diff& diff, const FailPolicy& policy) {
  const std::int64_t limit = policy.max_increase.value_or(0);
  for (const Regression& r : diff.regressions()) {
    const bool watched = std::find(policy.kinds.begin(), policy.kinds.end(), r.kind) != policy.kinds.end();
    if (watched && ((r.verdict_worse && !policy.max_increase) || r.bytes > limit)) return true;
  }
  if (policy.max_increase && diff.totals.peak_live_b - diff.totals.peak_live_a > *policy.max_increase) return true;
  // A gate on leaks does not pass a run whose leaks were not looked for.
  const bool leaks_watched = std::find(policy.kinds.begin(), policy.kinds.end(), RegressionKind::kLeak) != policy.kinds.end();
  return leaks_watched && !diff.totals.leaks_judged_b;
}

FailPolicy fail_policy(const std::vector<std::string>& kinds, const std::string& max_increase) {
  FailPolicy policy;
  for (const std::string& kind : kinds) {
    if (kind == "leak" || kind == "any") policy.kinds.push_back(RegressionKind::kLeak);
    if (kind == "growth" || kind == "any") policy.kinds.push_back(RegressionKind::kGrowth);
    if (kind == "retained" || kind == "any") policy.kinds.push_back(RegressionKind::kRetained);
  }
  if (!max_increase.empty()) policy.max_increase = parse_size(max_increase);
  return policy;
}

std::int64_t parse_size(const std::string& text) {
  std::size_t used = 0;
  double number = 0;
  try {
    number = std::stod(text, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument("'" + text + "' is not a size (for example 1MiB, 512KiB, 4096)");
  }
  std::string unit = text.substr(used);
  unit.erase(std::remove_if(unit.begin(), unit.end(), [](unsigned char c) { return std::isspace(c); }), unit.end());
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1}, {"b", 1}, {"k", 1024}, {"kib", 1024}, {"kb", 1e3}, {"m", 1 << 20}, {"mib", 1 << 20}, {"mb", 1e6},
      {"g", 1 << 30}, {"gib", 1 << 30}, {"gb", 1e9}};
  for (const auto& [name, factor] : kUnits) {
    if (unit == name) {
      if (number < 0 || !std::isfinite(number)) break;
      return static_cast<std::int64_t>(number * factor);
    }
  }
  throw std::invalid_argument("'" + text + "' is not a size (for example 1MiB, 512KiB, 4096)");
}

}  // namespace tleak::diagnosis
