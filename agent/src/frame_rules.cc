#include "frame_rules.h"

#include <elf.h>
#include <link.h>

#include <cstring>

#include "code_range.h"
#include "unwinder_objects.h"

namespace tleak::agent {
namespace {

// DWARF register numbers on x86-64.
constexpr std::uint64_t kRbp = 6;
constexpr std::uint64_t kRsp = 7;
constexpr std::uint64_t kReturnAddress = 16;

// Pointer encodings (DW_EH_PE_*).
constexpr std::uint8_t kOmit = 0xff;
constexpr std::uint8_t kFormatMask = 0x0f;
constexpr std::uint8_t kApplicationMask = 0x70;
constexpr std::uint8_t kPcRelative = 0x10;
constexpr std::uint8_t kDataRelative = 0x30;
constexpr std::uint8_t kDataRelativeSigned4 = 0x3b;  // the index's usual encoding

// A reader over tables the loader mapped; `bad` once something could not be read.
struct Reader {
  const std::uint8_t* p;
  bool bad = false;

  template <typename T>
  T fixed() {
    T value;
    std::memcpy(&value, p, sizeof value);
    p += sizeof value;
    return value;
  }
  std::uint64_t uleb() {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const std::uint8_t byte = *p++;
      value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    bad = true;
    return 0;
  }
  std::int64_t sleb() {
    std::uint64_t value = 0;
    int shift = 0;
    std::uint8_t byte = 0;
    do {
      if (shift >= 64) {
        bad = true;
        return 0;
      }
      byte = *p++;
      value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      shift += 7;
    } while ((byte & 0x80) != 0);
    if (shift < 64 && (byte & 0x40) != 0) value |= ~std::uint64_t{0} << shift;
    return static_cast<std::int64_t>(value);
  }
  // A pointer in `encoding`; pc-relative to where it is written, data-relative to `data_base`.
  // Indirect pointers (a personality routine's) are read, not followed: nothing here needs them.
  std::uintptr_t encoded(std::uint8_t encoding, std::uintptr_t data_base) {
    if (encoding == kOmit) return 0;
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    std::uintptr_t value = 0;
    switch (encoding & kFormatMask) {
      case 0x00:
        value = fixed<std::uint64_t>();
        break;
      case 0x01:
        value = uleb();
        break;
      case 0x02:
        value = fixed<std::uint16_t>();
        break;
      case 0x03:
        value = fixed<std::uint32_t>();
        break;
      case 0x04:
        value = fixed<std::uint64_t>();
        break;
      case 0x09:
        value = static_cast<std::uintptr_t>(sleb());
        break;
      case 0x0a:
        value = static_cast<std::uintptr_t>(static_cast<std::intptr_t>(fixed<std::int16_t>()));
        break;
      case 0x0b:
        value = static_cast<std::uintptr_t>(static_cast<std::intptr_t>(fixed<std::int32_t>()));
        break;
      case 0x0c:
        value = fixed<std::uint64_t>();
        break;
      default:
        bad = true;
        return 0;
    }
    switch (encoding & kApplicationMask) {
      case 0x00:
        break;
      case kPcRelative:
        value += at;
        break;
      case kDataRelative:
        value += data_base;
        break;
      default:
        bad = true;
        return 0;  // text-, function-relative and aligned: not on x86-64 Linux
    }
    return value;
  }
};

// What the call-frame instructions say of the three registers a walk follows.
struct RegisterState {
  enum class Rule : std::uint8_t { kSame, kUndefined, kOffset, kOther };
  std::uint64_t cfa_register = kRsp;
  std::int64_t cfa_offset = 8;
  bool cfa_is_expression = false;
  Rule rbp = Rule::kSame;
  std::int64_t rbp_offset = 0;
  Rule return_address = Rule::kSame;
  std::int64_t return_address_offset = 0;
};

struct Cie {
  std::uint64_t code_align = 1;
  std::int64_t data_align = -8;
  std::uint8_t fde_encoding = 0;
  bool augmented = false;  // 'z': FDEs carry an augmentation length
  bool signal_frame = false;
  const std::uint8_t* instructions = nullptr;
  const std::uint8_t* end = nullptr;
};

bool read_cie(const std::uint8_t* at, std::uintptr_t data_base, Cie* cie) {
  Reader r{at};
  const auto length = r.fixed<std::uint32_t>();
  if (length == 0 || length == 0xffffffffu) return false;
  cie->end = r.p + length;
  if (r.fixed<std::uint32_t>() != 0) return false;  // a CIE's id in .eh_frame
  const std::uint8_t version = r.fixed<std::uint8_t>();
  if (version != 1 && version != 3) return false;
  const auto* augmentation = reinterpret_cast<const char*>(r.p);
  const std::size_t augmentation_length = strnlen(augmentation, 16);
  if (augmentation_length == 16) return false;
  r.p += augmentation_length + 1;
  cie->code_align = r.uleb();
  cie->data_align = r.sleb();
  const std::uint64_t return_register = version == 1 ? r.fixed<std::uint8_t>() : r.uleb();
  if (return_register != kReturnAddress) return false;
  if (augmentation[0] == 'z') {
    cie->augmented = true;
    const std::uint64_t data_length = r.uleb();
    const std::uint8_t* data_end = r.p + data_length;
    for (const char* c = augmentation + 1; *c != '\0'; ++c) {
      switch (*c) {
        case 'L':
          r.fixed<std::uint8_t>();
          break;  // the LSDA's encoding: in the FDE's augmentation
        case 'P': {
          const std::uint8_t encoding = r.fixed<std::uint8_t>();
          r.encoded(encoding, data_base);
          break;
        }
        case 'R':
          cie->fde_encoding = r.fixed<std::uint8_t>();
          break;
        case 'S':
          cie->signal_frame = true;
          break;
        default:
          return false;
      }
    }
    r.p = data_end;
  } else if (augmentation[0] != '\0') {
    return false;
  }
  cie->instructions = r.p;
  return !r.bad && r.p <= cie->end;
}

// Runs call-frame instructions from `state` until the location passes `pc` (false: a rule this
// reader does not follow). `initial` is the CIE's state, for DW_CFA_restore.
bool run_instructions(const std::uint8_t* begin, const std::uint8_t* end, const Cie& cie,
                      std::uintptr_t data_base, std::uintptr_t location, std::uintptr_t pc,
                      const RegisterState& initial, RegisterState* state) {
  constexpr int kMaxRemembered = 16;
  RegisterState remembered[kMaxRemembered];
  int remembered_count = 0;
  Reader r{begin};
  auto set_offset = [&](std::uint64_t reg, std::int64_t offset) {
    if (reg == kRbp) {
      state->rbp = RegisterState::Rule::kOffset;
      state->rbp_offset = offset;
    } else if (reg == kReturnAddress) {
      state->return_address = RegisterState::Rule::kOffset;
      state->return_address_offset = offset;
    }
  };
  auto set_other = [&](std::uint64_t reg, RegisterState::Rule rule) {
    if (reg == kRbp) state->rbp = rule;
    if (reg == kReturnAddress) state->return_address = rule;
  };
  auto restore = [&](std::uint64_t reg) {
    if (reg == kRbp) {
      state->rbp = initial.rbp;
      state->rbp_offset = initial.rbp_offset;
    } else if (reg == kReturnAddress) {
      state->return_address = initial.return_address;
      state->return_address_offset = initial.return_address_offset;
    }
  };
  auto advance = [&](std::uint64_t delta) {
    location += delta * cie.code_align;
    return location <= pc;
  };
  while (r.p < end && !r.bad) {
    const std::uint8_t op = *r.p++;
    const std::uint8_t low = op & 0x3f;
    switch (op & 0xc0) {
      case 0x40:
        if (!advance(low)) return true;
        continue;
      case 0x80:
        set_offset(low, static_cast<std::int64_t>(r.uleb()) * cie.data_align);
        continue;
      case 0xc0:
        restore(low);
        continue;
      default:
        break;
    }
    switch (op) {
      case 0x00:
        break;      // nop
      case 0x01: {  // set_loc
        location = r.encoded(cie.fde_encoding, data_base);
        if (location > pc) return true;
        break;
      }
      case 0x02:
        if (!advance(r.fixed<std::uint8_t>())) return true;
        break;
      case 0x03:
        if (!advance(r.fixed<std::uint16_t>())) return true;
        break;
      case 0x04:
        if (!advance(r.fixed<std::uint32_t>())) return true;
        break;
      case 0x05: {  // offset_extended
        const std::uint64_t reg = r.uleb();
        set_offset(reg, static_cast<std::int64_t>(r.uleb()) * cie.data_align);
        break;
      }
      case 0x06:
        restore(r.uleb());
        break;
      case 0x07:
        set_other(r.uleb(), RegisterState::Rule::kUndefined);
        break;
      case 0x08:
        set_other(r.uleb(), RegisterState::Rule::kSame);
        break;
      case 0x09: {  // register: the value is in another register
        const std::uint64_t reg = r.uleb();
        r.uleb();
        set_other(reg, RegisterState::Rule::kOther);
        break;
      }
      case 0x0a:
        if (remembered_count == kMaxRemembered) return false;
        remembered[remembered_count++] = *state;
        break;
      case 0x0b:
        if (remembered_count == 0) return false;
        *state = remembered[--remembered_count];
        break;
      case 0x0c:  // def_cfa
        state->cfa_register = r.uleb();
        state->cfa_offset = static_cast<std::int64_t>(r.uleb());
        state->cfa_is_expression = false;
        break;
      case 0x0d:
        state->cfa_register = r.uleb();
        break;
      case 0x0e:
        state->cfa_offset = static_cast<std::int64_t>(r.uleb());
        break;
      case 0x0f: {  // def_cfa_expression
        const std::uint64_t length = r.uleb();
        r.p += length;
        state->cfa_is_expression = true;
        break;
      }
      case 0x10:    // expression
      case 0x16: {  // val_expression
        const std::uint64_t reg = r.uleb();
        r.p += r.uleb();
        set_other(reg, RegisterState::Rule::kOther);
        break;
      }
      case 0x11: {  // offset_extended_sf
        const std::uint64_t reg = r.uleb();
        set_offset(reg, r.sleb() * cie.data_align);
        break;
      }
      case 0x12:  // def_cfa_sf
        state->cfa_register = r.uleb();
        state->cfa_offset = r.sleb() * cie.data_align;
        state->cfa_is_expression = false;
        break;
      case 0x13:
        state->cfa_offset = r.sleb() * cie.data_align;
        break;
      case 0x14:    // val_offset
      case 0x15: {  // val_offset_sf
        const std::uint64_t reg = r.uleb();
        if (op == 0x14)
          r.uleb();
        else
          r.sleb();
        set_other(reg, RegisterState::Rule::kOther);
        break;
      }
      case 0x2e:
        r.uleb();
        break;      // GNU_args_size
      case 0x2f: {  // GNU_negative_offset_extended
        const std::uint64_t reg = r.uleb();
        set_offset(reg, -static_cast<std::int64_t>(r.uleb()) * cie.data_align);
        break;
      }
      default:
        return false;
    }
  }
  return !r.bad;
}

FrameRule rule_of(const RegisterState& state) {
  FrameRule rule;
  if (state.return_address == RegisterState::Rule::kUndefined) {
    rule.kind = FrameRule::Kind::kOutermost;
    return rule;
  }
  if (state.cfa_is_expression || (state.cfa_register != kRsp && state.cfa_register != kRbp))
    return rule;
  if (state.return_address != RegisterState::Rule::kOffset || state.return_address_offset != -8)
    return rule;
  if (state.rbp != RegisterState::Rule::kSame && state.rbp != RegisterState::Rule::kOffset)
    return rule;
  constexpr std::int64_t kLimit = std::int64_t{1} << 30;
  if (state.cfa_offset < -kLimit || state.cfa_offset > kLimit) return rule;
  if (state.rbp_offset < -kLimit || state.rbp_offset > kLimit) return rule;
  rule.kind = FrameRule::Kind::kStep;
  rule.cfa_from_rbp = state.cfa_register == kRbp;
  rule.cfa_offset = static_cast<std::int32_t>(state.cfa_offset);
  rule.rbp_saved = state.rbp == RegisterState::Rule::kOffset;
  rule.rbp_offset = static_cast<std::int32_t>(state.rbp_offset);
  return rule;
}

// The function (its FDE) of the rule found last on this thread: a function allocating from many
// call sites (a static initializer registering hundreds of operators) meets each of its return
// addresses for the first time one after another, and each was a walk of the loaded objects and a
// search of the object's index. Valid for one generation of the rule table (fast_unwind.h): an
// unload starts a new one. The FDE is read without the loader's lock: `pc` is a return address of
// this thread's stack, in an object the thread is running in.
struct LastFunction {
  std::uint64_t generation = ~std::uint64_t{0};
  std::uintptr_t begin = 0, end = 0;
  const std::uint8_t* fde = nullptr;
  std::uintptr_t data_base = 0;
};
__thread LastFunction t_last __attribute__((tls_model("initial-exec")));

// The rule at `pc` from the FDE at `fde` (of the object whose .eh_frame_hdr is at `data_base`);
// sets `*function` to the range of code the FDE covers (empty if it cannot be read).
FrameRule rule_from_fde(const std::uint8_t* fde, std::uintptr_t data_base, std::uintptr_t pc,
                        LastFunction* function) {
  const FrameRule unsupported;
  function->begin = function->end = 0;
  Reader f{fde};
  const auto length = f.fixed<std::uint32_t>();
  if (length == 0 || length == 0xffffffffu) return unsupported;
  const std::uint8_t* fde_end = f.p + length;
  const std::uint8_t* cie_pointer = f.p;
  const auto cie_offset = f.fixed<std::uint32_t>();
  Cie cie;
  if (cie_offset == 0 || !read_cie(cie_pointer - cie_offset, data_base, &cie)) return unsupported;
  if (cie.signal_frame) return unsupported;
  const std::uintptr_t begin = f.encoded(cie.fde_encoding, data_base);
  const std::uintptr_t range = f.encoded(cie.fde_encoding & kFormatMask, data_base);
  if (f.bad || pc < begin || pc - begin >= range) return unsupported;
  function->begin = begin;
  function->end = begin + range;
  function->fde = fde;
  function->data_base = data_base;
  if (cie.augmented) {
    const std::uint64_t data_length = f.uleb();
    f.p += data_length;
  }
  if (f.bad || f.p > fde_end) return unsupported;

  RegisterState initial;
  initial.cfa_offset = 0;
  // Before the CIE's own instructions nothing is defined; GCC's CIEs define the CFA and the return
  // address in them.
  initial.return_address = RegisterState::Rule::kSame;
  if (!run_instructions(cie.instructions, cie.end, cie, data_base, begin, ~std::uintptr_t{0},
                        initial, &initial)) {
    return unsupported;
  }
  RegisterState state = initial;
  if (!run_instructions(f.p, fde_end, cie, data_base, begin, pc, initial, &state))
    return unsupported;
  return rule_of(state);
}

// The FDE whose code may hold `pc` in the object's index at `header`, or null.
const std::uint8_t* find_fde(const std::uint8_t* header, std::uintptr_t pc) {
  const auto data_base = reinterpret_cast<std::uintptr_t>(header);
  if (header[0] != 1 || header[3] != kDataRelativeSigned4) return nullptr;
  Reader r{header + 4};
  r.encoded(header[1], data_base);  // .eh_frame's address: the index below is enough
  const std::uintptr_t count = r.encoded(header[2], data_base);
  if (r.bad || count == 0) return nullptr;
  // The last entry whose start is at or below pc.
  struct Entry {
    std::int32_t start;
    std::int32_t fde;
  };
  const auto* table = reinterpret_cast<const Entry*>(r.p);
  std::uintptr_t low = 0, high = count;
  while (high - low > 1) {
    const std::uintptr_t middle = low + (high - low) / 2;
    if (data_base + static_cast<std::intptr_t>(table[middle].start) <= pc) {
      low = middle;
    } else {
      high = middle;
    }
  }
  if (data_base + static_cast<std::intptr_t>(table[low].start) > pc) return nullptr;
  return reinterpret_cast<const std::uint8_t*>(data_base +
                                               static_cast<std::intptr_t>(table[low].fde));
}

FrameRule rule_from_header(const std::uint8_t* header, std::uintptr_t pc, LastFunction* function) {
  function->begin = function->end = 0;
  const std::uint8_t* fde = find_fde(header, pc);
  if (fde == nullptr) return FrameRule{};
  return rule_from_fde(fde, reinterpret_cast<std::uintptr_t>(header), pc, function);
}

struct Search {
  std::uintptr_t pc;
  FrameRule rule;
  LastFunction function;
};

int search_object(dl_phdr_info* info, std::size_t, void* arg) {
  auto* search = static_cast<Search*>(arg);
  if (!object_holds(info, search->pc)) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type != PT_GNU_EH_FRAME) continue;
    const auto* header =
        reinterpret_cast<const std::uint8_t*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    search->rule = rule_from_header(header, search->pc, &search->function);
    break;
  }
  return 1;
}

}  // namespace

FrameRule frame_rule_from_header(const std::uint8_t* header, std::uintptr_t pc) {
  LastFunction function;
  return rule_from_header(header, pc, &function);
}

FrameRule find_frame_rule(std::uintptr_t pc, std::uint64_t generation) {
  LastFunction& last = t_last;
  if (last.generation == generation && pc >= last.begin && pc < last.end) {
    LastFunction again;
    return rule_from_fde(last.fde, last.data_base, pc, &again);
  }
  Search search{pc, FrameRule{}, {}};
  unwinder_iterate_objects(search_object, &search);
  if (search.function.end > search.function.begin) {
    last = search.function;
    last.generation = generation;
  }
  return search.rule;
}

}  // namespace tleak::agent
