/* Built with AddressSanitizer, whose runtime replaces malloc itself (and, linked as a library,
 * insists on coming first): tleak must refuse it before it runs, saying why. */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  char* p = malloc(100);
  p[0] = 'x';
  printf("sanitized program ran: %c\n", p[0]);
  free(p);
  return 0;
}
