// What `tleak run [options] -- COMMAND ARGS...` needs beyond a scenario run: the command (split off
// argv at the first "--" before CLI11 sees it), and the parsers of its option values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tleak::cli {

// Everything after the first "--" of argv, set by main() before parsing.
std::vector<std::string>& trailing_command();

// "100ms", "2s", "0.5s", "1m": seconds in (0, 3600]. Throws UsageError naming the option.
double parse_duration(const std::string& option, const std::string& text);
// "4096", "512KiB", "2MB", "1.5GiB", "3G" (K/M/G/T, with or without "i" and "B", powers of 1024):
// bytes in [1, 2^60]. Throws UsageError.
std::int64_t parse_size(const std::string& option, const std::string& text);
// "USR2", "SIGUSR1", "12": a signal tleak may take for snapshots (not KILL, STOP, INT, TERM, CHLD...).
int parse_signal(const std::string& option, const std::string& text);

// libtleak_preload.so beside the running tleak (build tree or installed layout).
std::string agent_library_path();
// The directory holding the Python marks module (tleak.py), or empty if it is not installed.
std::string python_module_dir();

}  // namespace tleak::cli
