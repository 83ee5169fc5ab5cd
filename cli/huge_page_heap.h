// tleak's own heap on transparent huge pages, for the commands that run a program.
//
// A program's run makes tleak hold hundreds of megabytes of per-site records, built while the
// program runs and read again for the report. Each first touch of a 4 KiB page is a page fault,
// and on virtual machines a fault costs microseconds: measured on the PyTorch and numpy loops,
// faults were about a third of tleak's own time, and huge pages cut the time from the program's
// exit to the report being written by about a third. glibc puts its heap on huge pages only
// when told at start-up (the glibc.malloc.hugetlb tunable), so tleak starts itself once more with
// the tunable set, and puts the environment back as it was before it starts anything: the
// program gets the caller's environment, not tleak's.
#pragma once

namespace tleak::cli {

// Replaces the process with itself on a huge-page heap when that helps and can be done: the
// command runs a program (`run ... -- COMMAND`, `check`), the kernel gives huge pages only when
// asked (madvise mode), the caller did not choose glibc.malloc.hugetlb itself, and tleak is not
// under Valgrind or a sanitizer (which replace malloc). In the process started that way,
// restores the caller's GLIBC_TUNABLES. Returns if nothing was replaced (or exec failed).
void use_huge_page_heap(int argc, char** argv);

}  // namespace tleak::cli
