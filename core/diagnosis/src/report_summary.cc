#include "tleak/diagnosis/report_summary.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>

#include <simdjson.h>

#include "tleak/diagnosis/diff.h"
#include "tleak/diagnosis/program_session.h"
#include "tleak/diagnosis/report_json.h"

namespace tleak::diagnosis {
namespace {

using simdjson::dom::element;

// The member `name` of `object`; a missing or mistyped one is a malformed report, named by path.
// A name given twice is refused too: JSON readers disagree on which one counts (this one would see
// the first, the full reader the last), so no reader of tleak's guesses.
element member(const element& object, const char* name, const std::string& where) {
  simdjson::dom::object fields;
  if (object.get(fields) != simdjson::SUCCESS) throw ReportError("malformed report: " + where + " is not an object");
  element value;
  int found = 0;
  for (const auto field : fields) {
    if (field.key != name) continue;
    if (++found > 1) throw ReportError("malformed report: \"" + std::string(name) + "\" given twice in " + where);
    value = field.value;
  }
  if (found == 0) throw ReportError("malformed report: no \"" + std::string(name) + "\" in " + where);
  return value;
}

std::int64_t integer(const element& object, const char* name, const std::string& where) {
  std::int64_t value = 0;
  if (member(object, name, where).get(value) != simdjson::SUCCESS) {
    throw ReportError("malformed report: \"" + std::string(name) + "\" in " + where + " is not an integer");
  }
  return value;
}

double number(const element& object, const char* name, const std::string& where) {
  const element e = member(object, name, where);
  double value = 0;
  if (e.get(value) == simdjson::SUCCESS) return value;
  std::int64_t whole = 0;
  if (e.get(whole) == simdjson::SUCCESS) return static_cast<double>(whole);
  throw ReportError("malformed report: \"" + std::string(name) + "\" in " + where + " is not a number");
}

std::string_view text(const element& object, const char* name, const std::string& where) {
  std::string_view value;
  if (member(object, name, where).get(value) != simdjson::SUCCESS) {
    throw ReportError("malformed report: \"" + std::string(name) + "\" in " + where + " is not a string");
  }
  return value;
}

// A frame's columns (column, end_column), 0 where not given, in the full reader's ranges
// (report_json.cc): from 1 to a line of kMaxPythonColumn bytes and one past its end, the end past
// the column.
std::pair<std::int64_t, std::int64_t> columns(const element& frame, const std::string& where) {
  std::int64_t column = 0, end_column = 0;
  element value;
  if (frame["column"].get(value) == simdjson::SUCCESS) {
    column = integer(frame, "column", where);
    if (column < 1 || column > kMaxReportColumn) throw ReportError("malformed report: a frame's column out of range in " + where);
  }
  if (frame["end_column"].get(value) == simdjson::SUCCESS) {
    end_column = integer(frame, "end_column", where);
    if (column == 0 || end_column <= column || end_column > kMaxReportColumn) {
      throw ReportError("malformed report: a frame's end_column not past its column in " + where);
    }
  }
  return {column, end_column};
}

// What a report's series are sampled by: a program's run says its clock (run.program, null for a
// scenario's run).
StepWords words_of_run(const element& run) {
  const element program = member(run, "program", "run");
  if (program.is_null()) return iteration_words();
  const std::string_view clock = text(program, "clock", "run.program");
  if (clock == "iterations") return iteration_words();
  if (clock != "time") throw ReportError("malformed report: \"clock\" in run.program is neither \"iterations\" nor \"time\"");
  const double seconds = number(program, "sample_seconds", "run.program");
  if (!(seconds >= ProgramOptions::kMinSampleSeconds && seconds <= ProgramOptions::kMaxSampleSeconds)) {
    throw ReportError(std::string("malformed report: \"sample_seconds\" in run.program is out of range (") +
                      ProgramOptions::kSampleRangeWords + ")");
  }
  return sample_words(seconds);
}

// A program's command line (run.program.command); empty for a scenario's run.
std::vector<std::string> command_of_run(const element& run) {
  std::vector<std::string> command;
  const element program = member(run, "program", "run");
  if (program.is_null()) return command;
  simdjson::dom::array words;
  if (member(program, "command", "run.program").get(words) != simdjson::SUCCESS) {
    throw ReportError("malformed report: \"command\" in run.program is not an array");
  }
  for (const element word : words) {
    std::string_view text;
    if (word.get(text) != simdjson::SUCCESS) throw ReportError("malformed report: \"command\" in run.program holds a non-string");
    command.emplace_back(text);
  }
  return command;
}

// A field of run.program added after reports were first written: std::nullopt where there is no
// program, or a report written before the field existed.
std::optional<element> added_program_field(const element& run, const char* name) {
  const element program = member(run, "program", "run");
  if (program.is_null()) return std::nullopt;
  simdjson::dom::object fields;
  if (program.get(fields) != simdjson::SUCCESS) return std::nullopt;
  if (std::none_of(fields.begin(), fields.end(), [&](const auto& field) { return field.key == name; })) return std::nullopt;
  return member(program, name, "run.program");
}

// run.program.record: empty where null or absent.
std::string record_of_run(const element& run) {
  const std::optional<element> value = added_program_field(run, "record");
  if (!value || value->is_null()) return {};
  std::string_view name;
  if (value->get(name) != simdjson::SUCCESS) throw ReportError("malformed report: \"record\" in run.program is not a string");
  return std::string(name);
}

// run.program.forked_copy: false where absent.
bool forked_copy_of_run(const element& run) {
  const std::optional<element> value = added_program_field(run, "forked_copy");
  bool forked = false;
  if (value && value->get(forked) != simdjson::SUCCESS) {
    throw ReportError("malformed report: \"forked_copy\" in run.program is not a boolean");
  }
  return forked;
}

// leaks_unjudged(), from the report's text.
bool leaks_judged_in(const element& run, const element& totals) {
  const element program = member(run, "program", "run");
  if (program.is_null()) return true;
  bool exit_scan = true;
  if (member(program, "exit_scan", "run.program").get(exit_scan) != simdjson::SUCCESS) {
    throw ReportError("malformed report: \"exit_scan\" in run.program is not a boolean");
  }
  return exit_scan || integer(totals, "unjudged_at_exit_bytes", "totals") <= 0;
}

}  // namespace

void check_report_schema(std::string_view schema) {
  const std::string_view prefix = "tleak.report/";
  if (schema.substr(0, prefix.size()) != prefix) {
    throw ReportError("not a tleak report: schema is \"" + std::string(schema) + "\", expected \"" + kReportSchema + "\"");
  }
  int version = 0;
  try {
    version = std::stoi(std::string(schema.substr(prefix.size())));
  } catch (const std::exception&) {
    throw ReportError("not a tleak report: schema \"" + std::string(schema) + "\" has no version number");
  }
  if (version > kReportSchemaVersion) {
    throw ReportError("report schema \"" + std::string(schema) + "\" is newer than this tleak reads (\"" + kReportSchema +
                      "\"); upgrade tleak");
  }
}

ReportSummary summarize(const Report& r) {
  ReportSummary s{r.run.scenario, r.run.variant, r.totals.peak_live_bytes, r.totals.final_live_bytes,
                  r.totals.leaked_bytes, r.total_retained.peak_dead_bytes, r.total_growth.slope_bytes_per_iteration, {},
                  step_words(r.run)};
  s.sites.reserve(r.sites.size());
  for (const SiteReport& site : r.sites) {
    s.sites.push_back({site_key(site.frames), site_line_key(site.frames), site_loose_key(site.frames),
                       site_physical_key(site.frames), site.label, site.verdict, site.peak_live_bytes,
                       site.final_live_bytes, site.leaked_bytes, site.growth.slope_bytes_per_iteration,
                       site.retained.peak_dead_bytes,
                       std::any_of(site.frames.begin(), site.frames.end(), [](const Frame& f) { return f.column > 0; })});
  }
  if (r.run.program) {
    s.command = r.run.program->command;
    s.record = r.run.program->record.value_or("");
    s.forked_copy = r.run.program->forked_copy;
  }
  s.retained_measured = r.total_retained.measured;
  s.leaks_judged = !leaks_unjudged(r);
  s.unlisted_sites = r.omitted_sites.sites;
  s.unlisted_largest_peak = r.omitted_sites.largest_peak_live_bytes;
  return s;
}

ReportSummary read_report_summary(const std::string& path) {
  simdjson::padded_string json;
  struct stat st{};
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    // A FIFO or a process substitution (<(...)): read it as a stream, once.
    std::ifstream in(path, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    if (!in.good() && !in.eof()) throw ReportError(path + ": cannot read");
    json = simdjson::padded_string(text);
  } else if (simdjson::padded_string::load(path).get(json) != simdjson::SUCCESS) {
    throw ReportError(path + ": cannot open (missing or unreadable)");
  }
  simdjson::dom::parser parser;
  element doc;
  if (const auto error = parser.parse(json).get(doc); error != simdjson::SUCCESS) {
    throw ReportError(path + ": not JSON (" + simdjson::error_message(error) + ")");
  }
  try {
    std::string_view schema;
    if (!doc.is_object() || doc["schema"].get(schema) != simdjson::SUCCESS) {
      throw ReportError("not a tleak report: no \"schema\" field");
    }
    member(doc, "schema", "the report");  // given once
    check_report_schema(schema);
    ReportSummary s;
    const element run = member(doc, "run", "the report");
    s.scenario = text(run, "scenario", "run");
    s.variant = text(run, "variant", "run");
    s.words = words_of_run(run);
    s.command = command_of_run(run);
    s.record = record_of_run(run);
    s.forked_copy = forked_copy_of_run(run);
    const element totals = member(doc, "totals", "the report");
    s.peak_live_bytes = integer(totals, "peak_live_bytes", "totals");
    s.final_live_bytes = integer(totals, "final_live_bytes", "totals");
    s.leaked_bytes = integer(totals, "leaked_bytes", "totals");
    s.leaks_judged = leaks_judged_in(run, totals);
    const element retained = member(doc, "total_retained", "the report");
    s.retained_peak_bytes = integer(retained, "peak_dead_bytes", "total_retained");
    if (member(retained, "measured", "total_retained").get(s.retained_measured) != simdjson::SUCCESS) {
      throw ReportError("malformed report: \"measured\" in total_retained is not a boolean");
    }
    s.slope_bytes_per_iteration = number(member(doc, "total_growth", "the report"), "slope_bytes_per_iteration", "total_growth");
    const element omitted = member(doc, "omitted_sites", "the report");
    const std::int64_t unlisted = integer(omitted, "sites", "omitted_sites");
    s.unlisted_largest_peak = integer(omitted, "largest_peak_live_bytes", "omitted_sites");
    if (unlisted < 0 || s.unlisted_largest_peak < 0) throw ReportError("malformed report: a negative figure in omitted_sites");
    s.unlisted_sites = static_cast<std::uint64_t>(unlisted);
    simdjson::dom::array sites;
    if (member(doc, "sites", "the report").get(sites) != simdjson::SUCCESS) throw ReportError("malformed report: \"sites\" is not an array");
    s.sites.reserve(sites.size());
    std::size_t index = 0;
    for (const element site : sites) {
      const std::string where = "sites[" + std::to_string(index++) + "]";
      SiteSummary out;
      simdjson::dom::array frames;
      if (member(site, "frames", where).get(frames) != simdjson::SUCCESS) throw ReportError("malformed report: frames of " + where);
      for (const element frame : frames) {
        const std::string_view function = text(frame, "function", where), module = text(frame, "module", where);
        const std::string_view file = text(frame, "file", where);
        const std::int64_t line = integer(frame, "line", where);
        const auto [column, end_column] = columns(frame, where);
        append_frame_key(out.key, function, module, file, line, column, end_column);
        append_frame_key(out.line_key, function, module, file, line);
        out.has_columns = out.has_columns || column > 0;
        append_frame_loose_key(out.loose_key, function, module);
        if (frame_kind_in_report(text(frame, "kind", where), where) != FrameKind::kInlined) {
          append_frame_loose_key(out.physical_key, function, module);
        }
      }
      out.label = text(site, "label", where);
      out.verdict = text(site, "verdict", where);
      out.peak_live_bytes = integer(site, "peak_live_bytes", where);
      out.final_live_bytes = integer(site, "final_live_bytes", where);
      out.leaked_bytes = integer(site, "leaked_bytes", where);
      out.slope_bytes_per_iteration = number(member(site, "growth", where), "slope_bytes_per_iteration", where);
      out.retained_peak_bytes = integer(member(site, "retained", where), "peak_dead_bytes", where);
      s.sites.push_back(std::move(out));
    }
    return s;
  } catch (const ReportError& e) {
    throw ReportError(path + ": " + e.what());
  }
}

}  // namespace tleak::diagnosis
