/* Threads blocked in system calls as the program exits, one of them holding the only pointer to
 * its block in a register: memcheck reads every thread's registers, and so must tleak.
 *   reachable:     1500 B whose only pointer is in r12 of a thread blocked in read() (HELD)
 *   directly lost: 700 B (LOST)
 * The other threads wait in calls that would end early, and say so, if tleak's reading of their
 * registers were seen: read, nanosleep, poll, a semaphore, a condition variable (which the kernel
 * restarts after a stop), epoll_wait, sigtimedwait, recv on a socket with a timeout (which Linux
 * ends with EINTR after a stop, and tleak sets to run again), and connect (which cannot run again:
 * tleak leaves that thread be). The program prints only "exiting". x86-64: the held thread's
 * system call is written out, so that no C library function saves r12 on the stack below it.
 * With "undumpable" it first makes itself non-dumpable (prctl): a tleak run by another user than
 * root may then not ptrace its threads, and their registers go unread (HELD then reads lost). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
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

static void* in_sigtimedwait(void* unused) {
  (void)unused;
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);  /* blocked in every thread: main blocked it before starting them */
  const struct timespec ten_seconds = {10, 0};
  const int got = sigtimedwait(&usr1, NULL, &ten_seconds);
  printf("sigtimedwait returned %d (%s)\n", got, got < 0 ? strerror(errno) : "");
  return NULL;
}

static int receiving_socket;

static void* in_recv_with_timeout(void* unused) {
  (void)unused;
  const struct timeval ten_seconds = {10, 0};
  setsockopt(receiving_socket, SOL_SOCKET, SO_RCVTIMEO, &ten_seconds, sizeof ten_seconds);
  char byte;
  const ssize_t got = recv(receiving_socket, &byte, 1, 0);
  printf("recv returned %zd (%s)\n", got, got < 0 ? strerror(errno) : "");
  return NULL;
}

static struct sockaddr_un listening_at;

/* A Unix socket's connect waits while the listener's backlog is full. */
static void* in_connect(void* unused) {
  (void)unused;
  const int s = socket(AF_UNIX, SOCK_STREAM, 0);
  const int done = connect(s, (const struct sockaddr*)&listening_at, sizeof listening_at);
  printf("connect returned %d (%s)\n", done, done < 0 ? strerror(errno) : "");
  return NULL;
}

__attribute__((noinline)) static void lose(void) {
  char* volatile p = malloc(700); /* LOST */
  memset(p, 1, 700);
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "undumpable") == 0 && prctl(PR_SET_DUMPABLE, 0) != 0) return 1;
  if (pipe(pipe_fds) != 0 || sem_init(&never_posted, 0, 0) != 0) return 1;
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, NULL);
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return 1;
  receiving_socket = pair[0];
  /* A listener whose backlog one connection fills: the next connect waits. */
  const int listener = socket(AF_UNIX, SOCK_STREAM, 0);
  listening_at.sun_family = AF_UNIX;
  snprintf(listening_at.sun_path + 1, sizeof listening_at.sun_path - 1, "tleak-register-held-%d", (int)getpid());
  const int filler = socket(AF_UNIX, SOCK_STREAM, 0);
  if (bind(listener, (const struct sockaddr*)&listening_at, sizeof listening_at) != 0 || listen(listener, 0) != 0 ||
      connect(filler, (const struct sockaddr*)&listening_at, sizeof listening_at) != 0) {
    return 1;
  }
  void* (*waiters[])(void*) = {held_in_register, in_nanosleep,     in_poll,
                               in_sem_wait,      in_cond_wait,     in_epoll_wait,
                               in_sigtimedwait,  in_recv_with_timeout, in_connect};
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
