// Where the agent's time goes while it records an allocation, step by step: built in only with
// `cmake -DTLEAK_AGENT_PROFILE=ON` (a build for measuring, never the one users run), which prints
// the processor's timestamp-counter totals of each step to stderr as the program exits. In every
// other build these compile to nothing. It also counts the agent's stack walk's frames by where
// their rule was found (fast_unwind.h).
//
//   cmake -S . -B build/profile -DCMAKE_BUILD_TYPE=Release -DTLEAK_AGENT_PROFILE=ON
//   cmake --build build/profile --target tleak tleak_preload
//   build/profile/cli/tleak run -o r.json -- /usr/bin/python3 tests/programs/torch/loss_accumulated.py fixed
#pragma once

#include <atomic>
#include <cstdint>

namespace tleak::agent::step_profile {

enum Step : int {
  kUnwind,        // the stack's walk (the interposed function's capture: the agent's, or libunwind's)
  kObjectSearch,  // of it: searches of the loaded objects (unwinder_objects.h), for a return
                  // address met the first time, with the reading of its unwind tables
  kPython,        // reading the Python frames and giving them ids
  kHash,          // the stack's key
  kLock,          // the thread's cache of stacks looked up, and the buffer's lock taken
  kWrite,         // this allocation's records (its Python frames' and its stack's if new), sends
                  // and fences included
  kSteps
};

// Where the walk found each frame's rule, and how many records of some kinds went out.
enum Count : int {
  kFrames,   // every frame walked
  kByDepth,  // the thread's previous stack's, at the same depth
  kRecent,   // the thread's recent rules
  kShared,   // the table all threads share
  kFound,    // none of those: read from the object's unwind tables
  // What the agent wrote, by record kind (allocations, and those new to the thread's caches)
  kAllocRecords,
  kSiteRecords,         // stacks its thread's cache had not met (a stack it forgot comes again)
  kPythonFrameRecords,  // Python frames new to the process
  kCounts
};

#if defined(TLEAK_AGENT_PROFILE)
std::uint64_t now();
extern std::atomic<std::uint64_t> g_counts[kCounts];
// Not atomic read-modify-write (that would cost the walk more than it measures): threads counting
// at once may lose a few. Inline: out of line, its two calls for each of the PyTorch loop's 13.5
// million frames had put 60 ms into the walk's own figure.
inline void count(Count what) {
  g_counts[what].store(g_counts[what].load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}
void add(Step step, std::uint64_t ticks);
// The time since `*since` goes to `step`; `*since` becomes now.
inline void lap(Step step, std::uint64_t* since) {
  const std::uint64_t t = now();
  add(step, t - *since);
  *since = t;
}
#else
inline std::uint64_t now() { return 0; }
inline void add(Step, std::uint64_t) {}
inline void lap(Step, std::uint64_t*) {}
inline void count(Count) {}
#endif

}  // namespace tleak::agent::step_profile
