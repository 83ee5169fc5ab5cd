/* Statically linked: the loader cannot load tleak's interposer into it. Given a command, it runs it
 * as its child and exits with its status: a static launcher, which only `--record` looks past.
 * Given `exec MS COMMAND...`, it becomes the command MS milliseconds later (the same process, which
 * for that while has no agent: an image between two that have one). */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) return 0;
  if (argc >= 4 && strcmp(argv[1], "exec") == 0) {
    const long ms = atol(argv[2]);
    const struct timespec pause = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&pause, NULL);
    execv(argv[3], argv + 3);
    return 127;
  }
  const pid_t child = fork();
  if (child == 0) {
    execv(argv[1], argv + 1);
    _exit(127);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child) return 1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
