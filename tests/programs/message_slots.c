/* Under tleak run, whether the agent writes its records into the message slots tleak shares with
 * it (tleak/agent/protocol.h, MessageSlots), as seen from the program: the agent's mapping of the
 * slots' memory file, and how many slots are held (being filled) while three threads that
 * allocated are alive, and after they ended (a buffer gives its slot back when its thread ends).
 * Run plain, it says there are none. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { kFilling = 1, kThreads = 3, kHeadBytes = 4096 };

/* The start of MessageSlots: its states lie in the first page, before the slots themselves. */
struct SlotsHead {
  uint64_t magic;
  uint32_t slots;
  uint32_t slot_bytes;
  uint32_t state[];
};

static pthread_barrier_t allocated, counted;

static void* worker(void* arg) {
  free(malloc(64));
  pthread_barrier_wait(&allocated);
  pthread_barrier_wait(&counted);
  return arg;
}

static int mappings_of_slots(void) {
  FILE* maps = fopen("/proc/self/maps", "r");
  if (maps == NULL) return -1;
  char line[512];
  int n = 0;
  while (fgets(line, sizeof line, maps) != NULL) n += strstr(line, "tleak-slots") != NULL;
  fclose(maps);
  return n;
}

static int held(const volatile struct SlotsHead* head) {
  int n = 0;
  for (uint32_t i = 0; i < head->slots && i < (kHeadBytes - sizeof *head) / 4; ++i) n += head->state[i] == kFilling;
  return n;
}

int main(void) {
  const char* fd_text = getenv("TLEAK_AGENT_SLOTS_FD");
  if (fd_text == NULL) {
    puts("no slots");
    return 0;
  }
  const int mapped = mappings_of_slots(); /* the agent's, before this program's own below */
  const struct SlotsHead* head = mmap(NULL, kHeadBytes, PROT_READ, MAP_SHARED, atoi(fd_text), 0);
  if (head == MAP_FAILED) return 1;
  free(malloc(64));
  pthread_barrier_init(&allocated, NULL, kThreads + 1);
  pthread_barrier_init(&counted, NULL, kThreads + 1);
  pthread_t threads[kThreads];
  for (int i = 0; i < kThreads; ++i) pthread_create(&threads[i], NULL, worker, NULL);
  pthread_barrier_wait(&allocated);
  const int during = held(head);
  pthread_barrier_wait(&counted);
  for (int i = 0; i < kThreads; ++i) pthread_join(threads[i], NULL);
  const int after = held(head);
  printf("mapped %d, held with %d threads %d, after %d\n", mapped, kThreads, during, after);
  return 0;
}
