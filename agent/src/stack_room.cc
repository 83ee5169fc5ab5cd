#include "stack_room.h"

#include <pthread.h>

namespace tleak::agent {

__thread std::uintptr_t t_stack_low __attribute__((tls_model("initial-exec"))) = 0;

namespace {

__thread bool t_bounds_read __attribute__((tls_model("initial-exec"))) = false;

// This thread's usable stack's low end (glibc reports it without the guard pages below), or 0.
std::uintptr_t read_stack_low() {
  pthread_attr_t attributes;
  if (pthread_getattr_np(pthread_self(), &attributes) != 0) return 0;
  void* base = nullptr;
  std::size_t size = 0;
  std::uintptr_t low = 0;
  if (pthread_attr_getstack(&attributes, &base, &size) == 0 && size >= kUnwindStackRoom) {
    low = reinterpret_cast<std::uintptr_t>(base);
  }
  pthread_attr_destroy(&attributes);
  return low;
}

}  // namespace

void note_stack_start(std::uintptr_t here) {
  t_bounds_read = false;
  t_stack_low = here > kStackSlack + kUnwindStackRoom ? here - kStackSlack - kUnwindStackRoom : 0;
}

bool stack_has_room_slow(std::uintptr_t here) {
  if (t_bounds_read) return false;
  t_bounds_read = true;
  t_stack_low = read_stack_low();
  return here - t_stack_low >= kUnwindStackRoom;
}

}  // namespace tleak::agent
