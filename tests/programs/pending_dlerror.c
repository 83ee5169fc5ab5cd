/* Looks up a symbol no object defines, as programs probe for optional features, and exits with
 * glibc still holding the message for dlerror() (in a block of its own for this thread, which
 * holds the message's block). Then loses 100 bytes on purpose.
 * Expected: the output is the same with and without tleak; leaked 100 B in 1 block (LOST), as for
 * memcheck: the message is reachable at exit, not lost. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  void* found = dlsym(RTLD_DEFAULT, "tleak_test_symbol_no_object_defines");
  const char* message = dlerror();
  printf("found: %s, dlerror: %s\n", found != NULL ? "yes" : "no", message != NULL ? "set" : "none");
  /* A second failed lookup: its message stays pending until the process exits. */
  (void)dlsym(RTLD_DEFAULT, "tleak_test_another_symbol_no_object_defines");
  void* lost = malloc(100); /* LOST */
  printf("%s\n", lost != NULL ? "lost 100 bytes" : "no memory");
  lost = NULL;
  return 0;
}
