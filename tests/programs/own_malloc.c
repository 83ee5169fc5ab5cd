/* A malloc built into the executable, as some programs link an allocator in: the executable's
 * definitions come first in the loader's order, ahead of tleak's agent, and the C library's own calls
 * reach them too.
 *   Built as own_malloc_arena: malloc, free, calloc and realloc hand out a static arena, and no call
 *   ever reaches the agent (tleak refuses to report on nothing).
 *   Built as own_malloc_wrapped (-DWRAPPED): malloc and free count and go on to the next definition
 *   (dlsym RTLD_NEXT: under tleak, the agent's), as a program's own allocation statistics do; the
 *   blocks are then seen. LOST: 3 blocks of 1,000 B lost. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#ifdef WRAPPED
static void* (*next_malloc)(size_t);
static void (*next_free)(void*);
static size_t calls;
/* What dlsym allocates while the next malloc is looked up. */
static char bootstrap[4096];
static size_t bootstrap_used;

void* malloc(size_t n) {
  if (next_malloc == NULL) {
    static int looking;
    if (looking) {
      void* p = bootstrap + bootstrap_used;
      bootstrap_used += (n + 15) & ~(size_t)15;
      return bootstrap_used <= sizeof bootstrap ? p : NULL;
    }
    looking = 1;
    next_malloc = (void* (*)(size_t))dlsym(RTLD_NEXT, "malloc");
    next_free = (void (*)(void*))dlsym(RTLD_NEXT, "free");
    looking = 0;
  }
  ++calls;
  return next_malloc(n);
}

void free(void* p) {
  if (p == NULL || ((char*)p >= bootstrap && (char*)p < bootstrap + sizeof bootstrap)) return;
  if (next_free == NULL) return;
  next_free(p);
}
#else
static _Alignas(16) char arena[1 << 22];
static size_t used;

void* malloc(size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (used + n > sizeof arena) return NULL;
  void* p = arena + used;
  used += n;
  return p;
}
void free(void* p) { (void)p; }
void* calloc(size_t count, size_t size) {
  void* p = malloc(count * size);
  if (p != NULL) memset(p, 0, count * size);
  return p;
}
void* realloc(void* p, size_t n) {
  void* q = malloc(n);
  if (p != NULL && q != NULL) memcpy(q, p, n); /* the arena's blocks lie ahead of the new one */
  return q;
}
#endif

static void* volatile sink;

int main(void) {
  for (int i = 0; i < 3; ++i) sink = malloc(1000); /* LOST */
  sink = NULL;
  for (int i = 0; i < 100; ++i) free(malloc(64));
  printf("own malloc done\n");
  return 0;
}
