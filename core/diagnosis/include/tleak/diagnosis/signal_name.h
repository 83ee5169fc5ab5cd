// A signal as tleak's messages name it: "SIGTERM" (the summary's "killed by SIGTERM"), and with its
// number, "signal 15 (SIGTERM)" (the note on a missing exit scan, tleak's closing line). A number
// the C library has no name for reads "signal 99" either way.
#pragma once

#include <string.h>

#include <string>

namespace tleak::diagnosis {

inline std::string signal_name(int signal) {
  const char* abbreviation = sigabbrev_np(signal);
  return abbreviation != nullptr ? "SIG" + std::string(abbreviation) : "signal " + std::to_string(signal);
}

inline std::string signal_number_and_name(int signal) {
  const char* abbreviation = sigabbrev_np(signal);
  return "signal " + std::to_string(signal) +
         (abbreviation != nullptr ? " (SIG" + std::string(abbreviation) + ")" : std::string());
}

}  // namespace tleak::diagnosis
