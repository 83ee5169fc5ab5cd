// The agent's end of the socket to the parent. Sends never raise SIGPIPE (the program's signal
// dispositions are its own) and a failed send turns the agent off instead of reporting an error
// the program never asked about.
#pragma once

#include <cstddef>

namespace tleak::agent {

// Adopts `fd` if it is the parent's socket (a SOCK_SEQPACKET whose peer is this process's
// parent). Returns false otherwise: the agent then records nothing.
bool channel_open(int fd);
// One message; false once the parent is gone (the agent then stops recording).
bool channel_send(const void* data, std::size_t bytes);
// Fills exactly `bytes`, across as many messages as the parent sent. False on EOF or error.
bool channel_receive(void* data, std::size_t bytes);
// In a forked child, the socket belongs to the parent's image: forget it without closing.
void channel_forget();

}  // namespace tleak::agent
