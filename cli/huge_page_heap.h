// tleak's own heap on transparent huge pages. Run on a large program, tleak's parent holds
// hundreds of megabytes in millions of small blocks, and on a virtual machine each 4 KiB page's
// first touch is an expensive trap: glibc's malloc can ask for huge pages instead, but only through
// a tunable read when the process starts. So tleak re-executes itself once with
// GLIBC_TUNABLES=...:glibc.malloc.hugetlb=1, and the new image puts the user's environment back
// before anything else runs: the programs tleak starts see exactly the environment tleak was given.
#pragma once

namespace tleak::cli {

// Call first in main. For the sub-commands that build large recordings or read large reports,
// re-executes this program with the tunable set (and returns only if that is not possible or not
// useful: already done, the user chose glibc.malloc.hugetlb, huge pages disabled, running under
// Valgrind or a sanitizer). In the re-executed image, restores the user's GLIBC_TUNABLES.
void use_huge_pages_for_heap(char** argv);

}  // namespace tleak::cli
