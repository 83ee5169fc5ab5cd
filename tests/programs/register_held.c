/* Threads blocked in system calls as the program exits, one of them holding the only pointer to
 * its block in a register: memcheck reads every thread's registers, and so must tleak.
 *   reachable:     1500 B whose only pointer is in r12 of a thread blocked in read() (HELD)
 *   directly lost: 700 B (LOST)
 * The other threads wait in calls that would end early, and say so, if tleak's reading of their
 * registers were seen: read, nanosleep, poll, a semaphore, a condition variable (restarted after a
 * stop) and epoll_wait (which Linux ends with EINTR after one, so tleak leaves it be). The program
 * prints only "exiting". x86-64: the held thread's system call is written out, so that no C library
 * function saves r12 on the stack below it. */
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int pipe_fds[2];
static sem_t never_posted;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never_signalled = PTHREAD_COND_INITIALIZER;
static volatile int held_ready;

/* Zeroes the stack below the caller, where malloc's frames (the agent's among them) left copies
 * of the block's address: stale words that would make it reachable without its register. */
__attribute__((noinline)) static void scrub_stack(void) {
  volatile char junk[16384];
  for (size_t i = 0; i < sizeof junk; ++i) junk[i] = 0; /* each store a side effect: kept at -O2 */
}

__attribute__((noinline)) static char* make_block(void) {
  char* block = malloc(1500); /* HELD */
  memset(block, 5, 1500);
  scrub_stack();
  return block;
}

static void* held_in_register(void* unused) {
  (void)unused;
  register char* held __asm__("r12") = make_block();
  char byte;
  long result = SYS_read;
  held_ready = 1;
  /* Blocks until the program has exited: nothing ever writes to the pipe. */
  __asm__ volatile("syscall"
                   : "+a"(result)
                   : "D"((long)pipe_fds[0]), "S"(&byte), "d"(1L), "r"(held)
                   : "rcx", "r11", "memory");
  printf("read returned %ld\n", result);
  return held;
}

static void* in_nanosleep(void* unused) {
  (void)unused;
  struct timespec ten_seconds = {10, 0};
  if (nanosleep(&ten_seconds, NULL) != 0) printf("nanosleep ended early\n");
  return NULL;
}

static void* in_poll(void* unused) {
  (void)unused;
  struct pollfd p = {pipe_fds[0], POLLIN, 0};
  printf("poll returned %d\n", poll(&p, 1, 10000));
  return NULL;
}

static void* in_sem_wait(void* unused) {
  (void)unused;
  printf("sem_wait returned %d\n", sem_wait(&never_posted));
  return NULL;
}

static void* in_cond_wait(void* unused) {
  (void)unused;
  pthread_mutex_lock(&lock);
  printf("pthread_cond_wait returned %d\n", pthread_cond_wait(&never_signalled, &lock));
  pthread_mutex_unlock(&lock);
  return NULL;
}

static void* in_epoll_wait(void* unused) {
  (void)unused;
  const int e = epoll_create1(0);
  struct epoll_event event = {.events = EPOLLIN};
  epoll_ctl(e, EPOLL_CTL_ADD, pipe_fds[0], &event);
  printf("epoll_wait returned %d\n", epoll_wait(e, &event, 1, 10000));
  return NULL;
}

__attribute__((noinline)) static void lose(void) {
  char* volatile p = malloc(700); /* LOST */
  memset(p, 1, 700);
}

int main(void) {
  if (pipe(pipe_fds) != 0 || sem_init(&never_posted, 0, 0) != 0) return 1;
  void* (*waiters[])(void*) = {held_in_register, in_nanosleep, in_poll, in_sem_wait, in_cond_wait, in_epoll_wait};
  for (size_t i = 0; i < sizeof waiters / sizeof waiters[0]; ++i) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, waiters[i], NULL) != 0) return 1;
  }
  while (!held_ready) usleep(1000);
  lose();
  usleep(100000); /* every thread into its call */
  printf("exiting\n");
  fflush(stdout);
  return 0;
}
