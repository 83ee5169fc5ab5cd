#include "control_page.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tleak_file_path.h"

namespace tleak::agent {

ControlPage* map_control_page(int fd) {
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != 4096) return nullptr;
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (page == MAP_FAILED) return nullptr;
  auto* control = static_cast<ControlPage*>(page);
  if (control->magic == kProtocolMagic) return control;
  munmap(page, 4096);
  return nullptr;
}

ControlPage* find_control_page(int control_fd, const char* control_path) {
  ControlPage* control = control_fd >= 0 ? map_control_page(control_fd) : nullptr;
  if (control == nullptr) {
    if (const int fd = open_tleak_file(control_path); fd >= 0) {
      control = map_control_page(fd);
      close(fd);
    }
  }
  return control;
}

}  // namespace tleak::agent
