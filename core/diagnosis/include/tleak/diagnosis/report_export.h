// A report in the formats other tools read, so its stacks and curves can be seen there:
//   collapsed stacks  "root;...;leaf weight" per line (flamegraph.pl, inferno, speedscope);
//   speedscope        its JSON file format, one profile per measure;
//   chrome-trace      Trace Event JSON (Perfetto, chrome://tracing): counter tracks of live bytes
//                     per allocator and of the top sites, an instant event per iteration mark.
// Every figure is the report's own: the weights of a measure add up to that measure summed over
// the report's sites, and the live-bytes track ends at the report's final live bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tleak/diagnosis/report.h"

namespace tleak::diagnosis {

// What a flame graph is weighted by.
enum class Measure {
  kPeak,      // the site's peak live bytes
  kLeaked,    // bytes leaked at the site
  kGrowth,    // bytes per iteration, at sites whose verdict is growth
  kRetained,  // the site's peak of dead-but-held bytes
};
const char* to_string(Measure measure);
std::optional<Measure> measure_from_string(std::string_view name);

// The site's weight in `measure`, in bytes (growth rounded to whole bytes per iteration).
std::int64_t site_weight(const SiteReport& site, Measure measure);
// A frame as the exports name it: "function (file:line)", "function [module]" without debug info.
std::string frame_name(const Frame& frame);

std::string collapsed_stacks(const Report& report, Measure measure);
nlohmann::json speedscope_profile(const Report& report);
// `top_sites`: how many sites (by peak) get their own counter track.
nlohmann::json chrome_trace(const Report& report, std::size_t top_sites = 8);

}  // namespace tleak::diagnosis
