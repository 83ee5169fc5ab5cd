// Whose a Python file is: the rule a report's labels name sites by (tleak's report.cc) and the
// agent's search for the user's frame past the kept ones (python_frames.cc) must agree on, so both
// read it here. Header-only and allocation-free: the agent runs it inside malloc.
#pragma once

#include <string_view>

#include "tleak/agent/protocol.h"

namespace tleak::agent {

// The import machinery's own code ("<frozen importlib._bootstrap>", "..._external>").
constexpr bool python_file_is_import_machinery(std::string_view file) {
  return file.starts_with("<frozen importlib");
}

// The file name CPython gives a program's own code without a file (PythonMainCode, protocol.h): "<string>", "<stdin>", or empty for kNone.
constexpr std::string_view python_main_code_name(PythonMainCode code) {
  switch (code) {
    case PythonMainCode::kString: return "<string>";
    case PythonMainCode::kStdin: return "<stdin>";
    case PythonMainCode::kNone: break;
  }
  return {};
}

// The processes multiprocessing starts by its spawn and forkserver methods (its workers, its fork
// server, its resource tracker) run `python3 -c "from multiprocessing.MODULE import ...` and have
// no script: named by that module ("multiprocessing.spawn"), so that --record can pick them, and
// their -c code, the library's bootstrap, is not taken for the user's (a site none of whose frames
// is the user's is then named by its innermost, not by `<string>:1`). Any other -c code: no name.
constexpr std::string_view multiprocessing_child_module(std::string_view code) {
  constexpr std::string_view kFrom = "from ";
  if (!code.starts_with("from multiprocessing.")) return {};
  const std::size_t end = code.find(' ', kFrom.size());
  if (end == std::string_view::npos) return {};
  return {code.data() + kFrom.size(), end - kFrom.size()};
}

// What a Python process runs, from its executable's path and its arguments as /proc/self/cmdline
// holds them (each followed by a NUL): its own code without a file (`code`: kString for -c, kStdin
// for standard input), or what it runs instead (`target`: the script's path as given, or the
// module's name after -m; for a multiprocessing child's -c code, its module, above). A
// process that is not the python executable (its command line is not CPython's) runs neither:
// kNone and no target.
struct PythonMain {
  PythonMainCode code = PythonMainCode::kNone;
  std::string_view target;
  // -E or -I came before it: the interpreter ignores PYTHON* variables, PYTHONMALLOC among them.
  bool ignores_environment = false;
};

// (No substr: it may throw, and the agent, which runs this, must not call into the C++ library.)
// Whether `executable` (a path) is CPython's, whose command line python_main reads.
constexpr bool is_python_executable(std::string_view executable) {
  const std::size_t slash = executable.rfind('/');
  const std::size_t name = slash == std::string_view::npos ? 0 : slash + 1;
  return std::string_view(executable.data() + name, executable.size() - name).starts_with("python");
}

constexpr PythonMain python_main(std::string_view executable, std::string_view command_line) {
  if (!is_python_executable(executable)) return {};
  std::string_view rest = command_line;
  // The next argument, taken off `rest`; false when there is none.
  const auto take = [&rest](std::string_view* argument) {
    if (rest.empty()) return false;
    const std::size_t end = rest.find('\0');
    if (end == std::string_view::npos) {
      *argument = rest;
      rest = {};
    } else {
      *argument = std::string_view(rest.data(), end);
      rest.remove_prefix(end + 1);
    }
    return true;
  };
  bool ignores_environment = false;
  // What it runs, with what the options before it said of the environment.
  const auto runs = [&ignores_environment](PythonMainCode code, std::string_view target = {}) {
    return PythonMain{code, target, ignores_environment};
  };
  std::string_view argument;
  if (!take(&argument)) return {};  // argv[0]
  while (take(&argument)) {
    if (argument == "-") return runs(PythonMainCode::kStdin);
    if (argument == "--") return take(&argument) ? runs(PythonMainCode::kNone, argument) : runs(PythonMainCode::kStdin);
    if (argument.starts_with("--")) {
      if (argument == "--check-hash-based-pycs") take(&argument);  // its value
      continue;
    }
    if (!argument.starts_with("-")) return runs(PythonMainCode::kNone, argument);  // a script
    // Short options, which may come together ("-Sc CODE", "-cCODE", "-mpkg.mod"); -W and -X take
    // the rest of theirs or the next argument, as -m does its module.
    for (std::size_t k = 1; k < argument.size(); ++k) {
      if (argument[k] == 'E' || argument[k] == 'I') ignores_environment = true;
      if (argument[k] == 'c') {
        std::string_view code;
        if (k + 1 < argument.size()) {
          code = std::string_view(argument.data() + k + 1, argument.size() - k - 1);
        } else {
          take(&code);
        }
        // A multiprocessing child's -c code is the library's, not the user's: it runs that module.
        const std::string_view module = multiprocessing_child_module(code);
        return runs(module.empty() ? PythonMainCode::kString : PythonMainCode::kNone, module);
      }
      if (argument[k] == 'm') {
        if (k + 1 < argument.size()) return runs(PythonMainCode::kNone, std::string_view(argument.data() + k + 1, argument.size() - k - 1));
        return take(&argument) ? runs(PythonMainCode::kNone, argument) : PythonMain{};
      }
      if (argument[k] == 'W' || argument[k] == 'X') {
        if (k + 1 == argument.size()) take(&argument);
        break;
      }
    }
  }
  return runs(PythonMainCode::kStdin);  // no script: standard input, read as a program or interactively
}

// The user's code: the program's own code that has no file (`main_code`, python_main_code_name()); then
// what is under `focus` when one is given (tleak run --focus), else every real file but the
// standard library's, installed packages' (site-packages, dist-packages) and frozen modules'.
constexpr bool python_file_is_users(std::string_view file, std::string_view focus, std::string_view main_code = {}) {
  if (!main_code.empty() && file == main_code) return true;
  if (!focus.empty()) return file.starts_with(focus);
  return !file.empty() && file[0] != '<' && file.find("/lib/python3") == std::string_view::npos &&
         file.find("/site-packages/") == std::string_view::npos &&
         file.find("/dist-packages/") == std::string_view::npos;
}

}  // namespace tleak::agent
