// The catalogue of built-in workloads `tleak run` knows by name. Each scenario is a plain function
// of a WorkloadContext: it allocates through the context's allocators, reports ops and uses, and
// marks iterations. It never tells the engine what it expects to be found.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tleak/diagnosis/session.h"
#include "tleak/diagnosis/workload.h"

namespace tleak::scenarios {

struct Scenario {
  std::string id;
  std::string document;  // the seed document it reproduces, or "tleak" for tleak's own
  std::string summary;   // one line for `tleak list`
  std::vector<std::string> modes;  // supported; the first is the default
  std::uint64_t default_iterations = 20;
  // For `tleak explain`: what the document claims, whether tleak's measurement confirms it, what
  // tleak measures, and the fix. `claim_status` is "confirmed", "refuted", "partly confirmed" or,
  // for tleak's own scenarios, "not a document's claim". The `leaky` variant runs the document's
  // code as written, which need not leak; `fixed` runs the remedy.
  std::string claim;
  std::string claim_status;
  std::string measures;
  std::string fix;
  diagnosis::Workload run;
  // Every scenario has `leaky` (the document's code as written, or the pattern) and `fixed` (the
  // remedy); a scenario may add other remedies to compare, after those two.
  std::vector<std::string> variants = {"leaky", "fixed"};
  // What a variant changes outside the workload (a runtime option such as allow_growth), if any.
  void (*configure)(const std::string& variant, diagnosis::SessionOptions& options) = nullptr;
};

const std::vector<Scenario>& all_scenarios();
// "leaky, fixed, ...": the variants a scenario has, for messages.
inline std::string variant_list(const Scenario& s) {
  std::string out;
  for (const std::string& v : s.variants) out += (out.empty() ? "" : ", ") + v;
  return out;
}
inline bool has_variant(const Scenario& s, std::string_view variant) {
  for (const std::string& v : s.variants) {
    if (v == variant) return true;
  }
  return false;
}
// The scenario's claim_status, or "-" where it reproduces no document's claim.
inline std::string claim_status_or_dash(const Scenario& s) { return s.claim_status.empty() ? "-" : s.claim_status; }
// nullptr when no scenario has this id.
const Scenario* find_scenario(std::string_view id);

// What a command chose; anything left empty takes the scenario's default.
struct RunChoice {
  std::string variant = "leaky";
  std::string mode;
  std::optional<std::uint64_t> iterations;
  std::optional<double> scale;
};

// The options every command runs `scenario` with. Under Valgrind, sizes not chosen shrink (scale
// 0.25, at most 10 iterations, a 128 MiB device), and a note in the report says what was used.
// Throws std::invalid_argument for a mode the scenario does not run in or a variant it lacks.
diagnosis::SessionOptions session_options(const Scenario& scenario, const RunChoice& choice);

}  // namespace tleak::scenarios
