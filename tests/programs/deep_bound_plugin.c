/* A library the program loads with RTLD_DEEPBIND (tests/programs/deep_bound.c): its calls to the
 * allocation functions bind to the C library's ahead of the global scope, where tleak's agent is. */
#include <stdlib.h>

void* plugin_make(size_t size) { return malloc(size); /* MADE */ }

void* plugin_zeroed(size_t size) { return calloc(1, size); /* ZEROED */ }

void* plugin_grow(void* block, size_t size) { return realloc(block, size); /* GROWN */ }

void plugin_drop(void* block) { free(block); }
