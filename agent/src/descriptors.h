// The C library's calls that can take a descriptor away from its owner: close, close_range,
// closefrom, dup2, dup3. The interposed ones (interpose.cc) keep the agent's channel to tleak
// open (channel.h) and pass everything else on to these: the definitions the program would have
// called without tleak (dlsym(RTLD_NEXT)).
#pragma once

namespace tleak::agent::real {

int close(int fd);
// -1 with ENOSYS where the C library has no such call (the program then could not have called it).
int close_range(unsigned first, unsigned last, int flags);
void closefrom(int first);
int dup2(int from, int to);
int dup3(int from, int to, int flags);

}  // namespace tleak::agent::real
