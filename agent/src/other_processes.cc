#include "other_processes.h"

#include <unistd.h>

#include <cstring>

namespace tleak::agent {
namespace {

void fill(ControlPage::OtherProcess& entry, std::uint32_t pid, const char* executable, ControlPage::OtherKind kind) {
  std::size_t n = 0;
  while (n + 1 < sizeof entry.executable && executable[n] != '\0') ++n;
  std::memcpy(entry.executable, executable, n);
  entry.executable[n] = '\0';
  entry.kind = kind;
  __atomic_store_n(&entry.pid, pid, __ATOMIC_RELEASE);
}

void add(ControlPage* control, std::uint32_t pid, const char* executable, ControlPage::OtherKind kind) {
  const std::uint64_t index = __atomic_fetch_add(&control->other_processes, 1, __ATOMIC_ACQ_REL);
  if (index < ControlPage::kOtherProcessEntries) fill(control->other[index], pid, executable, kind);
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
  add(control, static_cast<std::uint32_t>(getpid()), executable, ControlPage::OtherKind::kForkedOnly);
}

void note_other_process(ControlPage* control, const char* executable, ControlPage::OtherKind kind) {
  if (control == nullptr) return;
  const auto pid = static_cast<std::uint32_t>(getpid());
  // A forked child that now runs another image: its entry, not a new one.
  bool found = false;
  const std::uint64_t used = __atomic_load_n(&control->other_processes, __ATOMIC_ACQUIRE);
  for (std::uint64_t i = 0; i < used && i < ControlPage::kOtherProcessEntries && !found; ++i) {
    if (__atomic_load_n(&control->other[i].pid, __ATOMIC_ACQUIRE) != pid) continue;
    fill(control->other[i], pid, executable, kind);
    found = true;
  }
  if (!found) add(control, pid, executable, kind);
}

}  // namespace tleak::agent
