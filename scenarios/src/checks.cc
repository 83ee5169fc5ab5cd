#include "tleak/scenarios/checks.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "tleak/allocator_error.h"
#include "tleak/diagnosis/program_session.h"
#include "tleak/diagnosis/report_json.h"
#include "tleak/diagnosis/session.h"
#include "tleak/scenarios/scenario.h"

namespace tleak::scenarios {
namespace {

std::string quote(const std::string& s) { return "'" + s + "'"; }

void reject_unknown_keys(const nlohmann::json& object, const std::set<std::string>& known, const std::string& where) {
  for (const auto& [key, value] : object.items()) {
    if (!known.contains(key)) throw CheckError(where + ": unknown field " + quote(key));
  }
}

void parse_expect(const nlohmann::json& j, Expectation& e, const std::string& where);

// Numbers from a checks file, range-checked before conversion: the JSON library turns a fraction
// into a truncated whole number, and a number beyond the target's range into anything (UB).
constexpr double kLargestLimit = 1e15;  // bytes; far beyond any machine, far from overflowing

std::int64_t whole_number(const nlohmann::json& value, const std::string& name, std::int64_t low, std::int64_t high,
                          const std::string& where) {
  const bool whole = value.is_number_integer() &&
                     (value.is_number_unsigned() ? value.get<std::uint64_t>() <= static_cast<std::uint64_t>(high)
                                                 : value.get<std::int64_t>() >= low && value.get<std::int64_t>() <= high);
  if (!whole) {
    throw CheckError(where + ": " + name + " must be a whole number from " + std::to_string(low) + " to " +
                     std::to_string(high) + ", got " + value.dump().substr(0, 64));
  }
  return value.get<std::int64_t>();
}

double byte_rate(const nlohmann::json& value, const std::string& name, const std::string& where) {
  if (!value.is_number() || !(value.get<double>() >= 0) || value.get<double>() > kLargestLimit) {
    throw CheckError(where + ": " + name + " must be a number of bytes from 0 to 10^15, got " + value.dump().substr(0, 64));
  }
  return value.get<double>();
}

Expectation parse_expectation(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw CheckError(where + ": a check must be an object");
  reject_unknown_keys(j, {"scenario", "command", "record", "record_fork", "variant", "mode", "iterations", "expect"}, where);
  Expectation e;
  if (j.contains("command")) {
    // The user's own program: argv as an array of strings, judged by the same expectations.
    const nlohmann::json& c = j["command"];
    if (j.contains("scenario") || j.contains("variant") || j.contains("mode") || j.contains("iterations")) {
      throw CheckError(where + ": a \"command\" check takes no scenario, variant, mode or iterations");
    }
    if (!c.is_array() || c.empty() || c.size() > 4096) throw CheckError(where + ": \"command\" must be a non-empty array of strings");
    for (const nlohmann::json& a : c) {
      if (!a.is_string() || a.get<std::string>().size() > 65536) throw CheckError(where + ": \"command\" must be a non-empty array of strings");
      e.command.push_back(a.get<std::string>());
    }
    if (e.command[0].empty()) throw CheckError(where + ": \"command\" names no program");
    if (j.contains("record")) {
      // tleak run --record NAME: which of the command's processes is the program checked.
      const nlohmann::json& r = j["record"];
      const auto problem = r.is_string() ? diagnosis::record_name_problem(r.get<std::string>())
                                         : diagnosis::record_name_problem("");
      if (problem) throw CheckError(where + ": \"record\" must be " + *problem);
      e.record = r.get<std::string>();
    }
    if (j.contains("record_fork")) {
      // tleak run --record-fork: the first copy the command's process forks is the program checked.
      if (!j["record_fork"].is_boolean()) throw CheckError(where + ": \"record_fork\" must be true or false");
      e.record_fork = j["record_fork"].get<bool>();
    }
    e.variant = "program";
    e.mode = "native";
    parse_expect(j, e, where);
    return e;
  }
  if (j.contains("record") || j.contains("record_fork")) {
    throw CheckError(where + ": \"" + (j.contains("record") ? "record" : "record_fork") + "\" goes with a \"command\"");
  }
  if (!j.contains("scenario") || !j["scenario"].is_string()) throw CheckError(where + ": needs a \"scenario\" or a \"command\"");
  e.scenario = j["scenario"];
  const Scenario* s = find_scenario(e.scenario);
  if (s == nullptr) throw CheckError(where + ": unknown scenario " + quote(e.scenario));
  if (j.contains("variant")) e.variant = j["variant"].get<std::string>();
  if (!has_variant(*s, e.variant)) {
    throw CheckError(where + ": scenario " + quote(e.scenario) + " has no variant " + quote(e.variant) + " (it has: " +
                     variant_list(*s) + ")");
  }
  if (j.contains("mode")) e.mode = j["mode"].get<std::string>();
  if (!e.mode.empty() && std::find(s->modes.begin(), s->modes.end(), e.mode) == s->modes.end()) {
    throw CheckError(where + ": scenario " + quote(e.scenario) + " does not run in mode " + quote(e.mode));
  }
  if (e.mode.empty()) e.mode = s->modes.front();
  if (j.contains("iterations")) {
    e.iterations = static_cast<std::uint64_t>(whole_number(j["iterations"], "iterations", 1, 1'000'000, where));
  }
  parse_expect(j, e, where);
  return e;
}

void parse_expect(const nlohmann::json& j, Expectation& e, const std::string& where) {
  if (j.contains("expect")) {
    const nlohmann::json& x = j["expect"];
    if (!x.is_object()) throw CheckError(where + ": \"expect\" must be an object");
    reject_unknown_keys(x, {"verdict", "max_leaked_bytes", "max_growth_bytes_per_iteration", "max_retained_peak_bytes"},
                        where + " expect");
    if (x.contains("verdict")) {
      e.verdict = x["verdict"].get<std::string>();
      if (!diagnosis::verdict_from_string(*e.verdict)) throw CheckError(where + ": unknown verdict " + quote(*e.verdict));
    }
    const auto limit = static_cast<std::int64_t>(kLargestLimit);
    if (x.contains("max_leaked_bytes")) {
      e.max_leaked_bytes = whole_number(x["max_leaked_bytes"], "max_leaked_bytes", 0, limit, where);
    }
    if (x.contains("max_growth_bytes_per_iteration")) {
      e.max_growth_bytes_per_iteration = byte_rate(x["max_growth_bytes_per_iteration"], "max_growth_bytes_per_iteration", where);
    }
    if (x.contains("max_retained_peak_bytes")) {
      e.max_retained_peak_bytes = whole_number(x["max_retained_peak_bytes"], "max_retained_peak_bytes", 0, limit, where);
    }
  }
}

double worst_growth(const diagnosis::Report& r) {
  double worst = 0;
  for (const auto& s : r.sites) {
    if (s.verdict == "growth") worst = std::max(worst, s.growth.slope_bytes_per_iteration);
  }
  return worst;
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::string Expectation::name() const {
  if (command.empty()) return scenario + " " + variant + " (" + mode + ")";
  std::string text = "command";
  for (const std::string& a : command) text += " " + a;
  if (!record.empty()) text += " (record " + record + ")";
  if (record_fork) text += " (record its forked copy)";
  return text;
}

std::vector<Expectation> read_checks_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw CheckError(path + ": cannot open the checks file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number too large
    throw CheckError(path + ": not JSON (" + diagnosis::json_error_text(e) + ")");
  }
  const auto schema = j.is_object() ? j.find("schema") : j.end();
  if (!j.is_object() || schema == j.end() || !schema->is_string() || *schema != kChecksSchema) {
    throw CheckError(path + ": not a checks file (expected \"schema\": \"" + kChecksSchema + "\")");
  }
  if (!j.contains("checks") || !j["checks"].is_array()) throw CheckError(path + ": needs a \"checks\" array");
  std::vector<Expectation> out;
  try {
    for (std::size_t i = 0; i < j["checks"].size(); ++i) {
      out.push_back(parse_expectation(j["checks"][i], path + ": check " + std::to_string(i + 1)));
    }
  } catch (const nlohmann::json::exception& e) {
    throw CheckError(path + ": malformed check (" + diagnosis::json_error_text(e) + ")");
  }
  return out;
}

diagnosis::Report run_expectation(Expectation& e, const std::string& agent_path) {
  if (!e.command.empty()) {
    diagnosis::ProgramOptions options;
    options.command = e.command;
    options.record = e.record;
    options.record_fork = e.record_fork;
    options.agent_path = agent_path;
    try {
      return diagnosis::run_program(options);
    } catch (const diagnosis::ProgramError& error) {
      throw CheckError(e.name() + ": " + error.what());
    }
  }
  const Scenario* s = find_scenario(e.scenario);
  if (s == nullptr) throw CheckError("unknown scenario " + quote(e.scenario));
  if (e.mode.empty()) e.mode = s->modes.front();
  return diagnosis::run_workload(s->run, session_options(*s, {e.variant, e.mode, e.iterations, std::nullopt}));
}

CheckResult judge(const Expectation& e, const diagnosis::Report& r) {
  CheckResult result{e, true, "", r.run.duration_seconds};
  std::vector<std::string> failures;
  if (const auto& p = r.run.program; p && (p->exit_signal || p->exit_status.value_or(0) != 0)) {
    failures.push_back(p->exit_signal ? "the program was killed by signal " + std::to_string(*p->exit_signal)
                                      : "the program exited with status " + std::to_string(*p->exit_status));
  }
  if (e.verdict && r.summary.verdict != *e.verdict) {
    failures.push_back("expected verdict " + *e.verdict + ", got " + r.summary.verdict);
  }
  // "Nothing leaked" is what a bounded verdict and a leak limit ask, and a run without an exit scan
  // did not look.
  if ((e.max_leaked_bytes || (e.verdict && *e.verdict == "bounded")) && diagnosis::leaks_unjudged(r)) {
    failures.push_back(diagnosis::kLeaksNotJudged);
  }
  if (e.max_leaked_bytes && r.totals.leaked_bytes > *e.max_leaked_bytes) {
    failures.push_back("leaked " + std::to_string(r.totals.leaked_bytes) + " bytes, limit " + std::to_string(*e.max_leaked_bytes));
  }
  if (e.max_growth_bytes_per_iteration && worst_growth(r) > *e.max_growth_bytes_per_iteration) {
    failures.push_back("grows " + format_bytes(worst_growth(r)) + " per iteration, limit " +
                       format_bytes(*e.max_growth_bytes_per_iteration));
  }
  if (e.max_retained_peak_bytes && r.total_retained.peak_dead_bytes > *e.max_retained_peak_bytes) {
    failures.push_back("retains " + format_bytes(static_cast<double>(r.total_retained.peak_dead_bytes)) + " at peak, limit " +
                       format_bytes(static_cast<double>(*e.max_retained_peak_bytes)));
  }
  result.passed = failures.empty();
  if (result.passed) {
    result.detail = r.summary.sentence;
  } else {
    for (const std::string& f : failures) result.detail += (result.detail.empty() ? "" : "; ") + f;
    result.detail += " (" + r.summary.sentence + ")";
  }
  return result;
}

CheckResult judge_against_baseline(const Expectation& e, const diagnosis::Report& fresh, const diagnosis::Report& baseline,
                                   const diagnosis::FailPolicy& policy) {
  CheckResult result{e, true, "", fresh.run.duration_seconds};
  // A command's baseline is found by its command line: diff_reports takes two reports of one command
  // for one program whatever name each gives it (an older tleak named a Python program python3.11).
  const diagnosis::Diff diff = diagnosis::diff_reports(diagnosis::summarize(baseline), diagnosis::summarize(fresh), false);
  result.passed = !diagnosis::fails(diff, policy);
  const auto regressions = diff.regressions();
  if (!result.passed && regressions.empty() && !diff.totals.leaks_judged_b) {
    result.detail = diagnosis::kLeaksNotJudged;
  } else if (regressions.empty()) {
    result.detail = "no regression against the baseline (" + fresh.summary.verdict + ")";
  } else {
    result.detail = std::to_string(regressions.size()) + " regression(s) against the baseline, first: " + regressions.front().what;
  }
  return result;
}

std::string baseline_file_name(const Expectation& e) {
  if (e.command.empty()) return e.scenario + "." + e.variant + "." + e.mode + ".json";
  // The program's base name, kept to safe characters, and a hash of the whole command line.
  std::string base = e.command[0].substr(e.command[0].rfind('/') == std::string::npos ? 0 : e.command[0].rfind('/') + 1);
  for (char& c : base) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  }
  std::uint64_t h = 1469598103934665603ull;
  for (const std::string& a : e.command) {
    for (const unsigned char c : a) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  }
  // Another of the command's processes is another program (a check without it keeps its file).
  if (!e.record.empty()) {
    h = (h ^ 0xfe) * 1099511628211ull;
    for (const unsigned char c : e.record) h = (h ^ c) * 1099511628211ull;
  }
  if (e.record_fork) h = (h ^ 0xfd) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return "command." + base.substr(0, 64) + "." + hex + ".json";
}

std::string junit_xml(const std::vector<CheckResult>& results) {
  std::size_t failures = 0;
  double seconds = 0;
  for (const CheckResult& r : results) {
    failures += !r.passed;
    seconds += r.seconds;
  }
  char header[256];
  std::snprintf(header, sizeof header, "<testsuite name=\"tleak check\" tests=\"%zu\" failures=\"%zu\" time=\"%.3f\">\n",
                results.size(), failures, seconds);
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += header;
  for (const CheckResult& r : results) {
    char time[32];
    std::snprintf(time, sizeof time, "%.3f", r.seconds);
    xml += "  <testcase classname=\"tleak.check\" name=\"" + xml_escape(r.expectation.name()) + "\" time=\"" + time + "\"";
    if (r.passed) {
      xml += "/>\n";
    } else {
      xml += ">\n    <failure message=\"" + xml_escape(r.detail) + "\"/>\n  </testcase>\n";
    }
  }
  return xml + "</testsuite>\n";
}

}  // namespace tleak::scenarios
