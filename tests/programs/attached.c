/* tleak_attached() from <tleak/marks.h>: 1 in the process tleak records, 0 in a child it forks
 * (which inherits the agent but is not recorded) and without tleak.
 * Expected: "recorded 1, child 0" under tleak, "recorded 0, child 0" without. */
#include <stdio.h>
#include <sys/wait.h>
#include <tleak/marks.h>
#include <unistd.h>

int main(void) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return 1;
  const pid_t child = fork();
  if (child == 0) {
    const char answer = (char)('0' + tleak_attached());
    (void)!write(pipe_fds[1], &answer, 1);
    _exit(0);
  }
  char in_child = '?';
  (void)!read(pipe_fds[0], &in_child, 1);
  waitpid(child, NULL, 0);
  printf("recorded %d, child %c\n", tleak_attached(), in_child);
  return 0;
}
