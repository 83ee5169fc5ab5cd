// What `tleak explain` says is what tleak measures: every byte figure a scenario's explanation
// states appears among the figures of its own reports (any mode, either variant), and every
// document scenario says whether its document's claim is confirmed or refuted.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "tleak/diagnosis/report_json.h"
#include "tleak/diagnosis/session.h"
#include "tleak/scenarios/scenario.h"

namespace tleak {
namespace {

using nlohmann::json;

// Every number in a report: its numeric fields, and the numbers written in its strings (notes).
void collect_numbers(const json& j, std::vector<double>& out) {
  if (j.is_number()) {
    out.push_back(j.get<double>());
  } else if (j.is_string()) {
    static const std::regex number(R"(\d+(\.\d+)?)");
    const std::string text = j.get<std::string>();
    for (std::sregex_iterator it(text.begin(), text.end(), number), end; it != end; ++it) out.push_back(std::stod(it->str()));
  } else if (j.is_structured()) {
    for (const json& item : j) collect_numbers(item, out);
  }
}

struct Figure {
  std::string text;
  double bytes;
  double tolerance;
};

// "39.1 KiB", "512 KiB", "24 B", "12000 bytes": as bytes, within the rounding of one decimal.
std::vector<Figure> byte_figures(const std::string& text) {
  static const std::regex figure(R"((\d[\d,]*(?:\.\d+)?) ?(B|KiB|MiB|GiB|bytes)\b)");
  std::vector<Figure> out;
  for (std::sregex_iterator it(text.begin(), text.end(), figure), end; it != end; ++it) {
    std::string digits = (*it)[1].str();
    std::erase(digits, ',');
    const std::string unit = (*it)[2].str();
    const double scale = unit == "KiB" ? 1024.0 : unit == "MiB" ? 1024.0 * 1024 : unit == "GiB" ? 1024.0 * 1024 * 1024 : 1.0;
    out.push_back({it->str(), std::stod(digits) * scale, scale == 1.0 ? 0.0 : 0.05 * scale});
  }
  return out;
}

class ExplainFigures : public ::testing::TestWithParam<std::string> {};

TEST_P(ExplainFigures, EveryByteFigureItStatesIsInItsReports) {
  const scenarios::Scenario& s = *scenarios::find_scenario(GetParam());
  std::vector<double> measured;
  for (const std::string& mode : s.modes) {
    for (const std::string& variant : s.variants) {
      const diagnosis::Report report = diagnosis::run_workload(s.run, scenarios::session_options(s, {variant, mode, {}, {}}));
      collect_numbers(diagnosis::to_json(report), measured);
    }
  }
  for (const Figure& f : byte_figures(s.measures)) {
    const bool found = std::any_of(measured.begin(), measured.end(), [&](double v) { return std::abs(v - f.bytes) <= f.tolerance; });
    EXPECT_TRUE(found) << s.id << " states \"" << f.text << "\" (" << f.bytes << " bytes), which no report of it shows";
  }
}

TEST_P(ExplainFigures, ADocumentsScenarioSaysWhetherTheClaimHolds) {
  const scenarios::Scenario& s = *scenarios::find_scenario(GetParam());
  if (s.document == "beyond" || s.document == "tleak") {
    EXPECT_EQ(s.claim_status, "") << s.id;
  } else {
    EXPECT_TRUE(s.claim_status == "confirmed" || s.claim_status == "refuted" || s.claim_status == "partly confirmed")
        << s.id << ": '" << s.claim_status << "'";
  }
}

std::vector<std::string> scenario_ids() {
  std::vector<std::string> ids;
  for (const scenarios::Scenario& s : scenarios::all_scenarios()) ids.push_back(s.id);
  return ids;
}

INSTANTIATE_TEST_SUITE_P(Catalogue, ExplainFigures, ::testing::ValuesIn(scenario_ids()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string name = param.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace tleak
