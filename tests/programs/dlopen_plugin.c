/* A plugin that dlopen_churn.c loads and unloads again and again. Each of its functions
 * allocates from its own code, so each load brings return addresses libunwind has not seen. */
#include <stdlib.h>

__attribute__((noinline)) void* plugin_make(size_t size) {
  return malloc(size); /* PLUGIN */
}
