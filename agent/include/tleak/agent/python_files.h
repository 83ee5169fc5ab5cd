// Whose a Python file is: the rule a report's labels name sites by (tleak's report.cc) and the
// agent's search for the user's frame past the kept ones (python_frames.cc) must agree on, so both
// read it here. Header-only and allocation-free: the agent runs it inside malloc.
#pragma once

#include <string_view>

namespace tleak::agent {

// The import machinery's own code ("<frozen importlib._bootstrap>", "..._external>").
constexpr bool python_file_is_import_machinery(std::string_view file) {
  return file.starts_with("<frozen importlib");
}

// The user's code: under `focus` when one is given (tleak run --focus), else every real file but
// the standard library's, installed packages' (site-packages, dist-packages) and frozen modules'.
constexpr bool python_file_is_users(std::string_view file, std::string_view focus) {
  if (!focus.empty()) return file.starts_with(focus);
  return !file.empty() && file[0] != '<' && file.find("/lib/python3") == std::string_view::npos &&
         file.find("/site-packages/") == std::string_view::npos &&
         file.find("/dist-packages/") == std::string_view::npos;
}

}  // namespace tleak::agent
