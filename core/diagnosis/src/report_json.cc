#include "tleak/diagnosis/report_json.h"

#include "tleak/diagnosis/report_summary.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "tleak/agent/protocol.h"

// An absent value (a plateau not reached, memcheck not run) is null in JSON. nlohmann-json 3.11 has
// no std::optional support of its own; this is the serializer its documentation gives for it.
NLOHMANN_JSON_NAMESPACE_BEGIN
template <typename T>
struct adl_serializer<std::optional<T>> {
  static void to_json(json& j, const std::optional<T>& value) {
    if (value) {
      j = *value;
    } else {
      j = nullptr;
    }
  }
  static void from_json(const json& j, std::optional<T>& value) {
    if (j.is_null()) {
      value.reset();
    } else {
      value = j.get<T>();
    }
  }
};
NLOHMANN_JSON_NAMESPACE_END

namespace tleak {

// Frames live in allocators/; their JSON form is defined here, beside the report's.
// A frame's columns are written only where known (a Python frame's): reports stay as they were for
// every native frame, and a report without them reads as before.
void to_json(nlohmann::json& j, const Frame& f) {
  j = {{"function", f.function}, {"module", f.module}, {"offset", f.module_offset},
       {"file", f.file},         {"line", f.line},     {"kind", frame_kind_name(f.kind)}};
  if (f.column > 0) j["column"] = f.column;
  if (f.column > 0 && f.end_column > f.column) j["end_column"] = f.end_column;
}
void from_json(const nlohmann::json& j, Frame& f) {
  j.at("function").get_to(f.function);
  j.at("module").get_to(f.module);
  j.at("offset").get_to(f.module_offset);
  j.at("file").get_to(f.file);
  j.at("line").get_to(f.line);
  f.kind = diagnosis::frame_kind_in_report(j.at("kind").get_ref<const std::string&>());
  // Columns as the agent gives them: from 1 up to a line of a megabyte and one past its end.
  constexpr std::int64_t kMaxColumn = diagnosis::kMaxReportColumn;
  static_assert(kMaxColumn == std::int64_t{agent::kMaxPythonColumn} + 1);
  f.column = f.end_column = 0;
  if (const auto column = j.find("column"); column != j.end()) {
    const auto value = column->get<std::int64_t>();
    if (value < 1 || value > kMaxColumn) throw diagnosis::ReportError("malformed report: a frame's column out of range");
    f.column = static_cast<int>(value);
  }
  if (const auto end = j.find("end_column"); end != j.end()) {
    const auto value = end->get<std::int64_t>();
    if (f.column == 0 || value <= f.column || value > kMaxColumn) {
      throw diagnosis::ReportError("malformed report: a frame's end_column not past its column");
    }
    f.end_column = static_cast<int>(value);
  }
}

namespace diagnosis {

FrameKind frame_kind_in_report(std::string_view name, std::string_view where) {
  FrameKind kind = FrameKind::kNative;
  if (!frame_kind_of_name(name, &kind)) {
    std::string message = "malformed report: a frame of unknown kind \"";
    message.append(name).append("\"");
    if (!where.empty()) message.append(" in ").append(where);
    throw ReportError(message.append(" (native, inlined or python)"));
  }
  return kind;
}

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(GrowthFigures, assessed, slope_bytes_per_iteration, confidence,
                                   tail_slope_bytes_per_iteration, rise_bytes, samples,
                                   first_iteration, last_iteration, plateau_iteration)
// With defaults: reports written before `resolution_events` (then `resolution_ops`) still read.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RetainedFigures, measured, drag_ops_max, drag_iterations_max,
                                   drag_ops_mean, drag_share, peak_dead_bytes, peak_if_freed_at_last_use_bytes,
                                   resolution_events)
// With defaults: a report written before an option existed was judged without it.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ClassifierOptions, warmup_fraction, min_warmup_iterations,
                                   min_growth_samples, growth_min_bytes_per_iteration,
                                   growth_min_confidence, growth_min_trend_z, growth_min_rise_bytes, tail_fraction,
                                   tail_min_slope_ratio, retained_min_bytes, retained_min_drag_share,
                                   retained_min_drag_iterations, retained_min_drag_ops, leak_min_bytes)
// Every field required, as the schema says (a report written before `focus`, `python_main_code`,
// `record` and `forked_copy` is given them as null or false before it is read: report_from_json).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ProgramInfo, command, pid, record, forked_copy, exit_status, exit_signal, stopped_by, clock,
                                   sample_seconds, exit_scan, exit_scan_root_bytes, snapshot, focus,
                                   python_main_code)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RunInfo, scenario, variant, mode, iterations, scale,
                                                stack_depth, tleak_version, started_at,
                                                duration_seconds, host, under_valgrind, tracked,
                                                valgrind_annotations, program)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(AllocatorTotals, name, space, peak_live_bytes, peak_in_use_bytes,
                                   peak_reserved_bytes, peak_unused_reserved_bytes,
                                   final_live_bytes, leaked_bytes, leaked_blocks, allocate_calls,
                                   deallocate_calls)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Totals, peak_live_bytes, peak_reserved_bytes,
                                                final_live_bytes, leaked_bytes, leaked_blocks,
                                                reachable_at_exit_bytes, reachable_at_exit_blocks,
                                                unjudged_at_exit_bytes, unjudged_at_exit_blocks,
                                                allocations, frees, allocators)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Summary, verdict, sentence, leak_sites, growth_sites,
                                   retained_sites, bounded_sites)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TimelineSample, iteration, clock, live_bytes, live_blocks,
                                   allocator_live_bytes, allocator_reserved_bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Timeline, stride, samples, after_teardown)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MemcheckFigures, lost_bytes, lost_blocks, possibly_lost_bytes,
                                   still_reachable_bytes, suppressed_bytes, definitely_lost_bytes,
                                   indirectly_lost_bytes, errors, tleak_host_leaked_bytes,
                                   tleak_device_leaked_bytes, agrees, agreement)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(OmittedSites, sites, allocations, frees, bytes_allocated,
                                   largest_peak_live_bytes, final_live_bytes, reachable_at_exit_bytes,
                                   unjudged_at_exit_bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SiteReport, id, verdict, reason, label, allocator,
                                                frames, allocations, frees, bytes_allocated,
                                                peak_live_bytes, final_live_bytes, leaked_bytes,
                                                leaked_blocks, reachable_at_exit_bytes,
                                                reachable_at_exit_blocks, unjudged_at_exit_bytes,
                                                unjudged_at_exit_blocks, growth, retained,
                                                live_bytes_at_samples)

// Everything but the sites (the file writer writes those itself).
nlohmann::json to_json_without_sites(const Report& r) {
  return {{"schema", r.schema},
          {"run", r.run},
          {"summary", r.summary},
          {"totals", r.totals},
          {"total_growth", r.total_growth},
          {"total_retained", r.total_retained},
          {"thresholds", r.thresholds},
          {"timeline", r.timeline},
          {"sites", nlohmann::json::array()},
          {"omitted_sites", r.omitted_sites},
          {"notes", r.notes},
          {"memcheck", r.memcheck}};
}

nlohmann::json to_json(const SiteReport& site) { return site; }

nlohmann::json to_json(const Report& r) {
  nlohmann::json j = to_json_without_sites(r);
  j["sites"] = r.sites;
  return j;
}

namespace {

template <class Integer>
void append_integer(std::string& out, Integer value) {
  char digits[24];
  const auto [end, error] = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, end);
}

// A JSON string: quotes, backslashes and control characters escaped; bytes that are not UTF-8
// become U+FFFD, so a file name in another encoding never makes the report invalid JSON.
void append_string(std::string& out, const std::string& text) {
  out += '"';
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else {
      const std::size_t length = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
      bool valid = length > 0 && i + length <= n;
      for (std::size_t k = 1; valid && k < length; ++k) valid = (s[i + k] & 0xc0) == 0x80;
      if (valid) {
        out.append(text, i, length);
        i += length;
      } else {
        out += "\xef\xbf\xbd";
        ++i;
      }
    }
  }
  out += '"';
}

// One frame, keys in the order nlohmann writes them (sorted), so both writers agree byte for byte.
void append_frame(std::string& out, const Frame& f) {
  out += '{';
  if (f.column > 0) {
    out += "\"column\":";
    append_integer(out, f.column);
    out += ',';
    if (f.end_column > f.column) {
      out += "\"end_column\":";
      append_integer(out, f.end_column);
      out += ',';
    }
  }
  out += "\"file\":";
  append_string(out, f.file);
  out += ",\"function\":";
  append_string(out, f.function);
  out += ",\"kind\":";
  append_string(out, frame_kind_name(f.kind));
  out += ",\"line\":";
  append_integer(out, f.line);
  out += ",\"module\":";
  append_string(out, f.module);
  out += ",\"offset\":";
  append_integer(out, f.module_offset);
  out += '}';
}

// A number as nlohmann writes it (shortest round trip, "0.0" for zero, null if not finite).
void append_double(std::string& out, double value) { out += nlohmann::json(value).dump(); }

// The members of one JSON object, written straight into `out` in the layout nlohmann's dump
// gives (members on their own lines at `depth` when indenting, else none).
class ObjectWriter {
 public:
  ObjectWriter(std::string& out, int indent, int depth) : out_(out), indent_(indent), depth_(depth) { out_ += '{'; }
  std::string& key(const char* name) {
    if (!first_) out_ += ',';
    first_ = false;
    if (indent_ >= 0) {
      out_ += '\n';
      out_.append(static_cast<std::size_t>(indent_ * (depth_ + 1)), ' ');
    }
    out_ += '"';
    out_ += name;
    out_ += indent_ >= 0 ? "\": " : "\":";
    return out_;
  }
  template <class Integer>
  void integer(const char* name, Integer value) { append_integer(key(name), value); }
  void number(const char* name, double value) { append_double(key(name), value); }
  void boolean(const char* name, bool value) { key(name) += value ? "true" : "false"; }
  void text(const char* name, const std::string& value) { append_string(key(name), value); }
  void close() {
    if (!first_ && indent_ >= 0) {
      out_ += '\n';
      out_.append(static_cast<std::size_t>(indent_ * depth_), ' ');
    }
    out_ += '}';
  }

 private:
  std::string& out_;
  int indent_, depth_;
  bool first_ = true;
};

// The JSON of the frames at one address: the functions inlined there, innermost first, then the
// one they were inlined into (Symbolizer::append_frames gives every address all of them).
struct FrameRunText {
  std::string text;
  std::size_t frames = 0;
};

// Where the run of frames at frames[i]'s address ends (its last frame: the first not inlined).
std::size_t run_end(const std::vector<Frame>& frames, std::size_t i) {
  std::size_t end = i;
  while (end + 1 < frames.size() && frames[end].kind == FrameKind::kInlined && frames[end + 1].address == frames[i].address) ++end;
  return end;
}

// A site's JSON written directly, members in nlohmann's (sorted) order: a program's report holds a
// thousand sites, and building each as a tree of JSON nodes to dump it cost more than the text.
// Frames shared by many sites are written once, each address's run of them together.
void append_site(std::string& out, const SiteReport& site, int indent,
                 std::unordered_map<std::uintptr_t, FrameRunText>& frame_text) {
  ObjectWriter o(out, indent, 0);
  o.integer("allocations", site.allocations);
  o.text("allocator", site.allocator);
  o.integer("bytes_allocated", site.bytes_allocated);
  o.integer("final_live_bytes", site.final_live_bytes);
  std::string& frames = o.key("frames");
  frames += '[';
  for (std::size_t i = 0; i < site.frames.size(); ++i) {
    if (i > 0) frames += ',';
    const Frame& f = site.frames[i];
    if (f.address == 0) {
      append_frame(frames, f);
      continue;
    }
    const std::size_t end = run_end(site.frames, i);
    auto [it, fresh] = frame_text.try_emplace(f.address);
    if (fresh) {
      for (std::size_t k = i; k <= end; ++k) {
        if (k > i) it->second.text += ',';
        append_frame(it->second.text, site.frames[k]);
      }
      it->second.frames = end - i + 1;
    }
    if (it->second.frames != end - i + 1) {
      // Not the run the address had before (a stack cut within it): this site's own frames.
      for (std::size_t k = i; k <= end; ++k) {
        if (k > i) frames += ',';
        append_frame(frames, site.frames[k]);
      }
    } else {
      frames += it->second.text;
    }
    i = end;
  }
  frames += ']';
  o.integer("frees", site.frees);
  {
    const GrowthFigures& g = site.growth;
    ObjectWriter growth(o.key("growth"), indent, 1);
    growth.boolean("assessed", g.assessed);
    growth.number("confidence", g.confidence);
    growth.integer("first_iteration", g.first_iteration);
    growth.integer("last_iteration", g.last_iteration);
    if (g.plateau_iteration) {
      growth.integer("plateau_iteration", *g.plateau_iteration);
    } else {
      growth.key("plateau_iteration") += "null";
    }
    growth.integer("rise_bytes", g.rise_bytes);
    growth.integer("samples", g.samples);
    growth.number("slope_bytes_per_iteration", g.slope_bytes_per_iteration);
    growth.number("tail_slope_bytes_per_iteration", g.tail_slope_bytes_per_iteration);
    growth.close();
  }
  o.integer("id", site.id);
  o.text("label", site.label);
  o.integer("leaked_blocks", site.leaked_blocks);
  o.integer("leaked_bytes", site.leaked_bytes);
  std::string& samples = o.key("live_bytes_at_samples");
  samples += '[';
  for (std::size_t i = 0; i < site.live_bytes_at_samples.size(); ++i) {
    if (i > 0) samples += ',';
    append_integer(samples, site.live_bytes_at_samples[i]);
  }
  samples += ']';
  o.integer("peak_live_bytes", site.peak_live_bytes);
  o.integer("reachable_at_exit_blocks", site.reachable_at_exit_blocks);
  o.integer("reachable_at_exit_bytes", site.reachable_at_exit_bytes);
  o.text("reason", site.reason);
  {
    const RetainedFigures& r = site.retained;
    ObjectWriter retained(o.key("retained"), indent, 1);
    retained.integer("drag_iterations_max", r.drag_iterations_max);
    retained.integer("drag_ops_max", r.drag_ops_max);
    retained.number("drag_ops_mean", r.drag_ops_mean);
    retained.number("drag_share", r.drag_share);
    retained.boolean("measured", r.measured);
    retained.integer("peak_dead_bytes", r.peak_dead_bytes);
    retained.integer("peak_if_freed_at_last_use_bytes", r.peak_if_freed_at_last_use_bytes);
    retained.integer("resolution_events", r.resolution_events);
    retained.close();
  }
  o.integer("unjudged_at_exit_blocks", site.unjudged_at_exit_blocks);
  o.integer("unjudged_at_exit_bytes", site.unjudged_at_exit_bytes);
  o.text("verdict", site.verdict);
  o.close();
}

}  // namespace

std::string report_file_text(const Report& report) {
  const int indent = report.sites.size() > kLargeReportSites ? -1 : 2;
  nlohmann::json j = to_json_without_sites(report);
  j["sites"] = "\u0001sites\u0001";
  const std::string text = j.dump(indent);
  static const std::string kPlaceholder = "\"\\u0001sites\\u0001\"";
  const std::size_t at = text.find(kPlaceholder);
  // Room for all of it at once: growing a report of megabytes by doubling copied it several times.
  std::size_t room = text.size();
  for (const SiteReport& site : report.sites) {
    room += 2048 + site.frames.size() * 192 + site.live_bytes_at_samples.size() * 12;
  }
  std::string out;
  out.reserve(room);
  out.append(text, 0, at);
  out += '[';
  std::unordered_map<std::uintptr_t, FrameRunText> frame_text;
  for (std::size_t i = 0; i < report.sites.size(); ++i) {
    if (i > 0) out += ',';
    append_site(out, report.sites[i], indent, frame_text);
  }
  out += ']';
  out.append(text, at + kPlaceholder.size());
  out += '\n';
  return out;
}

std::string json_error_text(const nlohmann::json::exception& e) {
  std::string_view text = e.what();
  if (text.starts_with("[json.exception.")) {
    const std::size_t end = text.find("] ");
    if (end != std::string_view::npos) text.remove_prefix(end + 2);
  }
  return std::string(text);
}

namespace {

enum class WholeNumber { kSigned, kUnsigned };

// Keys whose values are whole numbers in a report, and whether they may be negative: learned from
// a report with every field and array filled, as this build writes it. The JSON library converts a
// fraction or a number out of range into such a field with undefined behaviour, so the reader
// checks these first.
void learn_whole_numbers(const nlohmann::json& j, const std::string& key,
                         std::unordered_map<std::string, std::optional<WholeNumber>>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) learn_whole_numbers(v, k, out);
  } else if (j.is_array()) {
    for (const auto& v : j) learn_whole_numbers(v, key, out);
  } else if (j.is_number()) {
    const std::optional<WholeNumber> kind = j.is_number_unsigned() ? std::optional(WholeNumber::kUnsigned)
                                            : j.is_number_integer()  ? std::optional(WholeNumber::kSigned)
                                                                     : std::nullopt;
    const auto [it, fresh] = out.try_emplace(key, kind);
    if (!fresh && it->second != kind) it->second = std::nullopt;  // both kinds under one name: not checked
  }
}

const std::unordered_map<std::string, std::optional<WholeNumber>>& whole_number_keys() {
  static const auto keys = [] {
    Report sample;
    sample.run.program = ProgramInfo{};
    sample.run.program->exit_status = 0;
    sample.run.program->exit_signal = 0;
    sample.memcheck = MemcheckFigures{};
    sample.totals.allocators.emplace_back();
    TimelineSample point;
    point.allocator_live_bytes = {0};
    point.allocator_reserved_bytes = {0};
    sample.timeline.samples.push_back(point);
    sample.timeline.after_teardown = point;
    SiteReport site;
    site.frames.emplace_back();
    site.growth.plateau_iteration = 0;
    site.live_bytes_at_samples = {0};
    sample.sites.push_back(site);
    sample.total_growth.plateau_iteration = 0;
    std::unordered_map<std::string, std::optional<WholeNumber>> out;
    learn_whole_numbers(to_json(sample), "", out);
    return out;
  }();
  return keys;
}

void check_whole_numbers(const nlohmann::json& j, const std::string& key) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) check_whole_numbers(v, k);
    return;
  }
  if (j.is_array()) {
    for (const auto& v : j) check_whole_numbers(v, key);
    return;
  }
  if (!j.is_number()) return;
  const auto& keys = whole_number_keys();
  const auto it = keys.find(key);
  if (it == keys.end() || !it->second) return;
  const std::string name = "\"" + key.substr(0, 64) + "\"";
  if (j.is_number_float()) throw ReportError(name + " must be a whole number, not " + j.dump().substr(0, 32));
  if (*it->second == WholeNumber::kUnsigned && j.is_number_integer() && !j.is_number_unsigned()) {
    throw ReportError(name + " must not be negative, got " + j.dump());
  }
  if (*it->second == WholeNumber::kSigned && j.is_number_unsigned() &&
      j.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    throw ReportError(name + " is out of range: " + j.dump());
  }
}

}  // namespace

Report report_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("schema") || !j["schema"].is_string()) {
    throw ReportError("not a tleak report: no \"schema\" field");
  }
  const std::string schema = j["schema"];
  check_report_schema(schema);
  check_whole_numbers(j, "");
  Report r;
  r.schema = schema;
  // Each part read on its own, so that a message says which part lacks a field or mistypes one.
  const auto read_from = [&](const nlohmann::json& from, const char* part, auto& into) {
    try {
      from.get_to(into);
    } catch (const nlohmann::json::exception& e) {
      throw ReportError("malformed report: " + json_error_text(e) + " (in " + part + ")");
    }
  };
  const auto read = [&](const char* part, auto& into) {
    if (!j.contains(part)) throw ReportError(std::string("malformed report: no \"") + part + "\" field");
    read_from(j[part], part, into);
  };
  if (!j.contains("run")) throw ReportError("malformed report: no \"run\" field");
  // A program's report written before `focus` and `python_main_code` was labelled by the default
  // rule, and one before `record` and `forked_copy` recorded the command's process, which null and
  // false mean: the run (a few fields) is read from a copy that has them.
  nlohmann::json run = j["run"];
  if (run.is_object() && run.contains("program") && run["program"].is_object()) {
    for (const char* added : {"focus", "python_main_code", "record"}) {
      if (!run["program"].contains(added)) run["program"][added] = nullptr;
    }
    if (!run["program"].contains("forked_copy")) run["program"]["forked_copy"] = false;
  }
  read_from(run, "run", r.run);
  read("summary", r.summary);
  read("totals", r.totals);
  read("total_growth", r.total_growth);
  read("total_retained", r.total_retained);
  read("thresholds", r.thresholds);
  read("timeline", r.timeline);
  read("sites", r.sites);
  read("omitted_sites", r.omitted_sites);
  if (j.contains("notes")) read("notes", r.notes);
  if (j.contains("memcheck")) read("memcheck", r.memcheck);
  return r;
}

ClassifierOptions thresholds_with_overrides(const std::vector<std::string>& overrides) {
  nlohmann::json j = ClassifierOptions{};
  for (const std::string& item : overrides) {
    const auto eq = item.find('=');
    const std::string name = item.substr(0, eq);
    if (eq == std::string::npos || !j.contains(name)) {
      std::string known;
      for (const auto& [key, value] : j.items()) known += (known.empty() ? "" : ", ") + key;
      throw ReportError("unknown threshold '" + name + "' (expected name=value; known: " + known + ")");
    }
    const std::string text = item.substr(eq + 1);
    std::size_t used = 0;
    double value = 0;
    try {
      value = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != text.size() || !std::isfinite(value) || value < 0) {
      throw ReportError("threshold " + name + ": '" + text.substr(0, 64) + "' is not a finite non-negative number");
    }
    // Shares and ratios are between 0 and 1; counts and bytes are whole and far from overflowing.
    const bool share = name.find("fraction") != std::string::npos || name.find("confidence") != std::string::npos ||
                       name.find("share") != std::string::npos || name.find("ratio") != std::string::npos;
    if (share && value > 1) throw ReportError("threshold " + name + ": " + text.substr(0, 64) + " is above 1");
    if (j[name].is_number_integer() || j[name].is_number_unsigned()) {
      if (value != std::floor(value) || value > 1e15) {
        throw ReportError("threshold " + name + ": " + text.substr(0, 64) + " is not a whole number up to 10^15");
      }
      j[name] = static_cast<std::int64_t>(value);
    } else {
      if (value > 1e15) throw ReportError("threshold " + name + ": " + text.substr(0, 64) + " is above 10^15");
      j[name] = value;
    }
  }
  return j.get<ClassifierOptions>();
}

Report read_report_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ReportError(path + ": cannot open (missing or unreadable)");
  nlohmann::json j;
  try {
    // A key given twice in an object is refused (see report_summary.cc: readers would disagree).
    std::vector<std::vector<std::string>> keys;
    j = nlohmann::json::parse(in, [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
      if (event == nlohmann::json::parse_event_t::object_start) keys.emplace_back();
      if (event == nlohmann::json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
      if (event == nlohmann::json::parse_event_t::key && !keys.empty()) {
        const std::string& key = parsed.get_ref<const std::string&>();
        if (std::find(keys.back().begin(), keys.back().end(), key) != keys.back().end()) {
          throw ReportError("malformed report: \"" + key.substr(0, 64) + "\" given twice in an object");
        }
        keys.back().push_back(key);
      }
      return true;
    });
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number too large
    throw ReportError(path + ": not JSON (" + json_error_text(e) + ")");
  } catch (const ReportError& e) {
    throw ReportError(path + ": " + e.what());
  }
  try {
    return report_from_json(j);
  } catch (const ReportError& e) {
    throw ReportError(path + ": " + e.what());
  }
}

}  // namespace diagnosis
}  // namespace tleak
