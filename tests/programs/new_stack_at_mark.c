/* A worker allocates 100 bytes from a stack new to its thread (line FIRST: a site record, then the
 * allocation) and waits while the main thread marks an iteration, which sends the worker's buffer;
 * then it allocates from the same stack again (its thread's cache names it now); then it allocates
 * 200 bytes from another new stack (line SECOND) and frees 20 blocks of 32 bytes it allocated
 * before (line EARLY), then everything else.
 * Expected: at the mark, 100 bytes live at FIRST and 640 at EARLY; FIRST one site of 2
 * allocations, peak 200; SECOND 1, EARLY 20; everything freed. */
#include <pthread.h>
#include <stdlib.h>
#include <tleak/marks.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int stage;

static void wait_for(int wanted) {
  pthread_mutex_lock(&lock);
  while (stage != wanted) pthread_cond_wait(&changed, &lock);
  pthread_mutex_unlock(&lock);
}

static void move_to(int next) {
  pthread_mutex_lock(&lock);
  stage = next;
  pthread_cond_broadcast(&changed);
  pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) static void* first(void) {
  return malloc(100); /* FIRST */
}

static void* work(void* arg) {
  (void)arg;
  void* early[20];
  for (int i = 0; i < 20; ++i) early[i] = malloc(32); /* EARLY */
  void* firsts[2];
  for (int k = 0; k < 2; ++k) {
    firsts[k] = first();
    if (k == 0) {
      move_to(1);    /* the main thread marks now */
      wait_for(2);
    }
  }
  void* second = malloc(200); /* SECOND */
  for (int i = 0; i < 20; ++i) free(early[i]);
  free(firsts[0]);
  free(firsts[1]);
  free(second);
  return NULL;
}

int main(void) {
  pthread_t worker;
  if (pthread_create(&worker, NULL, work, NULL) != 0) return 1;
  wait_for(1);
  tleak_mark_iteration();
  move_to(2);
  pthread_join(worker, NULL);
  return 0;
}
