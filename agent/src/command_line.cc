#include "command_line.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>

namespace tleak::agent {

const CommandLine& this_command_line() {
  static char line[1 << 16];
  static CommandLine command;
  static bool read_once = false;  // (no guarded static: the agent calls nothing of the C++ runtime)
  if (read_once) return command;
  read_once = true;
  const int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return command;
  std::size_t got = 0;
  while (got < sizeof line) {
    const ssize_t n = read(fd, line + got, sizeof line - got);
    if (n < 0 && errno == EINTR) continue;  // (agent_start gives the program its errno back)
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  close(fd);
  command = {std::string_view(line, got), got == sizeof line};
  return command;
}

PythonMain this_python_main(std::string_view executable) {
  if (!is_python_executable(executable)) return {};
  const CommandLine& command = this_command_line();
  PythonMain main = python_main(executable, command.words);
  if (!command.cut) return main;
  if (main.code == PythonMainCode::kStdin) main.code = PythonMainCode::kNone;
  if (main.target.data() + main.target.size() == command.words.data() + command.words.size()) main.target = {};
  return main;
}

}  // namespace tleak::agent
