// Which pages of this process it never touched, from its pagemap: neither in memory nor
// in swap. Such a page holds zeros (anonymous memory, bss) or its file's bytes unchanged (a
// module's data never written), neither of which can hold the address of a block allocated at
// run time, so the exit scan need not read it; reading it would fault it in, one fault per page.
// On the PyTorch loop about half of the 82 MB of roots were never touched. Without pagemap (no
// /proc), every page counts as touched. No allocation: the agent runs this at exit, inside
// malloc's caller.
//
// And which anonymous pages the process shares with another (a forked copy and its parent, until
// either writes): process_vm_readv pins what it reads, and the kernel gives a process its own
// copy of a shared anonymous page before pinning it, so the scan's reads of a forked copy copied
// every page it inherited; read through /proc/self/mem, which does not pin, it stays shared
// (tests/programs/forked_copy_shares.c; bench/programs/fork_big_heap.py for the time it took).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>

namespace tleak::agent {

inline constexpr std::uint64_t kPageBytes = 4096;

class UntouchedPages {
 public:
  // The calling thread's view: /proc/self is the main thread's, and reads nothing once that thread
  // has ended (pthread_exit from main, and another thread calls exit).
  void open() {
    fd_ = ::open("/proc/thread-self/pagemap", O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fd_ = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);  // before Linux 3.17
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  bool never_touched(std::uintptr_t address) {
    if (fd_ < 0) return false;
    const std::uint64_t page = address / kPageBytes;
    return (entry(page) & (kPresent | kSwapped)) == 0;
  }

  // In memory, anonymous, and mapped by another process too (not exclusively this one's).
  bool shared_anonymous(std::uintptr_t address) {
    if (fd_ < 0) return false;
    return (entry(address / kPageBytes) & (kPresent | kFilePage | kExclusive)) == kPresent;
  }

 private:
  static constexpr std::uint64_t kPresent = std::uint64_t{1} << 63, kSwapped = std::uint64_t{1} << 62,
                                 kFilePage = std::uint64_t{1} << 61, kExclusive = std::uint64_t{1} << 56;

  // The page's pagemap entry, from the window of entries read last or a new one; one that cannot
  // be read is taken for a page in memory, this process's alone (read as before pagemap was).
  std::uint64_t entry(std::uint64_t page) {
    if (page < first_ || page >= first_ + count_) {
      const ssize_t got = pread(fd_, entries_, sizeof entries_, static_cast<off_t>(page * 8));
      if (got < 8) return kPresent | kExclusive;
      first_ = page;
      count_ = static_cast<std::uint64_t>(got) / 8;
    }
    return entries_[page - first_];
  }

  int fd_ = -1;
  std::uint64_t first_ = 0, count_ = 0;  // the pages entries_ describes
  std::uint64_t entries_[512] = {};
};

}  // namespace tleak::agent
