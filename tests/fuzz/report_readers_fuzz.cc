// The two report readers (the full one `check`, `view` and `explain` use, and the fast summary
// `diff` uses) on arbitrary bytes: each either reads the input or throws ReportError, never
// crashes, and when both read it they agree on what matters to a gate.
#include <cstdint>
#include <cstdlib>
#include <optional>

#include "fuzz_input_file.h"
#include "tleak/diagnosis/report_json.h"
#include "tleak/diagnosis/report_summary.h"

using namespace tleak::diagnosis;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const tleak::fuzz::InputFile file(data, size);
  std::optional<ReportSummary> full, fast;
  try {
    full = summarize(read_report_file(file.path()));
  } catch (const ReportError&) {
  }
  try {
    fast = read_report_summary(file.path());
  } catch (const ReportError&) {
  }
  if (full && fast) {
    if (full->sites.size() != fast->sites.size() || full->leaked_bytes != fast->leaked_bytes ||
        full->peak_live_bytes != fast->peak_live_bytes || full->retained_peak_bytes != fast->retained_peak_bytes ||
        full->retained_measured != fast->retained_measured || full->leaks_judged != fast->leaks_judged ||
        full->unlisted_sites != fast->unlisted_sites ||
        full->unlisted_largest_peak != fast->unlisted_largest_peak || full->command != fast->command ||
        full->record != fast->record) {
      std::abort();  // the readers disagree: diff and check would judge one report two ways
    }
    for (std::size_t i = 0; i < full->sites.size(); ++i) {
      if (full->sites[i].key != fast->sites[i].key || full->sites[i].verdict != fast->sites[i].verdict) std::abort();
    }
  }
  return 0;
}
