#include "tleak/diagnosis/step_words.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "tleak/diagnosis/counted.h"
#include "tleak/diagnosis/report.h"

namespace tleak::diagnosis {

std::string StepWords::count(std::uint64_t n) const { return counted(n, one, many); }

StepWords iteration_words() { return {"iteration", "iteration", "iterations", "iter"}; }

StepWords sample_words(double sample_seconds) {
  char period[32];
  if (sample_seconds < 1) {
    std::snprintf(period, sizeof period, "%g ms", std::round(sample_seconds * 1e6) / 1e3);
  } else {
    std::snprintf(period, sizeof period, "%g s", sample_seconds);
  }
  return {period, "sample", "samples", period};
}

StepWords step_words(const RunInfo& run) {
  if (run.program && run.program->clock == "time") return sample_words(run.program->sample_seconds);
  return iteration_words();
}

}  // namespace tleak::diagnosis
