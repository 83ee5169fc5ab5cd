#include "tleak/diagnosis/report_json.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "synthetic_run.h"
#include "tleak/diagnosis/report_summary.h"
#include "tleak/diagnosis/report_text.h"

namespace tleak::diagnosis {
namespace {

Report sample_report() {
  Report r;
  r.run.scenario = "append-loop";
  r.run.variant = "leaky";
  r.run.mode = "eager";
  r.run.iterations = 3;
  r.run.started_at = "2026-01-01T00:00:00Z";
  r.summary.verdict = "growth";
  r.summary.sentence = "growth: +1.0 KiB per iteration at f (a.cc:1)";
  r.timeline.samples = {{1, 10, 100, 1, {100}, {4096}}, {2, 20, 200, 2, {200}, {4096}}};
  SiteReport s;
  s.id = 7;
  s.verdict = "growth";
  s.frames = {Frame{0x1234, "ns::f(int)", "tleak", 0x234, "/src/a.cc", 1}};
  s.growth.assessed = true;
  s.growth.slope_bytes_per_iteration = 1024;
  s.growth.plateau_iteration = 2;
  r.sites.push_back(s);
  return r;
}

// A growing site of a program's report, known in the text by its reason.
SiteReport growth_site(const std::string& reason, std::vector<Frame> frames) {
  SiteReport s;
  s.verdict = "growth";
  s.reason = reason;
  s.frames = std::move(frames);
  s.label = site_label(s.frames);
  return s;
}

// The text's line after the reason line of the site whose reason is `reason`: what sets the site
// apart (a "via" line) or its first frame.
std::string line_after(const std::string& text, const std::string& reason) {
  const auto at = text.find(reason + "\n");
  if (at == std::string::npos) return "(no such site)";
  const auto start = at + reason.size() + 1;
  return text.substr(start, text.find('\n', start) - start);
}

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(ReportJson, RoundTripsEveryField) {
  const Report original = sample_report();
  const nlohmann::json j = to_json(original);
  const Report back = report_from_json(j);
  EXPECT_EQ(to_json(back), j);
  EXPECT_EQ(back.sites.at(0).frames.at(0).function, "ns::f(int)");
  EXPECT_EQ(back.sites.at(0).growth.plateau_iteration, std::optional<std::uint64_t>(2));
  EXPECT_EQ(j["sites"][0]["frames"][0].contains("address"), false);  // never raw addresses
}

// A Python frame's columns are written where known and read back; a native frame has none, and
// a report without them (every report before them) reads with none.
TEST(ReportJson, APythonFramesColumnsRoundTripAndAreRangeChecked) {
  Report r = sample_report();
  Frame call{0x8000000000000007ull, "Model.forward", "/srv/serve.py", 0, "/srv/serve.py", 9, FrameKind::kPython};
  call.column = 16;
  call.end_column = 48;
  r.sites[0].frames.push_back(call);
  const nlohmann::json j = to_json(r);
  EXPECT_FALSE(j["sites"][0]["frames"][0].contains("column"));
  EXPECT_EQ(j["sites"][0]["frames"][1]["column"], 16);
  EXPECT_EQ(j["sites"][0]["frames"][1]["end_column"], 48);
  EXPECT_EQ(nlohmann::json::parse(report_file_text(r)), j);
  const Report back = report_from_json(j);
  EXPECT_EQ(back.sites[0].frames[1].column, 16);
  EXPECT_EQ(back.sites[0].frames[1].end_column, 48);
  EXPECT_EQ(back.sites[0].frames[0].column, 0);
  // diff's fast reader keys the site by its columns as the full reader's summary does.
  const ReportSummary fast = read_report_summary(write_temp("tleak_columns_report.json", j.dump()));
  ASSERT_EQ(fast.sites.size(), summarize(back).sites.size());
  EXPECT_EQ(fast.sites[0].key, summarize(back).sites[0].key);
  EXPECT_EQ(fast.sites[0].line_key, summarize(back).sites[0].line_key);
  EXPECT_NE(fast.sites[0].key.find("serve.py:9:16-48\n"), std::string::npos) << fast.sites[0].key;
  EXPECT_TRUE(fast.sites[0].has_columns);
  for (const auto& [column, end] : std::vector<std::pair<nlohmann::json, nlohmann::json>>{
           {0, 5}, {-3, 5}, {16, 16}, {16, 2}, {nlohmann::json(), 5}, {16, 1048578}, {4294967313ll, nullptr}}) {
    nlohmann::json bad = j;
    auto& frame = bad["sites"][0]["frames"][1];
    frame.erase("column");
    frame.erase("end_column");
    if (!column.is_null()) frame["column"] = column;
    if (!end.is_null()) frame["end_column"] = end;
    try {
      report_from_json(bad);
      ADD_FAILURE() << "read a frame with column " << column << ", end " << end;
    } catch (const ReportError& e) {
      EXPECT_NE(std::string(e.what()).find("column"), std::string::npos) << e.what();
    }
    try {
      read_report_summary(write_temp("tleak_bad_columns_report.json", bad.dump()));
      ADD_FAILURE() << "diff read a frame with column " << column << ", end " << end;
    } catch (const ReportError& e) {
      EXPECT_NE(std::string(e.what()).find("column"), std::string::npos) << e.what();
    }
  }
}

TEST(ReportJson, AbsentValuesAreNullAndComeBackAbsent) {
  Report original = sample_report();
  nlohmann::json j = to_json(original);
  EXPECT_TRUE(j["memcheck"].is_null());
  EXPECT_TRUE(j["total_growth"]["plateau_iteration"].is_null());
  EXPECT_FALSE(report_from_json(j).memcheck.has_value());
  EXPECT_FALSE(report_from_json(j).total_growth.plateau_iteration.has_value());

  original.memcheck = MemcheckFigures{.lost_bytes = 4096, .lost_blocks = 1, .agrees = true, .agreement = "agree"};
  j = to_json(original);
  EXPECT_EQ(j["memcheck"]["lost_bytes"], 4096);
  const Report back = report_from_json(j);
  ASSERT_TRUE(back.memcheck.has_value());
  EXPECT_EQ(back.memcheck->lost_blocks, 1);
  EXPECT_EQ(back.memcheck->agreement, "agree");
  EXPECT_EQ(to_json(back), j);
}

TEST(ReportJson, RefusesWhatIsNotAReport) {
  EXPECT_THROW(
      {
        try {
          report_from_json(nlohmann::json{{"hello", 1}});
        } catch (const ReportError& e) {
          EXPECT_STREQ(e.what(), "not a tleak report: no \"schema\" field");
          throw;
        }
      },
      ReportError);
  try {
    report_from_json(nlohmann::json{{"schema", "other.format/1"}});
    FAIL();
  } catch (const ReportError& e) {
    EXPECT_STREQ(e.what(), "not a tleak report: schema is \"other.format/1\", expected \"tleak.report/1\"");
  }
}

TEST(ReportJson, RefusesANewerSchemaVersion) {
  nlohmann::json j = to_json(sample_report());
  j["schema"] = "tleak.report/2";
  try {
    report_from_json(j);
    FAIL();
  } catch (const ReportError& e) {
    EXPECT_NE(std::string(e.what()).find("newer than this tleak reads"), std::string::npos) << e.what();
  }
}

TEST(ReportJson, NamesAMissingOrMistypedField) {
  nlohmann::json j = to_json(sample_report());
  j["sites"][0].erase("verdict");
  try {
    report_from_json(j);
    FAIL();
  } catch (const ReportError& e) {
    EXPECT_NE(std::string(e.what()).find("malformed report"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("verdict"), std::string::npos) << e.what();
  }
  j = to_json(sample_report());
  j["totals"]["leaked_bytes"] = "lots";
  EXPECT_THROW(report_from_json(j), ReportError);
  j = to_json(sample_report());
  j["sites"][0]["frames"][0]["kind"] = "jit";
  try {
    report_from_json(j);
    FAIL();
  } catch (const ReportError& e) {
    EXPECT_STREQ(e.what(), "malformed report: a frame of unknown kind \"jit\" (native, inlined or python)");
  }
  j["sites"][0]["frames"][0]["kind"] = 3;
  EXPECT_THROW(report_from_json(j), ReportError);
}

// A program's report names every field of run.program; one written before `focus`,
// `python_main_code` and `forked_copy` existed lacks only those, and reads as the default labelling
// rule, of the command's own process.
TEST(ReportJson, AProgramsFieldsAreRequiredButTheTwoNewest) {
  Report original = sample_report();
  original.run.program = ProgramInfo{};
  original.run.program->command = {"./train", "--steps", "3"};
  original.run.program->pid = 4242;
  original.run.program->exit_status = 0;
  original.run.program->focus = "/src/";
  original.run.program->python_main_code = "<string>";
  original.run.program->forked_copy = true;
  nlohmann::json j = to_json(original);
  const Report back = report_from_json(j);
  ASSERT_TRUE(back.run.program.has_value());
  EXPECT_EQ(back.run.program->command, original.run.program->command);
  EXPECT_EQ(back.run.program->pid, 4242);
  EXPECT_EQ(back.run.program->focus, std::optional<std::string>("/src/"));
  EXPECT_EQ(back.run.program->python_main_code, std::optional<std::string>("<string>"));
  EXPECT_TRUE(back.run.program->forked_copy);
  EXPECT_EQ(to_json(back), j);

  nlohmann::json older = j;
  older["run"]["program"].erase("focus");
  older["run"]["program"].erase("python_main_code");
  older["run"]["program"].erase("forked_copy");
  const Report old_back = report_from_json(older);
  EXPECT_FALSE(old_back.run.program->forked_copy);
  EXPECT_FALSE(old_back.run.program->focus.has_value());
  EXPECT_FALSE(old_back.run.program->python_main_code.has_value());
  EXPECT_EQ(old_back.run.program->pid, 4242);

  for (const char* field : {"command", "pid", "exit_status", "exit_signal", "stopped_by", "clock", "sample_seconds",
                            "exit_scan", "exit_scan_root_bytes", "snapshot"}) {
    nlohmann::json missing = j;
    missing["run"]["program"].erase(field);
    try {
      report_from_json(missing);
      ADD_FAILURE() << "accepted a program without " << field;
    } catch (const ReportError& e) {
      EXPECT_EQ(std::string(e.what()), std::string("malformed report: key '") + field + "' not found (in run)");
    }
  }
  nlohmann::json no_summary = j;
  no_summary.erase("summary");
  try {
    report_from_json(no_summary);
    FAIL();
  } catch (const ReportError& e) {
    EXPECT_STREQ(e.what(), "malformed report: no \"summary\" field");
  }
  j["sites"][0]["allocations"] = "many";
  try {
    report_from_json(j);
    FAIL();
  } catch (const ReportError& e) {
    EXPECT_STREQ(e.what(), "malformed report: type must be number, but is string (in sites)");
  }
}

// Found by the fuzzer under UBSan: the JSON library converts a fraction, or a number beyond the
// field's range, into an integer field with undefined behaviour. The reader refuses them first.
TEST(ReportJson, WholeNumberFieldsRefuseFractionsNegativesAndOverflow) {
  const auto refused = [](const nlohmann::json& j, const std::string& message) {
    try {
      report_from_json(j);
      ADD_FAILURE() << "accepted " << message;
    } catch (const ReportError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  nlohmann::json j = to_json(sample_report());
  j["sites"][0]["allocations"] = 5e84;
  refused(j, "\"allocations\" must be a whole number");
  j = to_json(sample_report());
  j["timeline"]["stride"] = -1;
  refused(j, "\"stride\" must not be negative");
  j = to_json(sample_report());
  j["totals"]["leaked_bytes"] = std::numeric_limits<std::uint64_t>::max();
  refused(j, "\"leaked_bytes\" is out of range");
  j = to_json(sample_report());
  j["sites"][0]["growth"]["plateau_iteration"] = 2.5;
  refused(j, "\"plateau_iteration\" must be a whole number");
  j = to_json(sample_report());
  j["sites"][0]["live_bytes_at_samples"] = {1, 2.5};
  refused(j, "\"live_bytes_at_samples\" must be a whole number");
  // Fractions stay fine where the figure is one, and negative slopes where it may be.
  j = to_json(sample_report());
  j["sites"][0]["growth"]["slope_bytes_per_iteration"] = -12.5;
  j["sites"][0]["final_live_bytes"] = -3;
  EXPECT_NO_THROW(report_from_json(j));
}

TEST(ReportJson, AReportFromBeforeResolutionEventsStillReads) {
  nlohmann::json j = to_json(sample_report());
  for (nlohmann::json* retained : {&j["total_retained"], &j["sites"][0]["retained"]}) {
    retained->erase("resolution_events");
    (*retained)["resolution_ops"] = 4;
  }
  const Report r = report_from_json(j);
  EXPECT_EQ(r.total_retained.resolution_events, 1u);
  EXPECT_EQ(r.sites.at(0).verdict, "growth");
}

TEST(ReportJson, FileErrorsNameThePath) {
  try {
    read_report_file("/nonexistent/report.json");
    FAIL();
  } catch (const ReportError& e) {
    EXPECT_STREQ(e.what(), "/nonexistent/report.json: cannot open (missing or unreadable)");
  }
  const std::string full = to_json(sample_report()).dump();
  const std::string truncated = write_temp("tleak-truncated.json", full.substr(0, full.size() / 2));
  try {
    read_report_file(truncated);
    FAIL();
  } catch (const ReportError& e) {
    EXPECT_NE(std::string(e.what()).find(truncated + ": not JSON (parse error at line 1, column "), std::string::npos)
        << e.what();
  }
  std::filesystem::remove(truncated);
}

TEST(ReportText, SparklineScalesToTheMaximum) {
  EXPECT_EQ(sparkline({0, 1, 2, 3, 4, 5, 6, 7}), "▁▂▃▄▅▆▇█");
  EXPECT_EQ(sparkline({}), "");
  EXPECT_EQ(sparkline({5, 5}), "██");
  // 100 samples into 10 characters: each shows the largest of its ten.
  std::vector<std::int64_t> many(100, 0);
  many[95] = 70;
  EXPECT_EQ(sparkline(many, 10), "▁▁▁▁▁▁▁▁▁█");
}

TEST(ReportText, SiteLabelSkipsPlumbingAndShortensNames) {
  const std::vector<Frame> frames = {
      Frame{1, "std::vector<int, std::allocator<int> >::push_back(int const&)", "tleak", 1, "/usr/include/vector", 3},
      Frame{2, "tleak::scenarios::(anonymous namespace)::append_result(int)", "tleak", 2, "/src/basic_loops.cc", 67}};
  EXPECT_EQ(site_label(frames), "scenarios::append_result (basic_loops.cc:67)");
  EXPECT_EQ(site_label({}), "(no stack recorded)");
  EXPECT_EQ(site_label({Frame{3, "main", "tleak", 3, "", 0}}), "main (tleak)");
  // No symbol (a stripped program): named by its place in its module, which addr2line takes.
  const Frame stripped{4, "??", "cat", 0x6459, "", 0};
  EXPECT_EQ(site_label({stripped}), "cat+0x6459");
  EXPECT_EQ(frame_short_name(stripped), "cat+0x6459");
  EXPECT_EQ(frame_short_name(Frame{5, "??", "", 0, "", 0}), "??");  // not even a module
  // Its nearest named caller in the same module says whose code it is; none in another module.
  const Frame unnamed_caller{6, "??", "python3.11", 0x100470, "", 0};
  const Frame exported{7, "PyList_New", "python3.11", 0xfb07a, "", 0};
  const Frame elsewhere{8, "load_batch", "train", 0x1234, "", 0};
  EXPECT_EQ(site_label({Frame{9, "??", "python3.11", 0x22d1da, "", 0}, unnamed_caller, exported, elsewhere}),
            "python3.11+0x22d1da (called from PyList_New)");
  EXPECT_EQ(site_label({stripped, elsewhere}), "cat+0x6459");
  // Python frames as the agent named them.
  EXPECT_EQ(frame_short_name(Frame{0, "Model.<locals>.step", "/home/me/train.py", 0, "/home/me/train.py", 9, FrameKind::kPython}),
            "Model.<locals>.step");
  EXPECT_EQ(frame_short_name(Frame{0, "(10 Python frames left out)", "", 0, "", 0, FrameKind::kPython}), "(10 Python frames left out)");
}

TEST(ReportText, PythonSiteLabelIsTheUsersFrameElseTheInnermostRealFile) {
  const Frame native{1, "malloc", "libc.so.6", 1, "", 0};
  const Frame machinery{2, "_call_with_frames_removed", "<frozen importlib._bootstrap>", 0,
                        "<frozen importlib._bootstrap>", 241, FrameKind::kPython};
  const Frame library{3, "<module>", "/usr/lib/python3/dist-packages/torch/__init__.py", 0,
                      "/usr/lib/python3/dist-packages/torch/__init__.py", 218, FrameKind::kPython};
  const Frame users{4, "<module>", "/home/me/train.py", 0, "/home/me/train.py", 3, FrameKind::kPython};
  EXPECT_EQ(site_label({native, machinery, library, machinery, users}), "train.py:3 in <module>");
  // The user's frame cut off (an import deeper than the stack kept): which import, not the
  // machinery every import shares.
  EXPECT_EQ(site_label({native, machinery, library, machinery}), "torch/__init__.py:218 in <module>");
  EXPECT_EQ(site_label({native, machinery}), "<frozen importlib._bootstrap>:241 in _call_with_frames_removed");
  EXPECT_EQ(site_label({native, machinery, library, users}, {"/usr/lib/python3/dist-packages/torch/"}),
            "torch/__init__.py:218 in <module>");
}

// The summary's first line says how the program's run ended when it did not end by itself with
// status 0 (tleak view prints it again from a saved report, where tleak's closing line is gone).
TEST(ReportText, TheFirstLineSaysHowTheProgramEnded) {
  Report r = sample_report();
  r.run.program = ProgramInfo{};
  r.run.iterations = 2;
  r.run.program->clock = "iterations";
  EXPECT_NE(render_text(r, 10).find("(program, 2 iterations)\n"), std::string::npos);
  r.run.program->exit_status = 3;
  EXPECT_NE(render_text(r, 10).find("(program, exit status 3, 2 iterations)\n"), std::string::npos);
  r.run.program->exit_status.reset();
  r.run.program->exit_signal = SIGTERM;
  EXPECT_NE(render_text(r, 10).find("(program, killed by SIGTERM, 2 iterations)\n"), std::string::npos);
  r.run.program->stopped_by = "max-live";
  r.run.program->exit_signal = SIGKILL;
  EXPECT_NE(render_text(r, 10).find("(program, stopped by --max-live, 2 iterations)\n"), std::string::npos);
}

// A count of one reads in the singular: "1 time sample", "1 block", "1 smaller bounded site".
TEST(ReportText, CountsOfOneAreSingular) {
  Report r = sample_report();
  r.run.program = ProgramInfo{};
  r.run.iterations = 1;
  r.totals.leaked_blocks = 1;
  r.omitted_sites.sites = 1;
  std::string text = render_text(r, 10);
  EXPECT_NE(text.find("(program, 1 time sample, one every 100 ms)\n"), std::string::npos) << text;
  EXPECT_NE(text.find(" in 1 block,"), std::string::npos) << text;
  EXPECT_NE(text.find("... and 1 smaller bounded site added up in the report (its peak "), std::string::npos) << text;
  r.run.program->clock = "iterations";
  text = render_text(r, 10);
  EXPECT_NE(text.find("(program, 1 iteration)\n"), std::string::npos) << text;
  r.run.iterations = 2;
  r.totals.leaked_blocks = 2;
  r.omitted_sites.sites = 2;
  text = render_text(r, 10);
  EXPECT_NE(text.find("(program, 2 iterations)\n"), std::string::npos) << text;
  EXPECT_NE(text.find(" in 2 blocks,"), std::string::npos) << text;
  EXPECT_NE(text.find("... and 2 smaller bounded sites added up in the report (largest peak "), std::string::npos) << text;

  SiteReport held = r.sites.at(0);
  held.verdict = "retained";
  held.label = "f (a.cc:1)";
  held.retained.measured = true;
  held.retained.drag_ops_max = 1;
  held.retained.drag_iterations_max = 1;
  EXPECT_NE(summary_sentence(held, r).find("(drag up to 1 op, 1 iteration) at f (a.cc:1)"), std::string::npos)
      << summary_sentence(held, r);
  held.retained.drag_ops_max = 7;
  held.retained.drag_iterations_max = 2;
  EXPECT_NE(summary_sentence(held, r).find("(drag up to 7 ops, 2 iterations) at f (a.cc:1)"), std::string::npos)
      << summary_sentence(held, r);
}

// Two sites at one line of the user's, whose shown frames are the same (a PyTorch module call that
// allocates in several places): each names the function on its path the other lacks, so that the
// two entries do not read as one site listed twice. A site unlike any other gets no such line.
TEST(ReportText, SitesThatReadAlikeSayWhatSetsThemApart) {
  Report r = sample_report();
  r.run.program = ProgramInfo{};
  r.sites.clear();
  const Frame alloc{1, "malloc", "libc.so.6", 1, "", 0};
  const Frame call_impl{2, "Module._call_impl", "/usr/lib/python3/dist-packages/torch/nn/modules/module.py", 0,
                        "/usr/lib/python3/dist-packages/torch/nn/modules/module.py", 1194, FrameKind::kPython};
  const Frame users{3, "<module>", "/home/me/train.py", 0, "/home/me/train.py", 18, FrameKind::kPython};
  const Frame linear{4, "at::native::linear(at::Tensor const&)", "libtorch_cpu.so", 4, "", 0};
  const Frame relu{5, "at::native::relu(at::Tensor const&)", "libtorch_cpu.so", 5, "", 0};
  const Frame empty{6, "at::empty(long)", "libtorch_cpu.so", 6, "", 0};
  const SiteReport first = growth_site("first", {alloc, empty, linear, call_impl, users});
  r.sites = {first, growth_site("second", {alloc, empty, relu, call_impl, users}), growth_site("other", {alloc, relu, users})};
  const std::string text = render_text(r, 10);
  ASSERT_EQ(first.label, "train.py:18 in <module>");
  const auto at_first = text.find("first\n"), at_second = text.find("second\n"), at_other = text.find("other\n");
  ASSERT_NE(at_first, std::string::npos);
  ASSERT_NE(at_second, std::string::npos);
  ASSERT_NE(at_other, std::string::npos);
  const auto line_after = [&](std::size_t at) {
    const auto start = text.find('\n', at) + 1;
    return text.substr(start, text.find('\n', start) - start);
  };
  EXPECT_EQ(line_after(at_first), "           via native::linear") << text;
  EXPECT_EQ(line_after(at_second), "           via native::relu") << text;
  EXPECT_EQ(text.find("via", at_other), std::string::npos) << text;
}

// Debian's numpy is stripped: an array's data and its shape, allocated on one line of the user's,
// part only in frames with no name, at different depths. Each is told by its innermost such frame
// the other lacks (by module and offset: debug symbols installed later resolve it); a named one
// still comes first.
TEST(ReportText, SitesThatPartOnlyInAStrippedLibrarySayWhereByOffset) {
  Report r = sample_report();
  r.run.program = ProgramInfo{};
  r.sites.clear();
  const Frame alloc{1, "malloc", "libc.so.6", 1, "", 0};
  const Frame data{2, "??", "_multiarray_umath.so", 0xde138, "", 0};
  const Frame data_caller{9, "??", "_multiarray_umath.so", 0xde6ee, "", 0};
  const Frame shape{3, "??", "_multiarray_umath.so", 0x117fc7, "", 0};
  const Frame common{4, "??", "_multiarray_umath.so", 0x118516, "", 0};
  const Frame named_common{5, "PyObject_CallFunctionObjArgs", "python3.11", 0x145c48, "", 0};
  const Frame multiply{6, "PyNumber_Multiply", "python3.11", 0x1a6b21, "", 0};
  const Frame users{7, "features", "/home/me/cache.py", 0, "/home/me/cache.py", 5, FrameKind::kPython};
  // One frame deeper than `second`'s: what is shown begins at another depth, and reads the same.
  const SiteReport first = growth_site("first", {alloc, data, data_caller, common, named_common, multiply, users});
  // And with a frame more shown: `first`'s stack was cut at the depth kept.
  const Frame eval{10, "PyEval_EvalCode", "python3.11", 0x1236bb, "", 0};
  // Parts from `first` at a named frame deeper than an unnamed one: the name is said.
  const Frame named_part{8, "PyArray_NewFromDescr", "_multiarray_umath.so", 0x120000, "", 0};
  r.sites = {first, growth_site("second", {alloc, shape, common, named_common, multiply, users, eval}),
             growth_site("third", {alloc, shape, named_part, named_common, multiply, users})};
  const std::string text = render_text(r, 10);
  ASSERT_EQ(first.label, "cache.py:5 in features");
  EXPECT_EQ(line_after(text, "first"), "           via _multiarray_umath.so+0xde138") << text;
  EXPECT_EQ(line_after(text, "second"), "           via _multiarray_umath.so+0x117fc7") << text;
  EXPECT_EQ(line_after(text, "third"), "           via PyArray_NewFromDescr") << text;
}

// Two sites from two calls on one line of the user's (a layer applied to another's output) read
// alike frame by frame: each says which call is its own, quoted from the file with its column,
// and by its frame's name where the file cannot be read.
TEST(ReportText, CallsOnOneLineAreToldApartByTheirExpression) {
  const std::string source = write_temp("tleak_two_calls.py", "class Model:\n    def forward(self, x):\n"
                                                              "        return self.l2(torch.relu(self.l1(x)))\n");
  Report r = sample_report();
  r.run.program = ProgramInfo{};
  r.sites.clear();
  const Frame alloc{1, "operator new(unsigned long)", "libstdc++.so.6", 1, "", 0};
  const Frame addmm{2, "at::_ops::addmm::call()", "libtorch_cpu.so", 2, "", 0};
  const Frame call_impl{3, "Module._call_impl", "module.py", 0, "/usr/lib/python3/dist-packages/torch/nn/modules/module.py",
                        1194, FrameKind::kPython};
  Frame outer{4, "Model.forward", source, 0, source, 3, FrameKind::kPython};
  outer.column = 16;  // self.l2(...), to the line's end
  outer.end_column = 47;
  Frame inner = outer;
  inner.address = 5;
  inner.column = 35;  // self.l1(x)
  inner.end_column = 45;
  r.sites = {growth_site("first", {alloc, addmm, call_impl, inner, call_impl}),
             growth_site("second", {alloc, addmm, call_impl, outer, call_impl})};
  std::string text = render_text(r, 10);
  EXPECT_EQ(line_after(text, "first"), "           via self.l1(x)  tleak_two_calls.py:3:35") << text;
  EXPECT_EQ(line_after(text, "second"), "           via self.l2(torch.relu(self.l1(x)))  tleak_two_calls.py:3:16") << text;
  // A third site of the line, whose kernel allocates by another path (the output's storage, beside
  // the two matrix products' workspaces): it says its path; the other two say theirs, and since that
  // does not tell them from each other, their calls too (a real two-layer PyTorch loop, run as a user,
  // gave three alike sites on one line, two of them "via addmm::call" and nothing more).
  const Frame alloc_cpu{6, "c10::alloc_cpu(unsigned long)", "libc10.so", 6, "", 0};
  r.sites.push_back(growth_site("third", {alloc, alloc_cpu, call_impl, outer, call_impl}));
  r.sites.insert(r.sites.begin(), r.sites.back());
  r.sites.pop_back();
  text = render_text(r, 10);
  EXPECT_EQ(line_after(text, "third"), "           via c10::alloc_cpu") << text;
  EXPECT_EQ(line_after(text, "first"), "           via addmm::call") << text;
  EXPECT_NE(text.find("           via addmm::call\n           via self.l1(x)  tleak_two_calls.py:3:35\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("           via addmm::call\n           via self.l2(torch.relu(self.l1(x)))  tleak_two_calls.py:3:16\n"),
            std::string::npos)
      << text;
  r.sites.erase(r.sites.begin());
  // With Windows line ends, a quote that runs to its line's end (an expression that goes on past
  // it) leaves the carriage return out.
  std::ofstream(source, std::ios::binary) << "class Model:\r\n    def forward(self, x):\r\n"
                                             "        return self.l2(torch.relu(self.l1(x)))\r\n";
  r.sites[1].frames[3].end_column = 0;
  text = render_text(r, 10);
  EXPECT_EQ(line_after(text, "second"), "           via self.l2(torch.relu(self.l1(x))) ...  tleak_two_calls.py:3:16") << text;
  r.sites[1].frames[3].end_column = 47;
  // A file changed since, whose line no longer reaches the columns: the frame's name.
  std::ofstream(source) << "x = 1\n\nshort\n";
  text = render_text(r, 10);
  EXPECT_EQ(line_after(text, "first"), "           via Model.forward  tleak_two_calls.py:3:35") << text;
  std::filesystem::remove(source);
  text = render_text(r, 10);
  EXPECT_EQ(line_after(text, "second"), "           via Model.forward  tleak_two_calls.py:3:16") << text;
  // Without columns (a report from before them) they read alike, and nothing is made up.
  for (SiteReport& s : r.sites) s.frames[3].column = s.frames[3].end_column = 0;
  text = render_text(r, 10);
  EXPECT_EQ(text.find("via"), std::string::npos) << text;
}

}  // namespace
}  // namespace tleak::diagnosis

namespace tleak::diagnosis {
namespace {

// The file text (sites written apart, samples straight from the integers) is the same document as
// to_json, indented or compact.
TEST(ReportJson, FileTextIsTheSameDocumentAsToJson) {
  Report r = sample_report();
  r.sites[0].live_bytes_at_samples = {0, 1, -2, 9223372036854775807LL};
  Frame odd{0x5678123, "f\"q\\\n\x01", "m\xc3\xa9", 7, "caf\xc3\xa9.py", 3, FrameKind::kPython};
  r.sites[0].frames.push_back(odd);
  odd.address = 0x5678124;
  odd.column = 1;
  odd.end_column = 1048577;
  r.sites[0].frames.push_back(odd);
  odd.address = 0x5678125;
  odd.end_column = 0;  // runs on past its line
  r.sites[0].frames.push_back(odd);
  odd.address = 0;
  r.sites[0].frames.push_back(odd);
  // Every member the site writer spells out itself, with values that test its number and text forms.
  SiteReport& s = r.sites[0];
  s.reason = "rose \"fast\"\tat caf\xc3\xa9";
  s.label = "f (a.cc:1)";
  s.allocator = "malloc";
  s.allocations = 18446744073709551615ULL;
  s.bytes_allocated = -1;
  s.growth.confidence = 0.123456789012345;
  s.growth.tail_slope_bytes_per_iteration = -3.5e-7;
  s.growth.rise_bytes = -9223372036854775807LL - 1;
  s.retained = {true, 4, 5, 1e300, 0.0, 6, 7, 8};
  SiteReport flat = s;
  flat.growth.plateau_iteration.reset();
  flat.frames.clear();
  flat.live_bytes_at_samples.clear();
  r.sites.push_back(flat);
  EXPECT_EQ(nlohmann::json::parse(report_file_text(r)), to_json(r));
  r.sites.pop_back();
  for (std::size_t i = 0; i <= kLargeReportSites; ++i) r.sites.push_back(r.sites[0]);
  const std::string compact = report_file_text(r);
  EXPECT_EQ(std::count(compact.begin(), compact.end(), '\n'), 1);
  EXPECT_EQ(nlohmann::json::parse(compact), to_json(r));
  r.sites.clear();
  EXPECT_EQ(nlohmann::json::parse(report_file_text(r)), to_json(r));
  // Bytes that are not UTF-8 (a file name in another encoding) still give valid JSON.
  r = sample_report();
  r.sites[0].frames[0].file = "bad\xff\xfename.c";
  const nlohmann::json parsed = nlohmann::json::parse(report_file_text(r));
  EXPECT_EQ(parsed["sites"][0]["frames"][0]["file"], "bad\xef\xbf\xbd\xef\xbf\xbdname.c");
}

// Frames at one address (the functions inlined there, then the one they were inlined into) are
// written once for all the sites that share them: every site's frames still come out as its own,
// whether it has the whole run, a run cut at either end, or a recursion's frames at one address.
TEST(ReportJson, InlinedRunsSharedBySitesAreEachSitesOwn) {
  Report r = sample_report();
  const auto frame = [](std::uintptr_t address, const std::string& function, FrameKind kind) {
    return Frame{address, function, "prog", address - 0x1000, "a.cc", static_cast<int>(address % 97), kind};
  };
  const Frame new_op = frame(0x1100, "operator new", FrameKind::kNative), main_frame = frame(0x1300, "main", FrameKind::kNative);
  const std::vector<Frame> whole = {new_op, frame(0x1200, "allocate", FrameKind::kInlined), frame(0x1200, "emplace_back", FrameKind::kInlined),
                                    frame(0x1200, "grow", FrameKind::kNative), main_frame};
  const std::vector<std::vector<Frame>> stacks = {
      whole,
      {frame(0x1200, "emplace_back", FrameKind::kInlined), frame(0x1200, "grow", FrameKind::kNative), main_frame},  // cut before
      {new_op, frame(0x1200, "allocate", FrameKind::kInlined)},                                        // cut after
      whole,
      {frame(0x1400, "recurse", FrameKind::kNative), frame(0x1400, "recurse", FrameKind::kNative), main_frame},
      {new_op, frame(0x1200, "allocate", FrameKind::kInlined), frame(0x1200, "emplace_back", FrameKind::kInlined), frame(0x1200, "grow", FrameKind::kNative)},
  };
  SiteReport base = r.sites[0];
  r.sites.clear();
  for (const auto& frames : stacks) {
    r.sites.push_back(base);
    r.sites.back().frames = frames;
  }
  const nlohmann::json parsed = nlohmann::json::parse(report_file_text(r));
  EXPECT_EQ(parsed, to_json(r));
  ASSERT_EQ(parsed["sites"].size(), stacks.size());
  for (std::size_t i = 0; i < stacks.size(); ++i) {
    ASSERT_EQ(parsed["sites"][i]["frames"].size(), stacks[i].size()) << i;
    for (std::size_t k = 0; k < stacks[i].size(); ++k) {
      EXPECT_EQ(parsed["sites"][i]["frames"][k]["function"], stacks[i][k].function) << i << " " << k;
      EXPECT_EQ(parsed["sites"][i]["frames"][k]["kind"], frame_kind_name(stacks[i][k].kind)) << i << " " << k;
    }
  }
}

}  // namespace
}  // namespace tleak::diagnosis
