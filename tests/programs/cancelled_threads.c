#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <tleak/marks.h>

/* Threads allocating are cancelled 200 times (send() and recv() are cancellation points inside the
 * agent). Expected: no hang; prints "cancel ok". */
static void* churn(void* a) { (void)a; for (;;) { void* p = malloc(100 + rand() % 5000); free(p); pthread_testcancel(); } return NULL; }
int main(void) {
  for (int round = 0; round < 200; ++round) {
    pthread_t t; pthread_create(&t, NULL, churn, NULL);
    usleep(2000);
    pthread_cancel(t); pthread_join(t, NULL);
    free(malloc(10)); tleak_mark_iteration();
  }
  puts("cancel ok");
  return 0;
}
