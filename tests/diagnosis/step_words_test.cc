// What a run's steps are called in its sentences: iterations, or a program's time samples named
// by their period as --sample-every takes it (1 ms to 1 hour).
#include <gtest/gtest.h>

#include "tleak/diagnosis/report.h"
#include "tleak/diagnosis/step_words.h"

namespace tleak::diagnosis {
namespace {

TEST(StepWords, APeriodIsNamedAsAPersonWouldWriteIt) {
  EXPECT_EQ(sample_words(0.1).per, "100 ms");
  EXPECT_EQ(sample_words(0.05).per, "50 ms");
  EXPECT_EQ(sample_words(0.001).per, "1 ms");
  EXPECT_EQ(sample_words(0.0015).per, "1.5 ms");
  EXPECT_EQ(sample_words(0.25).per, "250 ms");
  EXPECT_EQ(sample_words(1).per, "1 s");
  EXPECT_EQ(sample_words(2.5).per, "2.5 s");
  EXPECT_EQ(sample_words(3600).per, "3600 s");
  EXPECT_EQ(sample_words(0.1).one, "sample");
  EXPECT_EQ(sample_words(0.1).many, "samples");
}

TEST(StepWords, ACountOfOneIsSingular) {
  EXPECT_EQ(iteration_words().count(1), "1 iteration");
  EXPECT_EQ(iteration_words().count(5), "5 iterations");
  EXPECT_EQ(iteration_words().count(0), "0 iterations");
  EXPECT_EQ(sample_words(0.1).count(1), "1 sample");
  EXPECT_EQ(sample_words(0.1).count(2), "2 samples");
}

TEST(StepWords, OnlyAProgramOnTheTimeClockIsSampled) {
  RunInfo scenario;
  EXPECT_EQ(step_words(scenario).per, "iteration");
  RunInfo marked;
  marked.program = ProgramInfo{};
  marked.program->clock = "iterations";
  EXPECT_EQ(step_words(marked).many, "iterations");
  RunInfo timed;
  timed.program = ProgramInfo{};
  timed.program->clock = "time";
  timed.program->sample_seconds = 0.25;
  EXPECT_EQ(step_words(timed).per, "250 ms");
  EXPECT_EQ(step_words(timed).one, "sample");
}

}  // namespace
}  // namespace tleak::diagnosis
