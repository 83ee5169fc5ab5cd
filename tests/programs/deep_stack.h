/* For the test programs that leave, or are signalled, with little of a thread's stack left
 * (deep_leaving.c, outside_signal.c): a thread with a 64 KiB stack recurses until 6 KiB of it are
 * left (room for the kernel's signal frame, not for much more) and calls `at_bottom` there.
 * Include after _GNU_SOURCE (pthread_getattr_np). */
#pragma once

#include <pthread.h>
#include <stddef.h>

static char* deep_stack_low;
static void (*deep_stack_bottom)(void);

__attribute__((noinline)) static void recurse_to_bottom(size_t room) {
  volatile char frame[512];
  frame[0] = 1;
  if ((size_t)((char*)frame - deep_stack_low) > room) {
    recurse_to_bottom(room);
  } else {
    deep_stack_bottom();
  }
  frame[1] = frame[0]; /* no tail call */
}

static void* run_deep(void* unused) {
  (void)unused;
  pthread_attr_t attributes;
  void* low;
  size_t size;
  pthread_getattr_np(pthread_self(), &attributes);
  pthread_attr_getstack(&attributes, &low, &size);
  pthread_attr_destroy(&attributes);
  deep_stack_low = low;
  recurse_to_bottom(6 * 1024);
  return NULL;
}

static pthread_t start_deep_thread(void (*at_bottom)(void)) {
  deep_stack_bottom = at_bottom;
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, 64 * 1024);
  pthread_t deep;
  pthread_create(&deep, &attributes, run_deep, NULL);
  pthread_attr_destroy(&attributes);
  return deep;
}
