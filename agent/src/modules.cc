#include "modules.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "channel.h"
#include "mapped_path.h"
#include "next_symbol.h"
#include "tleak/agent/protocol.h"
#include "tleak/detail/spin_lock.h"

namespace tleak::agent {
namespace {

detail::SpinLock g_lock;
unsigned long long g_last_adds = ~0ull, g_last_subs = ~0ull;
alignas(8) unsigned char g_message[kMaxMessageBytes];
std::uint32_t g_used = 0;
char g_exe_path[4096];

void flush() {
  if (g_used > 0) channel_send(g_message, g_used);
  g_used = 0;
}

// The GNU build id from the object's PT_NOTE segments, as mapped.
std::uint32_t build_id(const dl_phdr_info* info, const unsigned char** id) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* p = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
    const unsigned char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const unsigned char* name = p + sizeof(ElfW(Nhdr));
      const unsigned char* desc = name + ((note->n_namesz + 3) & ~3u);
      if (desc + note->n_descsz > end) break;
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        *id = desc;
        return note->n_descsz;
      }
      p = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
  return 0;
}

// An object loaded by a relative name ("./plugin.so", ctypes.CDLL("./libfoo.so")) keeps that name
// in the loader's list, which means the program's directory when it loaded it: tleak, elsewhere
// and later, could not open it, and its frames went unnamed. Its absolute name, from the kernel's
// map of the file at `start`, found once per object (the map is sent whole at every change).
const char* absolute_path(std::uintptr_t load_bias, const char* name, std::uintptr_t start) {
  struct Resolved {
    std::uintptr_t load_bias;
    char name[256];  // empty: unused
    char path[4096];
  };
  static Resolved resolved[8];
  static std::uint32_t next = 0;
  const std::size_t name_bytes = std::strlen(name) + 1;
  for (const Resolved& r : resolved) {
    if (r.load_bias == load_bias && std::strcmp(r.name, name) == 0) return r.path;
  }
  Resolved& r = resolved[next++ % 8];
  r.name[0] = '\0';
  if (!mapped_path(start, r.path, sizeof r.path)) return name;
  r.load_bias = load_bias;
  // A longer name is looked up again each time.
  if (name_bytes <= sizeof r.name) std::memcpy(r.name, name, name_bytes);
  return r.path;
}

int add_module(dl_phdr_info* info, size_t, void*) {
  std::uintptr_t start = ~std::uintptr_t{0}, end = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const std::uintptr_t s = info->dlpi_addr + ph.p_vaddr;
    if (s < start) start = s;
    if (s + ph.p_memsz > end) end = s + ph.p_memsz;
  }
  if (end == 0) return 0;
  const char* path = info->dlpi_name;
  // The main program has an empty name; the vdso has none on disk worth naming.
  if (path == nullptr || path[0] == '\0') {
    path = g_exe_path;
  } else if (path[0] != '/' && std::strchr(path, '/') != nullptr) {
    path = absolute_path(info->dlpi_addr, path, start);
  }
  const unsigned char* id = nullptr;
  const std::uint32_t id_bytes = build_id(info, &id);
  std::uint32_t path_bytes = static_cast<std::uint32_t>(std::strlen(path)) + 1;
  if (path_bytes > 4096) path_bytes = 4096;
  const std::uint32_t size = padded(sizeof(ModuleRecord) + id_bytes + path_bytes);
  if (g_used + size > sizeof g_message) flush();
  auto* record = reinterpret_cast<ModuleRecord*>(g_message + g_used);
  std::memset(record, 0, size);
  record->header = {RecordKind::kModule, 0, size};
  record->start = start;
  record->end = end;
  record->load_bias = info->dlpi_addr;
  record->path_bytes = path_bytes;
  record->build_id_bytes = id_bytes;
  auto* tail = reinterpret_cast<char*>(record + 1);
  if (id_bytes > 0) std::memcpy(tail, id, id_bytes);
  std::memcpy(tail + id_bytes, path, path_bytes - 1);
  g_used += size;
  return 0;
}

int read_counts(dl_phdr_info* info, size_t size, void* out) {
  auto* counts = static_cast<unsigned long long*>(out);
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    counts[0] = info->dlpi_adds;
    counts[1] = info->dlpi_subs;
  }
  return 1;  // the counters are the same in every entry: one is enough
}

using DlcloseFn = int (*)(void*);
std::atomic<DlcloseFn> g_next_dlclose{nullptr};

DlcloseFn next_dlclose() { return next_symbol(g_next_dlclose, "dlclose"); }

// Resolved before the program's own code runs.
__attribute__((constructor)) void find_next_dlclose() { next_dlclose(); }

}  // namespace

int real_dlclose(void* handle) {
  const DlcloseFn next = next_dlclose();
  return next != nullptr ? next(handle) : -1;
}

void send_modules_if_changed() {
  g_lock.lock();
  unsigned long long counts[2] = {0, 0};
  dl_iterate_phdr(read_counts, counts);
  if (counts[0] != g_last_adds || counts[1] != g_last_subs) {
    g_last_adds = counts[0];
    g_last_subs = counts[1];
    if (g_exe_path[0] == '\0') {
      const ssize_t n = readlink("/proc/self/exe", g_exe_path, sizeof g_exe_path - 1);
      g_exe_path[n > 0 ? n : 0] = '\0';
    }
    dl_iterate_phdr(add_module, nullptr);
    flush();
  }
  g_lock.unlock();
}

}  // namespace tleak::agent
