// The agent's end of the socket to the parent. Sends never raise SIGPIPE (the program's signal
// dispositions are its own). The descriptor is one the program never opened, at a high number:
// a program that closes every descriptor (a daemon, os.closerange) or puts one of its own on that
// number goes through the interposed close, close_range, closefrom, dup2 and dup3, which keep the
// channel open or move it first. If the program takes it away anyway (with a raw system call), the
// first send that fails says so to the parent (ControlPage::channel_lost) and turns recording off.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace tleak::agent {

// Whether `fd` is tleak's socket: a SOCK_SEQPACKET whose peer is process `tleak` (a socket pair's
// peer is the process that made it). A program may have closed the descriptor it inherited and
// opened one of its own under the same number; the agent must never write into that.
bool is_tleak_stream(int fd, pid_t tleak);
// Adopts `fd` if it is tleak's socket (is_tleak_stream). Returns false otherwise: the agent then
// records nothing. `lost` (in the control page, or null) is raised when the channel is lost.
bool channel_open(int fd, pid_t tleak, volatile std::uint64_t* lost);
// One message; false once the channel is gone (the agent then stops recording).
bool channel_send(const void* data, std::size_t bytes);
// Whether `fd` is the agent's descriptor (never true in a process that is not tracked).
bool channel_is(int fd);
// The agent's descriptor, or -1.
int channel_descriptor();
// Before the program puts a descriptor of its own on `fd` (dup2, dup3): if it is the agent's, the
// channel moves to another number first, with no send in flight.
void channel_move_off(int fd);
// Closes the channel, with no send in flight: nothing more is sent (the parent reads the end).
void channel_close();
// Fills exactly `bytes`, across as many messages as the parent sent. False on EOF or error.
bool channel_receive(void* data, std::size_t bytes);
// In a forked child, the socket belongs to the parent's image: forget it without closing.
void channel_forget();
// Whether the calling process is the one that opened the channel: not a vfork child, which shares
// the agent's memory (and its status) with it until it execs (a system call: not for a hot path).
bool channel_opened_here();

}  // namespace tleak::agent
