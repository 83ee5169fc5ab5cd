// The sub-commands. Each declares itself and its options on the command line and returns the
// function that runs it once parsing succeeded; the function returns the process exit code.
#pragma once

#include "command_line.h"

namespace tleak::cli {

Command add_list_command(CommandLine& app);
Command add_explain_command(CommandLine& app);
Command add_run_command(CommandLine& app);
Command add_diff_command(CommandLine& app);
Command add_check_command(CommandLine& app);
Command add_export_command(CommandLine& app);
Command add_view_command(CommandLine& app);

}  // namespace tleak::cli
