// What one step of a run's series is called in the sentences a report prints. A scenario or a
// program that marks its loop is sampled at each iteration; a program without marks is sampled
// every `--sample-every`, and its reasons and summary must say so: "+2.3 KiB per 100 ms over
// samples 3-19", not "per iteration" of a loop it does not have. (The report's figures keep their
// field names, `slope_bytes_per_iteration` and the like; `run.program.clock` says which step they
// are per.)
#pragma once

#include <cstdint>
#include <string>

namespace tleak::diagnosis {

struct RunInfo;

struct StepWords {
  std::string per;   // what a slope is per: "iteration", or the sampling period ("100 ms")
  std::string one;   // one point of the series: "iteration" or "sample"
  std::string many;  // "iterations" or "samples"
  std::string per_abbreviated;  // `per` in a figure's unit: "iter", or the period ("100 ms")

  // "1 iteration", "5 iterations".
  std::string count(std::uint64_t n) const;
};

StepWords iteration_words();
StepWords sample_words(double sample_seconds);
// The words for a report's run: samples when it is a program's run on the time clock.
StepWords step_words(const RunInfo& run);

}  // namespace tleak::diagnosis
