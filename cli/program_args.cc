#include "program_args.h"

#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>

#include "cli_error.h"
#include "tleak/diagnosis/program_session.h"

namespace tleak::cli {
namespace {

// Reads a leading decimal number; returns the rest in `unit`. False when there is no number.
bool split_number(const std::string& text, double& value, std::string& unit) {
  std::size_t used = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  if (used == 0 || !std::isfinite(value) || text.find_first_of("xXpPnN") < used) return false;
  unit = text.substr(used);
  return true;
}

std::string quoted(const std::string& text) {
  std::string out;
  for (const char c : text.substr(0, 64)) out += (c >= 32 && c < 127) ? c : '?';
  return "'" + out + (text.size() > 64 ? "...'" : "'");
}

}  // namespace

std::vector<std::string>& trailing_command() {
  static std::vector<std::string> command;
  return command;
}

double parse_duration(const std::string& option, const std::string& text) {
  double value = 0;
  std::string unit;
  if (!split_number(text, value, unit)) {
    throw UsageError(option + ": " + quoted(text) + " is not a duration (e.g. 100ms, 2s)");
  }
  double seconds = 0;
  if (unit == "ms") seconds = value / 1000;
  else if (unit == "s" || unit.empty()) seconds = value;
  else if (unit == "m" || unit == "min") seconds = value * 60;
  else if (unit == "h") seconds = value * 3600;  // the range's top, said as the range says it
  else throw UsageError(option + ": unknown unit in " + quoted(text) + " (use ms, s, m or h)");
  using diagnosis::ProgramOptions;
  if (!(seconds >= ProgramOptions::kMinSampleSeconds && seconds <= ProgramOptions::kMaxSampleSeconds)) {
    throw UsageError(option + ": " + quoted(text) + " is out of range (" + ProgramOptions::kSampleRangeWords + ")");
  }
  return seconds;
}

std::int64_t parse_size(const std::string& option, const std::string& text) {
  double value = 0;
  std::string unit;
  if (!split_number(text, value, unit)) {
    throw UsageError(option + ": " + quoted(text) + " is not a size (e.g. 512MiB, 2G)");
  }
  double scale = 1;
  std::string u = unit;
  if (!u.empty() && (u.back() == 'B' || u.back() == 'b')) u.pop_back();
  if (!u.empty() && u.back() == 'i') u.pop_back();
  if (u.empty()) scale = 1;
  else if (u == "K" || u == "k") scale = 1024.0;
  else if (u == "M" || u == "m") scale = 1024.0 * 1024;
  else if (u == "G" || u == "g") scale = 1024.0 * 1024 * 1024;
  else if (u == "T" || u == "t") scale = 1024.0 * 1024 * 1024 * 1024;
  else throw UsageError(option + ": unknown unit in " + quoted(text) + " (use K, M, G or T)");
  const double bytes = value * scale;
  if (!(bytes >= 1 && bytes <= std::ldexp(1.0, 60))) {
    throw UsageError(option + ": " + quoted(text) + " is out of range (1 byte to 1 EiB)");
  }
  return static_cast<std::int64_t>(bytes);
}

int parse_signal(const std::string& option, const std::string& text) {
  std::string name = text;
  if (name.rfind("SIG", 0) == 0) name = name.substr(3);
  int signal = 0;
  if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos && name.size() < 4) {
    signal = std::stoi(name);
  } else if (name == "USR1") {
    signal = SIGUSR1;
  } else if (name == "USR2") {
    signal = SIGUSR2;
  } else if (name == "HUP") {
    signal = SIGHUP;
  } else if (name == "QUIT") {
    signal = SIGQUIT;
  } else if (name == "WINCH") {
    signal = SIGWINCH;
  } else if (name == "URG") {
    signal = SIGURG;
  } else if (name.rfind("RTMIN+", 0) == 0 && name.size() <= 8 &&
             name.find_first_not_of("0123456789", 6) == std::string::npos && name.size() > 6) {
    signal = SIGRTMIN + std::stoi(name.substr(6));
  }
  const bool reserved = signal == SIGKILL || signal == SIGSTOP || signal == SIGINT || signal == SIGTERM ||
                        signal == SIGCHLD || signal == SIGSEGV || signal == SIGBUS || signal == SIGFPE ||
                        signal == SIGILL || signal == SIGABRT || signal == SIGPIPE;
  if (signal <= 0 || signal > SIGRTMAX || reserved) {
    throw UsageError(option + ": " + quoted(text) +
                     " is not a signal tleak can take for snapshots (e.g. USR2, USR1, RTMIN+1)");
  }
  return signal;
}

std::string python_module_dir() {
  std::error_code error;
  const std::filesystem::path dir = std::filesystem::read_symlink("/proc/self/exe", error).parent_path();
  for (const std::filesystem::path& candidate : {dir / "../python", dir / "../share/tleak/python"}) {
    if (std::filesystem::exists(candidate / "tleak.py", error)) {
      return std::filesystem::weakly_canonical(candidate, error).string();
    }
  }
  return "";
}

std::string agent_library_path() {
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  const std::filesystem::path dir = exe.parent_path();
  for (const std::filesystem::path& candidate :
       {dir / "libtleak_preload.so", dir / "../lib/tleak/libtleak_preload.so",
        dir / "../lib/x86_64-linux-gnu/tleak/libtleak_preload.so", dir / "../agent/libtleak_preload.so"}) {
    if (std::filesystem::exists(candidate, error)) return std::filesystem::weakly_canonical(candidate, error).string();
  }
  return (dir / "../lib/tleak/libtleak_preload.so").lexically_normal().string();
}

}  // namespace tleak::cli
