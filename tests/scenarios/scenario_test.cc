// Every scenario and variant through `tleak run`, asserting the verdict and the figure that matters.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <sstream>
#include <nlohmann/json.hpp>
#include <string>

#include "../support/process.h"

namespace tleak {
namespace {

using nlohmann::json;

json run(const std::string& scenario, const std::string& variant, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"run", scenario, "--variant", variant};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = testing::run_process(TLEAK_BINARY, args);
  EXPECT_EQ(r.exit_code, 0) << scenario << " " << variant << ": " << r.err;
  return json::parse(r.out);
}

const json& site_with(const json& report, const std::string& verdict) {
  for (const json& s : report["sites"]) {
    if (s["verdict"] == verdict) return s;
  }
  static const json none = json::object();
  ADD_FAILURE() << "no " << verdict << " site in " << report["summary"]["sentence"];
  return none;
}

double slope(const json& report) { return site_with(report, "growth")["growth"]["slope_bytes_per_iteration"].get<double>(); }

const json& allocator(const json& report, const std::string& name) {
  for (const json& a : report["totals"]["allocators"]) {
    if (a["name"] == name) return a;
  }
  static const json none = json::object();
  ADD_FAILURE() << "no allocator " << name;
  return none;
}

bool has_note(const json& report, const std::string& text) {
  for (const json& n : report["notes"]) {
    if (n.get<std::string>().find(text) != std::string::npos) return true;
  }
  ADD_FAILURE() << "no note containing '" << text << "' in " << report["notes"];
  return false;
}

struct Case {
  std::string scenario;
  std::string leaky_verdict;
  std::string fixed_verdict;
  // Checks of the key figures, given both reports.
  std::function<void(const json& leaky, const json& fixed)> figures;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.scenario; }

class ScenarioTest : public ::testing::TestWithParam<Case> {};

TEST_P(ScenarioTest, VerdictsAndKeyFigures) {
  const Case& c = GetParam();
  const json leaky = run(c.scenario, "leaky"), fixed = run(c.scenario, "fixed");
  EXPECT_EQ(leaky["summary"]["verdict"], c.leaky_verdict) << leaky["summary"]["sentence"];
  EXPECT_EQ(fixed["summary"]["verdict"], c.fixed_verdict) << fixed["summary"]["sentence"];
  if (c.fixed_verdict != "leak") {
    EXPECT_EQ(fixed["totals"]["leaked_bytes"], 0);
  }
  if (c.figures) c.figures(leaky, fixed);
}

constexpr double MiB = 1 << 20;

INSTANTIATE_TEST_SUITE_P(
    Catalogue, ScenarioTest,
    ::testing::Values(
        Case{"xla-rebind-loop", "bounded", "bounded",
             [](const json& l, const json& f) {
               // Rebinding without releasing first holds two 4 MiB tensors at once; releasing, one
               // (plus a few scalars and the generator's state).
               EXPECT_NEAR(l["totals"]["peak_live_bytes"].get<double>(), 2 * 4 * MiB, 1024);
               EXPECT_NEAR(f["totals"]["peak_live_bytes"].get<double>(), 4 * MiB, 1024);
             }},
        Case{"xla-held-until-complete", "bounded", "bounded",
             [](const json& l, const json& f) {
               // `del result` of a rebound scalar changes nothing: the same peak, the two 256 KiB
               // inputs and one execution's temps, which go when each call completes.
               // (Rebinding holds the old 4-byte scalar while the next is made.)
               EXPECT_EQ(l["totals"]["peak_live_bytes"].get<double>() - f["totals"]["peak_live_bytes"].get<double>(), 4);
               EXPECT_NEAR(l["totals"]["peak_live_bytes"].get<double>(), 1 * MiB, 64);
               EXPECT_TRUE(has_note(l, "temp arena per execution: 524288 bytes for 12 temps"));
               // Freed bytes stay reserved by the pool: nothing went back to the system.
               EXPECT_TRUE(has_note(l, "the host pool reserves 2097152 bytes with 524352 in use"));
             }},
        Case{"xla-large-intermediate", "bounded", "bounded",
             [](const json& l, const json& f) {
               // As written the n x n intermediate (4 MiB) is made on the device beside the input,
               // and the CPU placement adds a host copy of it; the rewrite never makes it.
               EXPECT_NEAR(allocator(l, "device")["peak_live_bytes"].get<double>(), 8 * MiB, 8 * 1024);
               EXPECT_NEAR(allocator(l, "host-pool")["peak_live_bytes"].get<double>(), 4 * MiB, 8 * 1024);
               EXPECT_NEAR(allocator(f, "device")["peak_live_bytes"].get<double>(), 4 * MiB, 16 * 1024);
               EXPECT_LT(allocator(f, "host-pool")["peak_live_bytes"].get<double>(), 64 * 1024);
               EXPECT_EQ(allocator(l, "device")["space"], "device");
             }},
        Case{"xla-recompile-shapes", "growth", "bounded",
             [](const json& l, const json& f) {
               EXPECT_TRUE(has_note(l, "20 executables cached after 20 calls"));
               EXPECT_TRUE(has_note(f, "2 executables cached after 20 calls"));
             }},
        Case{"function-accumulate", "bounded", "bounded",
             [](const json& l, const json& f) {
               // The unrolled loop's trace keeps a constant per step; the TensorArray loop keeps none.
               EXPECT_TRUE(has_note(l, "traced 1 time(s) for 20 calls"));
               EXPECT_GT(l["totals"]["peak_live_bytes"].get<double>(), f["totals"]["peak_live_bytes"].get<double>() + 10000 * 4 - 1024);
             }},
        Case{"function-captured-state", "bounded", "bounded",
             [](const json& l, const json& f) {
               // Python side effects run at trace time: the counter stops at 1, outputs stay x + 1.
               EXPECT_TRUE(has_note(l, "1 trace(s) for 20 calls; outputs went from 2.000000 to 2.000000, 19 of 20 stale"));
               EXPECT_TRUE(has_note(l, "the captured counter is 1 after 20 calls"));
               EXPECT_TRUE(has_note(f, "1 trace(s) for 20 calls; outputs went from 2.000000 to 21.000000, 0 of 20 stale"));
             }},
        Case{"function-temporaries", "bounded", "bounded",
             [](const json& l, const json& f) {
               // The executor holds an op's input and output, never the whole chain; fused, none.
               EXPECT_NEAR(l["totals"]["peak_live_bytes"].get<double>(), 4 * MiB, 1024);
               EXPECT_NEAR(f["totals"]["peak_live_bytes"].get<double>(), 3 * MiB, 1024);
             }},
        Case{"graph-ops-in-loop", "growth", "bounded",
             [](const json& l, const json&) {
               EXPECT_NEAR(slope(l), 40000, 0.1 * 40000);  // the constant's 10,000 floats per iteration
               EXPECT_NE(site_with(l, "growth")["label"].get<std::string>().find("runtime::constant in"), std::string::npos);
             }},
        Case{"eager-loop", "bounded", "bounded",
             [](const json& l, const json& f) {
               EXPECT_GT(l["total_retained"]["peak_dead_bytes"], f["total_retained"]["peak_dead_bytes"]);
               EXPECT_EQ(l["totals"]["peak_live_bytes"], f["totals"]["peak_live_bytes"]);
             }},
        Case{"variable-in-loop", "bounded", "bounded",
             [](const json& l, const json& f) {
               // TF2 eager: rebinding `var` frees the last variable; no collection keeps it.
               EXPECT_EQ(l["totals"]["peak_live_bytes"], f["totals"]["peak_live_bytes"]);
             }},
        Case{"custom-op-scratch", "leak", "bounded",
             [](const json& l, const json& f) {
               // Four early returns (one call in five) each lose a 1,000-float scratch buffer.
               EXPECT_EQ(l["totals"]["leaked_bytes"], 4 * 4000);
               EXPECT_EQ(l["totals"]["leaked_blocks"], 4);
               EXPECT_NE(site_with(l, "leak")["frames"][0]["function"].get<std::string>().find("normalize_kernel_leaky"),
                         std::string::npos);
               EXPECT_EQ(f["totals"]["leaked_bytes"], 0);
             }},
        Case{"predict-random-noise", "bounded", "bounded",
             [](const json& l, const json&) { EXPECT_EQ(l["totals"]["leaked_bytes"], 0); }},
        Case{"predict-returned-refs", "bounded", "bounded",
             [](const json& l, const json& f) {
               // A discarded return value goes at once, by reference counting: no collector involved.
               EXPECT_EQ(allocator(l, "host-pool")["peak_live_bytes"], allocator(f, "host-pool")["peak_live_bytes"]);
               EXPECT_EQ(l["summary"]["retained_sites"], 0);
             }},
        Case{"predict-allow-growth", "growth", "bounded",
             [](const json& l, const json&) {
               EXPECT_DOUBLE_EQ(slope(l), 256 * 64 * 4);  // one kept 256 x 64 prediction per iteration
               EXPECT_EQ(allocator(l, "device")["peak_reserved_bytes"], 1 << 30);
             }},
        Case{"predict-shared-session", "bounded", "bounded",
             [](const json& l, const json& f) {
               // Each new thread's random_normal lands in the process default graph, not the session's.
               EXPECT_TRUE(has_note(l, "200 of 200 threads failed (session.run: a fetch is not a tensor of this session's graph)"));
               EXPECT_TRUE(has_note(l, "the process default graph gained 200 nodes"));
               EXPECT_TRUE(has_note(l, "0 predictions served"));
               EXPECT_TRUE(has_note(f, "1000 predictions served; 1 session(s) initialized"));
             }},
        Case{"constant-list", "retained", "bounded",
             [](const json& l, const json&) {
               // Kept, reachable and never used again: retained for the whole run, not a leak.
               const json& held = site_with(l, "retained");
               EXPECT_EQ(held["retained"]["peak_dead_bytes"], 10000 * 4);
               EXPECT_EQ(held["retained"]["drag_iterations_max"], 20);
               EXPECT_EQ(l["totals"]["leaked_bytes"], 0);
             }},
        Case{"session-graph", "growth", "bounded",
             [](const json& l, const json& f) {
               // a and b stay in the default graph after each session closes: 2 x 12 bytes per call.
               double total = 0;
               for (const json& site : l["sites"]) {
                 if (site["verdict"] == "growth") total += site["growth"]["slope_bytes_per_iteration"].get<double>();
               }
               EXPECT_DOUBLE_EQ(total, 24);
               EXPECT_TRUE(has_note(l, "result [5.000000, 7.000000, 9.000000]; the default graph holds 1500 nodes and 12000 bytes"));
               EXPECT_TRUE(has_note(f, "the default graph holds 0 nodes and 0 bytes"));
             }},
        Case{"host-array-convert", "bounded", "bounded",
             [](const json& l, const json& f) {
               EXPECT_NEAR(l["totals"]["peak_live_bytes"].get<double>(), 2 * 4 * MiB, 1024);  // array and its copy
               EXPECT_NEAR(f["totals"]["peak_live_bytes"].get<double>(), 4 * MiB, 1024);      // wrapped, not copied
             }},
        Case{"pool-hides-leak", "leak", "bounded",
             [](const json& l, const json&) {
               EXPECT_EQ(l["totals"]["leaked_bytes"], 10000 * 4);
               EXPECT_EQ(allocator(l, "host-pool")["leaked_blocks"], 1);
             }},
        Case{"device-hides-leak", "leak", "bounded",
             [](const json& l, const json&) {
               EXPECT_EQ(allocator(l, "device")["leaked_bytes"], 256 * 256 * 4);
               EXPECT_EQ(allocator(l, "host-pool")["leaked_bytes"], 0);
             }},
        Case{"persistent-tape", "growth", "bounded", nullptr},
        Case{"traced-capture", "retained", "bounded",
             [](const json& l, const json&) {
               EXPECT_EQ(site_with(l, "retained")["retained"]["peak_dead_bytes"], 512 * 512 * 4);
             }},
        Case{"retrace-python-value", "growth", "bounded",
             [](const json& l, const json& f) {
               EXPECT_TRUE(has_note(l, "20 trace(s) for 20 calls (0 wrong results)"));
               EXPECT_TRUE(has_note(f, "1 trace(s) for 20 calls (0 wrong results)"));
               EXPECT_NEAR(slope(l), 4096, 0.1 * 4096);  // one 1,024-float constant per trace
             }},
        Case{"jit-warmup-cache", "retained", "bounded",
             [](const json& l, const json&) {
               EXPECT_TRUE(has_note(l, "2 executables cached"));
               // The warm-up shape's mask constant, not its temporaries (those went with the call).
               EXPECT_EQ(site_with(l, "retained")["retained"]["peak_dead_bytes"], 1024 * 1024 * 4);
             }},
        Case{"result-reference-cycle", "retained", "bounded",
             [](const json& l, const json&) {
               EXPECT_EQ(site_with(l, "retained")["retained"]["drag_iterations_max"], 7);
             }},
        Case{"per-thread-cache", "growth", "bounded",
             [](const json& l, const json& f) {
               EXPECT_NEAR(slope(l), 4 * 1024 * 4, 0.1 * 16384);  // one staging buffer per new thread
               EXPECT_TRUE(has_note(l, "20 per-thread states still cached"));
               EXPECT_TRUE(has_note(f, "0 per-thread states still cached"));
             }},
        Case{"clean-loop", "bounded", "bounded", nullptr},
        Case{"append-loop", "growth", "bounded", nullptr}),
    [](const ::testing::TestParamInfo<Case>& param) {
      std::string name = param.param.scenario;
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

// The document's other remedy, a session per thread: TF1 sessions each hold their own copy of the
// variables, so ten overlapping threads hold ten copies.
TEST(ScenarioVariants, ASessionPerThreadHoldsACopyOfTheVariablesPerThread) {
  const json per_thread = run("predict-shared-session", "session-per-thread");
  EXPECT_EQ(per_thread["summary"]["verdict"], "bounded");
  EXPECT_TRUE(has_note(per_thread, "1000 predictions served; 201 session(s) initialized"));
  EXPECT_TRUE(has_note(per_thread, "2 variables (240 bytes)"));
  double copies_peak = 0;
  for (const json& site : per_thread["sites"]) {
    for (const json& frame : site["frames"]) {
      if (frame["function"].get<std::string>().find("Session::initialize_variables") != std::string::npos) {
        copies_peak = std::max(copies_peak, site["peak_live_bytes"].get<double>());
      }
    }
  }
  EXPECT_EQ(copies_peak, 10 * 240);  // the ten threads' sessions at once
  const auto r = testing::run_process(TLEAK_BINARY, {"run", "predict-shared-session", "--variant", "queue"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("has no variant 'queue' (it has: leaky, fixed, session-per-thread)"), std::string::npos) << r.err;
}

// allow_growth changes what the device reserves, not what grows.
TEST(ScenarioVariants, AllowGrowthLeavesTheGrowthAndShrinksOnlyTheReservation) {
  const json leaky = run("predict-allow-growth", "leaky"), growing = run("predict-allow-growth", "allow-growth");
  EXPECT_EQ(growing["summary"]["verdict"], "growth");
  EXPECT_DOUBLE_EQ(slope(growing), slope(leaky));
  EXPECT_EQ(allocator(growing, "device")["peak_live_bytes"], allocator(leaky, "device")["peak_live_bytes"]);
  EXPECT_EQ(allocator(growing, "device")["peak_reserved_bytes"], 2 << 20);
  EXPECT_TRUE(has_note(growing, "20 predictions kept; the device reserves 2097152 bytes"));
}

// function-accumulate's remedies: TensorFlow's TensorArray loop (one node, elements and the stack
// alive during a call) and the document's accumulator.
TEST(ScenarioVariants, TheTensorArrayLoopHoldsItsElementsAndTheStackAndNoConstants) {
  const json unrolled = run("function-accumulate", "leaky"), array = run("function-accumulate", "fixed");
  const json accumulator = run("function-accumulate", "accumulator");
  EXPECT_NEAR(unrolled["totals"]["peak_live_bytes"].get<double>(), 10000 * (8 + 8 + 4), 1024);  // results, stack, constants of i
  EXPECT_NEAR(array["totals"]["peak_live_bytes"].get<double>(), 10000 * (8 + 8), 1024);        // elements and stack
  EXPECT_LT(accumulator["totals"]["peak_live_bytes"].get<double>(), 64);
  for (const json* r : {&unrolled, &array, &accumulator}) {
    EXPECT_EQ((*r)["summary"]["verdict"], "bounded");
    EXPECT_TRUE(has_note(*r, "traced 1 time(s) for 20 calls"));
  }
  EXPECT_TRUE(has_note(array, "each call printed 100020000"));  // 10,000 x (3 + 2i) summed: the same values
  EXPECT_TRUE(has_note(unrolled, "each call printed 100020000"));
}

// TF1 graph mode: every tf.Variable joins the default graph's collection and stays with it;
// reset_default_graph() lets them go.
TEST(ScenarioModes, VariablesInGraphModeGrowWithTheDefaultGraph) {
  const json leaky = run("variable-in-loop", "leaky", {"--mode", "graph"});
  const json fixed = run("variable-in-loop", "fixed", {"--mode", "graph"});
  EXPECT_EQ(leaky["summary"]["verdict"], "growth");
  EXPECT_NEAR(slope(leaky), 100 * 100 * 4, 0.02 * 40000);
  EXPECT_TRUE(has_note(leaky, "20 variables in the default graph's collection"));
  EXPECT_EQ(fixed["summary"]["verdict"], "bounded");
  EXPECT_TRUE(has_note(fixed, "1 variables in the default graph's collection"));
}

TEST(ScenarioScaling, TwiceTheIterationsDoublesGrowthAndLeavesBoundedAlone) {
  const json growth20 = run("graph-ops-in-loop", "leaky", {"--iterations", "20"});
  const json growth40 = run("graph-ops-in-loop", "leaky", {"--iterations", "40"});
  const double final20 = site_with(growth20, "growth")["final_live_bytes"];
  const double final40 = site_with(growth40, "growth")["final_live_bytes"];
  EXPECT_DOUBLE_EQ(final40, 2 * final20);
  EXPECT_NEAR(slope(growth40), slope(growth20), 0.01 * slope(growth20));
  const json bounded20 = run("graph-ops-in-loop", "fixed", {"--iterations", "20"});
  const json bounded40 = run("graph-ops-in-loop", "fixed", {"--iterations", "40"});
  EXPECT_EQ(bounded20["totals"]["peak_live_bytes"], bounded40["totals"]["peak_live_bytes"]);
  EXPECT_EQ(bounded40["summary"]["verdict"], "bounded");
}

TEST(ScenarioModes, EveryListedModeRuns) {
  const auto list = testing::run_process(TLEAK_BINARY, {"list"});
  std::istringstream lines(list.out);
  std::string line;
  std::getline(lines, line);  // header
  int runs = 0;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string id, document, modes;
    fields >> id >> document >> modes;
    std::istringstream each(modes);
    for (std::string mode; std::getline(each, mode, ',');) {
      const auto r = testing::run_process(TLEAK_BINARY, {"run", id, "--mode", mode, "--iterations", "6", "--scale", "0.25"});
      EXPECT_EQ(r.exit_code, 0) << id << " in " << mode << ": " << r.err;
      ++runs;
    }
  }
  EXPECT_GE(runs, 30);
}

}  // namespace
}  // namespace tleak
