// The short human summary of a report (`--format text`): the verdict, the top sites with their top
// frames, and a sparkline of live bytes over the iterations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tleak/diagnosis/report.h"

namespace tleak::diagnosis {

std::string render_text(const Report& report, std::size_t max_sites = 5);
// Eight-level block characters scaled from zero to the series' maximum, at most `width` wide.
std::string sparkline(const std::vector<std::int64_t>& values, std::size_t width = 60);

}  // namespace tleak::diagnosis
