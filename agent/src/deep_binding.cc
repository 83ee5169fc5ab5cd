#include "deep_binding.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "agent.h"
#include "code_range.h"
#include "elf_symbols.h"
#include "modules.h"
#include "unwinder_objects.h"

namespace tleak::agent {

extern "C" {
void* (*tleak_next_dlopen)(const char*, int) = nullptr;
}

namespace {

using DlopenFn = void* (*)(const char*, int);

// A C library without dlopen (one before 2.34 whose libdl is not loaded): as dlopen fails.
void* no_dlopen(const char*, int) { return nullptr; }

// Before the program's own code runs; the entry looks again if a constructor before this one
// called dlopen.
__attribute__((constructor)) void find_next_dlopen() {
  const int saved_errno = errno;
  auto* next = reinterpret_cast<DlopenFn>(dlsym(RTLD_NEXT, "dlopen"));
  tleak_next_dlopen = next != nullptr ? next : no_dlopen;
  errno = saved_errno;
}

const void* agent_address() { return reinterpret_cast<const void*>(&tleak_rebinding_dlopen); }

// What decides where the loader looks for a file named without a path: the caller's RPATH and
// RUNPATH, and an RPATH anywhere up the chain of objects that loaded it.
struct CallerScan {
  std::uintptr_t caller;
  bool caller_found = false;
  bool caller_has_paths = false;
  bool any_rpath = false;
};

int scan_caller(dl_phdr_info* info, std::size_t, void* data) {
  auto* scan = static_cast<CallerScan*>(data);
  const bool holds_caller = object_holds(info, scan->caller);
  scan->caller_found = scan->caller_found || holds_caller;
  DynamicSection dynamic;
  if (read_dynamic_section(info, &dynamic)) {
    scan->any_rpath = scan->any_rpath || dynamic.has_rpath;
    scan->caller_has_paths = scan->caller_has_paths || (holds_caller && (dynamic.has_rpath || dynamic.has_runpath));
  }
  return 0;
}

// Whether the loader, called by the agent, loads what it would have for `caller`: the same
// namespace (the agent's, the base one: dl_iterate_phdr lists the caller's namespace, so a caller
// it does not list is in another, or in code of no object) and the same search.
bool same_load_for_agent(const char* file, const void* caller) {
  if (std::strchr(file, '$') != nullptr) return false;  // $ORIGIN and the like: the caller's
  CallerScan scan{reinterpret_cast<std::uintptr_t>(caller)};
  real_dl_iterate_phdr(scan_caller, &scan);
  if (!scan.caller_found) return false;
  if (std::strchr(file, '/') != nullptr) return true;
  return !scan.caller_has_paths && !scan.any_rpath;
}

// One function the agent interposes, met in a relocation: the agent's definition, the one it
// passes calls on to, and whether the global scope binds a lazy call to the agent's.
struct Interposed {
  std::uintptr_t ours = 0;
  std::uintptr_t next = 0;
  bool first_is_ours = false;
};

// The functions met in one rebinding, looked up once each (a library makes thousands of
// relocations, a few dozen to the agent's functions).
class InterposedFunctions {
 public:
  explicit InterposedFunctions(const dl_phdr_info* agent) : agent_base_(agent->dlpi_addr) {
    read_dynamic_section(agent, &agent_);
  }

  // Null unless the agent defines `name` and passes it on to a definition after it.
  const Interposed* find(const char* name) {
    const auto ours = reinterpret_cast<std::uintptr_t>(function_defined_in(agent_, agent_base_, name));
    if (ours == 0) return nullptr;
    Interposed* met = nullptr;
    for (int i = 0; i < count_ && met == nullptr; ++i) {
      if (known_[i].ours == ours) met = &known_[i];
    }
    if (met == nullptr) {
      // Past the table's room (more functions than the agent defines): looked up again each time.
      met = count_ < kMaxKnown ? &known_[count_++] : &spare_;
      met->ours = ours;
      met->next = reinterpret_cast<std::uintptr_t>(find_function_after(agent_address(), name));
      met->first_is_ours = reinterpret_cast<std::uintptr_t>(find_function_first(name)) == ours;
    }
    return met->next != 0 ? met : nullptr;
  }

 private:
  static constexpr int kMaxKnown = 64;
  DynamicSection agent_;  // read once: every relocation of every object asks it
  std::uintptr_t agent_base_;
  Interposed known_[kMaxKnown];
  Interposed spare_;
  int count_ = 0;
};

// Writes one GOT entry: in the object's RELRO part (read-only once relocated), made writable for
// the store; elsewhere only in a writable segment.
bool write_entry(const dl_phdr_info* info, std::uintptr_t entry, std::uintptr_t value) {
  const auto page_size = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  bool writable = false, relro = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    const std::uintptr_t start = info->dlpi_addr + p.p_vaddr, end = start + p.p_memsz;
    if (p.p_type == PT_LOAD && (p.p_flags & PF_W) != 0 && entry >= start && entry + 8 <= end) writable = true;
    // The loader protects the whole pages of this part, its last partial page not.
    if (p.p_type == PT_GNU_RELRO && entry >= (start & ~(page_size - 1)) && entry < (end & ~(page_size - 1))) relro = true;
  }
  if (!writable || entry % alignof(std::uintptr_t) != 0) return false;
  void* page = reinterpret_cast<void*>(entry & ~(page_size - 1));
  if (relro && mprotect(page, page_size, PROT_READ | PROT_WRITE) != 0) return false;
  __atomic_store_n(reinterpret_cast<std::uintptr_t*>(entry), value, __ATOMIC_RELEASE);
  if (relro) mprotect(page, page_size, PROT_READ);
  return true;
}

// Where the loader will bind a lazy entry of `info`'s for `name`: in the deep-bound tree's scope.
// The object's own dependencies and the whole tree's (the `root` dlopen returned) must both find
// the function the agent passes calls on to: only then is no other definition (a library's own
// malloc) in reach of that scope. Counts the loader's failures in `failed`.
bool binds_lazily_to(const Interposed& f, void* own, void* root, const char* name, bool* failed) {
  for (void* handle : {own, root}) {
    const auto bound = handle != nullptr ? reinterpret_cast<std::uintptr_t>(dlsym(handle, name)) : 0;
    *failed = *failed || bound == 0;
    if (bound != f.next) return false;
  }
  return true;
}

void rebind_object(const dl_phdr_info* info, InterposedFunctions& interposed, void* root) {
  DynamicSection r;
  if (!read_dynamic_section(info, &r) || r.symbols == nullptr || r.strings == nullptr) return;
  void* own_handle = nullptr;
  bool handle_asked = false, loader_failed = false;
  const ElfW(Rela)* const tables[] = {r.relocations, r.plt_relocations};
  const std::size_t bytes[] = {r.relocation_bytes, r.plt_relocation_bytes};
  for (int t = 0; t < 2; ++t) {
    if (tables[t] == nullptr) continue;
    const std::size_t count = bytes[t] / sizeof(ElfW(Rela));
    for (std::size_t i = 0; i < count; ++i) {
      const ElfW(Rela)& rela = tables[t][i];
      const auto type = ELF64_R_TYPE(rela.r_info);
      if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
      const ElfW(Sym)& symbol = r.symbols[ELF64_R_SYM(rela.r_info)];
      // A function of its own: a deep-bound object binds to it, as it should.
      if (symbol.st_shndx != SHN_UNDEF) continue;
      const char* name = r.strings + symbol.st_name;
      const Interposed* f = interposed.find(name);
      if (f == nullptr) continue;
      const std::uintptr_t entry = info->dlpi_addr + rela.r_offset;
      const std::uintptr_t value = *reinterpret_cast<const std::uintptr_t*>(entry);
      if (value == f->ours) continue;
      bool rebind = value == f->next;
      // Not bound yet (a lazy binding's entry points at the object's own PLT).
      if (!rebind && type == R_X86_64_JUMP_SLOT && f->first_is_ours && object_holds(info, value)) {
        if (!handle_asked) {
          handle_asked = true;
          own_handle = tleak_next_dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
          loader_failed = own_handle == nullptr;
        }
        rebind = own_handle != nullptr && binds_lazily_to(*f, own_handle, root, name, &loader_failed);
      }
      if (rebind) write_entry(info, entry, f->ours);
    }
  }
  if (own_handle != nullptr) real_dlclose(own_handle);
  // The program's dlerror() state as its successful dlopen left it: nothing pending.
  if (loader_failed) dlerror();
}

// The objects in load order from `first` on, a window at a time, and the agent's own: copied out
// of dl_iterate_phdr's callback, so that the loader's lock is not held while the agent writes or
// asks the loader anything.
struct Window {
  Window(std::size_t from, const void* agent_at) : first(from), agent(agent_at) {}
  std::size_t first, index = 0;
  static constexpr std::size_t kObjects = 32;
  dl_phdr_info objects[kObjects];
  std::size_t count = 0;
  const void* agent;
  dl_phdr_info agent_info{};
  bool agent_found = false;
};

int copy_window(dl_phdr_info* info, std::size_t, void* data) {
  auto* w = static_cast<Window*>(data);
  if (!w->agent_found && object_holds(info, reinterpret_cast<std::uintptr_t>(w->agent))) {
    w->agent_info = *info;
    w->agent_found = true;
  }
  if (w->index++ >= w->first && w->count < Window::kObjects) w->objects[w->count++] = *info;
  return 0;
}

struct Counts {
  std::size_t objects = 0;
  unsigned long long adds = 0;
};

int count_objects(dl_phdr_info* info, std::size_t, void* data) {
  auto* c = static_cast<Counts*>(data);
  ++c->objects;
  c->adds = info->dlpi_adds;
  return 0;
}

Counts loaded_objects() {
  Counts c;
  real_dl_iterate_phdr(count_objects, &c);
  return c;
}

// The objects loaded since the loader had added `adds_before`: the last ones in its list (one more
// or fewer if another thread loaded or unloaded meanwhile; rebinding any object twice, or one
// loaded without RTLD_DEEPBIND, changes nothing the program sees). False if none was added (the
// library was loaded already).
bool rebind_objects_added_since(unsigned long long adds_before, void* root) {
  const Counts now = loaded_objects();
  const unsigned long long added = now.adds - adds_before;
  if (added == 0) return false;
  std::size_t first = added < now.objects ? now.objects - static_cast<std::size_t>(added) : 0;
  Window w(first, agent_address());
  real_dl_iterate_phdr(copy_window, &w);
  if (!w.agent_found) return false;
  InterposedFunctions interposed(&w.agent_info);
  for (;;) {
    for (std::size_t i = 0; i < w.count; ++i) {
      const dl_phdr_info& info = w.objects[i];
      // The executable and the vDSO are never new; the agent binds its own calls itself.
      if (info.dlpi_name == nullptr || info.dlpi_name[0] == '\0') continue;
      if (object_holds(&info, reinterpret_cast<std::uintptr_t>(w.agent))) continue;
      rebind_object(&info, interposed, root);
    }
    if (w.count < Window::kObjects) return true;
    first += Window::kObjects;
    w.first = first;
    w.index = w.count = 0;
    real_dl_iterate_phdr(copy_window, &w);
  }
}

}  // namespace

extern "C" bool tleak_dlopen_is_rebound(const char* file, int mode, const void* caller) {
  const int saved_errno = errno;
  if (tleak_next_dlopen == nullptr) find_next_dlopen();
  bool rebound = false;
  if ((mode & RTLD_DEEPBIND) != 0 && file != nullptr && rebinds_deep_bound()) {
    rebound = same_load_for_agent(file, caller);
    if (!rebound) note_deep_bound(false);
  }
  errno = saved_errno;
  return rebound;
}

extern "C" void* tleak_rebinding_dlopen(const char* file, int mode) {
  const unsigned long long adds_before = loaded_objects().adds;
  void* handle = tleak_next_dlopen(file, mode);
  if (handle == nullptr) return nullptr;
  const int saved_errno = errno;
  bool added = false;
  {
    // The loader may allocate for the agent's questions: not the program's blocks.
    const PassThrough agents_own;
    added = rebind_objects_added_since(adds_before, handle);
  }
  if (added) note_deep_bound(true);
  errno = saved_errno;
  return handle;
}

}  // namespace tleak::agent
