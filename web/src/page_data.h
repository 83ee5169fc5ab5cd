// The data a page carries: a report in columns. A 100,000-site report is some 180 MB of JSON, most
// of it the same keys, frames and file names written again for every site; as columns, with every
// string written once and every frame once, the page parses a fraction of it. Per-site curves are
// kept for the sites that matter most (every site not bounded, then the largest peaks) up to a
// limit; the page says which it left out. page_data.js turns it back into the report's shape.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>

#include "tleak/diagnosis/report.h"

namespace tleak::web::detail {

// Sites are converted one at a time: the whole report is never held as JSON.
nlohmann::json page_data(const diagnosis::Report& report, std::size_t max_curves = 2000);

}  // namespace tleak::web::detail
