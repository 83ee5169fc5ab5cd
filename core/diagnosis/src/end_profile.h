// How long each step of a program run's end takes in tleak, from the exit scan's answer (or the
// program's end, without one): its modules' symbols ready, the recording finished, the sites
// judged, their findings filled, the program's exit waited for, the report made, written and
// flushed, and the rest until tleak exits; the work done while the program scans is timed apart
// (time_aside); and how many bytes of records came in message slots and how many through the
// socket (a slot was not free: the reader had fallen behind). Only in the profile build (`cmake -DTLEAK_AGENT_PROFILE=ON`,
// agent/src/step_profile.h), which prints them as tleak exits: "tleak end profile (ms): ...". In
// every other build these compile to nothing.
#pragma once

#include <cstddef>

#if defined(TLEAK_AGENT_PROFILE)
#include <chrono>
#include <cstdio>
#include <string>
#endif

namespace tleak::diagnosis::end_profile {

#if defined(TLEAK_AGENT_PROFILE)
// One run's end (tleak makes one final report of a program); steps before start() (a snapshot's
// report while the program runs) are not counted. Printed at exit, after tleak's own output.
struct State {
  bool active = false;
  std::chrono::steady_clock::time_point last;
  std::string line = "tleak end profile (ms):";
  std::string aside;  // steps timed apart (time_aside)
  unsigned long long slot_bytes = 0, socket_bytes = 0;  // messages read (message_read)
  // The last step, "rest", runs from the last lap to here: the report renamed into place, the
  // summary printed, what main() destroys as it returns.
  ~State() {
    if (!active) return;
    std::fprintf(stderr, "%s rest %.1f;%s (messages: %llu bytes in slots, %llu through the socket)\n", line.c_str(),
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - last).count(),
                 aside.c_str(), slot_bytes, socket_bytes);
  }
};
inline State& state() {
  static State s;
  return s;
}
inline void start() {
  state().active = true;
  state().last = std::chrono::steady_clock::now();
}
// The time since the last step goes to `step`.
inline void lap(const char* step) {
  State& s = state();
  if (!s.active) return;
  const auto now = std::chrono::steady_clock::now();
  char figure[64];
  std::snprintf(figure, sizeof figure, " %s %.1f;", step, std::chrono::duration<double, std::milli>(now - s.last).count());
  s.line += figure;
  s.last = now;
}
// Runs `work`, its time a step of its own (done before the end, not counted in its laps).
template <class Work>
void time_aside(const char* step, Work&& work) {
  const auto begun = std::chrono::steady_clock::now();
  work();
  char figure[96];
  std::snprintf(figure, sizeof figure, " (%s %.1f)", step,
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begun).count());
  state().aside += figure;
}
// A message of `bytes` read, from a message slot or through the socket.
inline void message_read(bool in_slot, std::size_t bytes) { (in_slot ? state().slot_bytes : state().socket_bytes) += bytes; }
#else
inline void message_read(bool, std::size_t) {}
inline void start() {}
inline void lap(const char*) {}
template <class Work>
void time_aside(const char*, Work&& work) {
  work();
}
#endif

}  // namespace tleak::diagnosis::end_profile
