#include "debuginfo_cache.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

namespace tleak {
namespace {

namespace fs = std::filesystem;

// An Elf read from a descriptor it does not own.
class ElfReader {
 public:
  explicit ElfReader(int fd) {
    elf_version(EV_CURRENT);
    elf_ = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    if (elf_ != nullptr && elf_kind(elf_) != ELF_K_ELF) {
      elf_end(elf_);
      elf_ = nullptr;
    }
  }
  ~ElfReader() {
    if (elf_ != nullptr) elf_end(elf_);
  }
  ElfReader(const ElfReader&) = delete;
  ElfReader& operator=(const ElfReader&) = delete;
  Elf* get() const { return elf_; }

 private:
  Elf* elf_ = nullptr;
};

std::string section_name(Elf* elf, const GElf_Shdr& header) {
  std::size_t names = 0;
  if (elf_getshdrstrndx(elf, &names) != 0) return {};
  const char* name = elf_strptr(elf, names, header.sh_name);
  return name != nullptr ? name : "";
}

// Whether libdw would inflate sections of this file (and the copy would spare it that).
bool has_compressed_sections(Elf* elf) {
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr header;
    if (gelf_getshdr(scn, &header) != nullptr && (header.sh_flags & SHF_COMPRESSED) != 0) return true;
  }
  return false;
}

// A dwz alternate file is found by a path relative to the debug file's directory, which a copy
// elsewhere would break; GNU-style .zdebug sections are named for their compression. Such files
// are read where they are.
bool copyable(Elf* elf) {
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr header;
    if (gelf_getshdr(scn, &header) == nullptr) return false;
    const std::string name = section_name(elf, header);
    if (name == ".gnu_debugaltlink" || name.starts_with(".zdebug")) return false;
    if ((header.sh_flags & SHF_GROUP) != 0 || header.sh_type == SHT_GROUP) return false;
  }
  return true;
}

bool has_build_id(Elf* elf, std::string_view build_id) {
  const void* bits = nullptr;
  const ssize_t n = dwelf_elf_gnu_build_id(elf, &bits);
  return n > 0 && std::string_view(static_cast<const char*>(bits), static_cast<std::size_t>(n)) == build_id;
}

// A copy this cache wrote, whole: its build ID, nothing compressed, every section inside the file
// (a copy cut short by a full disk, or by hand, is made again).
bool valid_copy(int fd, std::string_view build_id) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  const ElfReader reader(fd);
  Elf* elf = reader.get();
  if (elf == nullptr || !has_build_id(elf, build_id) || has_compressed_sections(elf)) return false;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr header;
    if (gelf_getshdr(scn, &header) == nullptr) return false;
    if (header.sh_type != SHT_NOBITS && header.sh_offset + header.sh_size > static_cast<std::uint64_t>(st.st_size)) {
      return false;
    }
  }
  return true;
}

// The bytes the copy will take: every section at its inflated size.
std::uint64_t inflated_bytes(Elf* elf) {
  std::uint64_t total = 0;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr header;
    if (gelf_getshdr(scn, &header) == nullptr || header.sh_type == SHT_NOBITS) continue;
    GElf_Chdr compression;
    total += (header.sh_flags & SHF_COMPRESSED) != 0 && gelf_getchdr(scn, &compression) != nullptr
                 ? compression.ch_size
                 : header.sh_size;
  }
  return total;
}

// Writes `in` to `out_fd` with its compressed sections inflated: the same headers, sections and
// section indices, laid out anew by libelf (a debug file's program headers describe the stripped
// object's memory, which no section here occupies).
bool write_inflated(Elf* in, int out_fd) {
  Elf* out = elf_begin(out_fd, ELF_C_WRITE, nullptr);
  if (out == nullptr) return false;
  bool ok = false;
  [&] {
    GElf_Ehdr ehdr;
    std::size_t phnum = 0, shstrndx = 0;
    if (gelf_getehdr(in, &ehdr) == nullptr || elf_getphdrnum(in, &phnum) != 0 || elf_getshdrstrndx(in, &shstrndx) != 0 ||
        gelf_newehdr(out, gelf_getclass(in)) == nullptr) {
      return;
    }
    if (phnum > 0) {
      if (gelf_newphdr(out, phnum) == nullptr) return;
      for (std::size_t i = 0; i < phnum; ++i) {
        GElf_Phdr phdr;
        if (gelf_getphdr(in, static_cast<int>(i), &phdr) == nullptr || gelf_update_phdr(out, static_cast<int>(i), &phdr) == 0) return;
      }
    }
    for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(in, scn)) != nullptr;) {
      GElf_Shdr header;
      if (gelf_getshdr(scn, &header) == nullptr) return;
      if ((header.sh_flags & SHF_COMPRESSED) != 0) {
        // In memory only: the file `in` reads is not written.
        if (elf_compress(scn, 0, 0) < 0 || gelf_getshdr(scn, &header) == nullptr) return;
      }
      Elf_Scn* copy = elf_newscn(out);
      if (copy == nullptr) return;
      if (const Elf_Data* data = elf_getdata(scn, nullptr); data != nullptr) {
        Elf_Data* to = elf_newdata(copy);
        if (to == nullptr) return;
        to->d_buf = data->d_buf;
        to->d_type = data->d_type;
        to->d_size = data->d_size;
        to->d_off = 0;
        to->d_align = data->d_align;
        to->d_version = data->d_version;
      }
      if (gelf_update_shdr(copy, &header) == 0) return;
    }
    // Past SHN_LORESERVE sections the index moves to section 0's header; no debug file has so many.
    if (shstrndx >= SHN_LORESERVE) return;
    ehdr.e_phoff = 0;
    ehdr.e_shoff = 0;
    ehdr.e_shstrndx = static_cast<GElf_Half>(shstrndx);
    if (gelf_update_ehdr(out, &ehdr) == 0) return;
    ok = elf_update(out, ELF_C_WRITE) >= 0;
  }();
  elf_end(out);
  return ok;
}

// Removes the least recently used copies until `incoming` more bytes fit under the limit.
void make_room(const std::string& directory, std::uint64_t incoming) {
  struct Entry {
    fs::path path;
    fs::file_time_type used;
    std::uint64_t bytes;
  };
  std::vector<Entry> entries;
  std::uint64_t total = 0;
  std::error_code error;
  const auto stale = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const fs::directory_entry& e : fs::directory_iterator(directory, error)) {
    if (e.path().extension() == ".part" && e.last_write_time(error) < stale) {
      fs::remove(e.path(), error);  // left by a run that stopped while writing it
      continue;
    }
    if (e.path().extension() != ".debug" || !e.is_regular_file(error)) continue;
    const std::uint64_t bytes = e.file_size(error);
    if (error) continue;
    entries.push_back({e.path(), e.last_write_time(error), bytes});
    total += bytes;
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& e : entries) {
    if (total + incoming <= kDebuginfoCacheBytes) break;
    if (fs::remove(e.path, error)) total -= e.bytes;
  }
}

}  // namespace

std::string build_id_hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  for (const char c : bytes) {
    text += kDigits[static_cast<unsigned char>(c) >> 4];
    text += kDigits[static_cast<unsigned char>(c) & 15];
  }
  return text;
}

std::string debuginfo_cache_directory() {
  std::string base;
  if (const char* own = std::getenv("TLEAK_CACHE_DIR")) {
    base = own;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/') {
    base = std::string(xdg) + "/tleak";
  } else if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/') {
    base = std::string(home) + "/.cache/tleak";
  }
  return base.empty() ? base : base + "/debuginfo";
}

int uncompressed_debuginfo(int fd, std::string_view build_id, const std::string& directory, std::string* path) {
  if (build_id.empty() || directory.empty()) return -1;
  const ElfReader reader(fd);
  Elf* in = reader.get();
  if (in == nullptr || !has_compressed_sections(in) || !copyable(in) || !has_build_id(in, build_id)) return -1;

  const std::string name = directory + "/" + build_id_hex(build_id) + ".debug";
  if (const int cached = open(name.c_str(), O_RDONLY | O_CLOEXEC); cached >= 0) {
    if (valid_copy(cached, build_id)) {
      futimens(cached, nullptr);  // used now: the last to be removed for room
      *path = name;
      return cached;
    }
    close(cached);
  }

  const std::uint64_t bytes = inflated_bytes(in);
  if (bytes > kDebuginfoCacheBytes / 2) return -1;
  std::error_code error;
  fs::create_directories(directory, error);
  if (error) return -1;
  make_room(directory, bytes);
  // Written under a name of this process's own, then renamed over the final one: a reader sees a
  // whole copy or none.
  const std::string temporary = directory + "/." + build_id_hex(build_id) + "." + std::to_string(getpid()) + ".part";
  // Readable by its owner only, as a user's own program's debug info may be; never through a link
  // left under that name (a piece left by an earlier process of the same pid is removed first).
  unlink(temporary.c_str());
  const int out = open(temporary.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (out < 0) return -1;
  // Not synced: a copy the system lost part of in a crash fails valid_copy and is made again.
  if (!write_inflated(in, out) || !valid_copy(out, build_id) ||
      rename(temporary.c_str(), name.c_str()) != 0) {
    close(out);
    unlink(temporary.c_str());
    return -1;
  }
  *path = name;
  return out;
}

}  // namespace tleak
