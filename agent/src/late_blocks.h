// The blocks other threads allocate after the exit fence, while the program exits: not in the live
// list tleak sends for the exit scan, and in the heap, which is no root. A block of theirs that
// held the only pointer to a listed block (a worker moving an item into a node it just allocated)
// left that block unreached: a leak where memcheck saw a reachable block
// (tests/programs/pointer_moving_at_exit.c: four of eight runs before). The scan reads those
// still allocated as roots, while tleak holds the other threads stopped (thread_registers.h).
//
// A set by address, open addressing, written under a lock by the threads still running and read
// without one by the scan, when they are stopped: an entry's size is written before its address,
// and a freed one is marked so (never emptied, so that a probe goes on past it), and taken again.
#pragma once

#include <cstdint>

#include "reachability.h"

namespace tleak::agent {

// Before the exit fence, so that the set is there when other threads record their first late
// block: maps it. False if it could not be (late blocks are then not noted).
bool late_blocks_begin();

// A block allocated or freed after the exit fence (the thread's buffer lock held).
void late_block_allocated(std::uint64_t address, std::uint64_t size);
void late_block_freed(std::uint64_t address);

// The late blocks still allocated, up to `max` of them into `out`; returns how many.
std::uint64_t late_blocks(LiveBlock* out, std::uint64_t max);

}  // namespace tleak::agent
