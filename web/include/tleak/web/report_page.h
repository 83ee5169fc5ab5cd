// The HTML view of a report: one self-contained page (scripts, styles and data inline, no request
// when opened) with the verdict, the live-bytes timeline, the sites table, a flame graph and a
// site's detail. Built from web/src with uPlot and d3-flame-graph.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tleak::web {

// `report` is a tleak.report/1 value (as diagnosis::to_json writes it).
std::string report_page(const nlohmann::json& report);

}  // namespace tleak::web
