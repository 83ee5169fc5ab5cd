// The HTML views of a report and of a diff: one self-contained page (scripts, styles and data inline, no request
// when opened) with the verdict, the live-bytes timeline, the sites table, a flame graph and a
// site's detail. Built from web/src with uPlot and d3-flame-graph.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "tleak/diagnosis/report.h"

namespace tleak::web {

std::string report_page(const diagnosis::Report& report);

// The diff page: both runs' timelines overlaid, the sites that regressed first with their figures
// before and after, and a differential flame graph. `diff` is a tleak.diff/1 value; `a` and `b` the
// two reports it compares.
std::string diff_page(const nlohmann::json& diff, const diagnosis::Report& a, const diagnosis::Report& b);

}  // namespace tleak::web
