#include "other_processes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "control_page.h"

namespace tleak::agent {
namespace {

void fill(ControlPage::OtherProcess& entry, std::uint32_t pid, const char* executable, bool forked_only) {
  std::size_t n = 0;
  while (n + 1 < sizeof entry.executable && executable[n] != '\0') ++n;
  std::memcpy(entry.executable, executable, n);
  entry.executable[n] = '\0';
  entry.forked_only = forked_only ? 1 : 0;
  __atomic_store_n(&entry.pid, pid, __ATOMIC_RELEASE);
}

void add(ControlPage* control, std::uint32_t pid, const char* executable, bool forked_only) {
  const std::uint64_t index = __atomic_fetch_add(&control->other_processes, 1, __ATOMIC_ACQ_REL);
  if (index < ControlPage::kOtherProcessEntries) fill(control->other[index], pid, executable, forked_only);
}

// This process's executable, cut to an entry's room.
void this_executable(char (&out)[sizeof(ControlPage::OtherProcess::executable)]) {
  const ssize_t n = readlink("/proc/self/exe", out, sizeof out - 1);
  out[n > 0 ? n : 0] = '\0';
}

}  // namespace

void note_forked_child(ControlPage* control) {
  if (control == nullptr) return;
  char executable[sizeof(ControlPage::OtherProcess::executable)];
  this_executable(executable);
  add(control, static_cast<std::uint32_t>(getpid()), executable, true);
}

void note_other_process(int control_fd, const char* control_path) {
  ControlPage* control = control_fd >= 0 ? map_control_page(control_fd) : nullptr;
  if (control == nullptr && control_path != nullptr && std::strncmp(control_path, "/proc/", 6) == 0) {
    const int fd = open(control_path, O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
      control = map_control_page(fd);
      close(fd);
    }
  }
  if (control == nullptr) return;
  char executable[sizeof(ControlPage::OtherProcess::executable)];
  this_executable(executable);
  const auto pid = static_cast<std::uint32_t>(getpid());
  // A forked child that now runs another image: its entry, not a new one.
  bool found = false;
  const std::uint64_t used = __atomic_load_n(&control->other_processes, __ATOMIC_ACQUIRE);
  for (std::uint64_t i = 0; i < used && i < ControlPage::kOtherProcessEntries && !found; ++i) {
    if (__atomic_load_n(&control->other[i].pid, __ATOMIC_ACQUIRE) != pid) continue;
    fill(control->other[i], pid, executable, false);
    found = true;
  }
  if (!found) add(control, pid, executable, false);
  munmap(control, 4096);
}

}  // namespace tleak::agent
