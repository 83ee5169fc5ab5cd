// The sub-commands. Each registers its options on the CLI11 app and returns the function that runs
// it once parsing succeeded; the function returns the process exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace tleak::cli {

using Command = std::function<int()>;

Command add_list_command(CLI::App& app);
Command add_explain_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_diff_command(CLI::App& app);
Command add_check_command(CLI::App& app);
Command add_export_command(CLI::App& app);
Command add_view_command(CLI::App& app);

}  // namespace tleak::cli
