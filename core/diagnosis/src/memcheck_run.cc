#include "tleak/diagnosis/memcheck_run.h"
#include "tleak/diagnosis/interruption.h"

#include <cerrno>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tleak/diagnosis/report_json.h"

extern char** environ;

namespace tleak::diagnosis {
namespace {

std::int64_t number(std::string digits) {
  std::erase(digits, ',');
  return std::stoll(digits);
}

// The last match of `pattern` in `text`, as bytes; `found` tells whether there was one.
std::int64_t last_bytes(const std::string& text, const std::regex& pattern, bool* found) {
  std::int64_t value = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), pattern), end; it != end; ++it) {
    value = number((*it)[1]);
    *found = true;
  }
  return value;
}

}  // namespace

MemcheckSummary parse_memcheck_log(const std::string& log) {
  static const std::regex definitely(R"(definitely lost: ([\d,]+) bytes)"), indirectly(R"(indirectly lost: ([\d,]+) bytes)"),
      possibly(R"(possibly lost: ([\d,]+) bytes)"), reachable(R"(still reachable: ([\d,]+) bytes)"),
      errors(R"(ERROR SUMMARY: ([\d,]+) errors)");
  MemcheckSummary s;
  bool any = false, ignored = false;
  s.definitely_lost = last_bytes(log, definitely, &any);
  s.indirectly_lost = last_bytes(log, indirectly, &ignored);
  s.possibly_lost = last_bytes(log, possibly, &ignored);
  s.still_reachable = last_bytes(log, reachable, &ignored);
  s.found = any;
  bool has_errors = false;
  const std::int64_t e = last_bytes(log, errors, &has_errors);
  s.errors = has_errors ? e : -1;
  return s;
}

std::string find_valgrind() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::filesystem::path candidate = std::filesystem::path(dir.empty() ? "." : dir) / "valgrind";
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  throw MemcheckError("--valgrind: valgrind is not installed (on Debian: apt-get install valgrind)");
}

// Valgrind expands %p, %q{VAR} and %% in --log-file; a literal '%' in the path must be doubled.
std::string escape_percent(const std::string& path) {
  std::string out;
  for (const char c : path) {
    out += c;
    if (c == '%') out += '%';
  }
  return out;
}

Report run_under_memcheck(const std::string& self, const std::vector<std::string>& run_args,
                          const std::string& suppressions, const std::string& log_path) {
  const std::string valgrind = find_valgrind();
  std::string report_path = (std::filesystem::temp_directory_path() / "tleak-memcheck-XXXXXX").string();
  const int fd = mkstemp(report_path.data());
  if (fd < 0) throw MemcheckError("--valgrind: cannot create a temporary file for the child's report");
  close(fd);
  // (The child tleak removes its own temporary files.)
  const RemovedOnInterrupt removed_on_interrupt(report_path, RemovedOnInterrupt::Kind::kFile);

  std::vector<std::string> args = {valgrind, "--tool=memcheck", "--leak-check=full", "--show-leak-kinds=definite,indirect,possible",
                                   "--suppressions=" + suppressions, "--log-file=" + escape_percent(log_path), self, "run"};
  args.insert(args.end(), run_args.begin(), run_args.end());
  args.insert(args.end(), {"--format", "json", "--output", report_path});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, valgrind.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    std::filesystem::remove(report_path);
    throw MemcheckError("--valgrind: cannot start " + valgrind);
  }
  int status = 0;
  set_waited_child(pid);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  set_waited_child(0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::filesystem::remove(report_path);
    throw MemcheckError("--valgrind: the run under memcheck failed (exit " +
                        std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) +
                        "); memcheck's log is " + log_path);
  }
  Report report;
  try {
    report = read_report_file(report_path);
  } catch (const ReportError& e) {
    std::filesystem::remove(report_path);
    throw MemcheckError(std::string("--valgrind: ") + e.what());
  }
  std::filesystem::remove(report_path);

  std::ifstream in(log_path);
  const std::string log((std::istreambuf_iterator<char>(in)), {});
  const MemcheckSummary summary = parse_memcheck_log(log);
  if (!report.memcheck) report.memcheck = MemcheckFigures{};
  MemcheckFigures& m = *report.memcheck;
  if (summary.found) {
    m.definitely_lost_bytes = summary.definitely_lost;
    m.indirectly_lost_bytes = summary.indirectly_lost;
    m.possibly_lost_bytes = summary.possibly_lost;
    m.still_reachable_bytes = summary.still_reachable;
  }
  m.errors = summary.errors;
  judge_agreement(m, report.run.valgrind_annotations);
  report.notes.push_back("memcheck's full output: " + log_path);
  return report;
}

}  // namespace tleak::diagnosis
