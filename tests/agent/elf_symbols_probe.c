/* A shared object for elf_symbols_test.cc, built twice: with GNU and with SysV hash tables
 * (TLEAK_PROBE_VALUE tells the two apart). Each has a function in two versions, of which only the
 * default one may be found by name; and tleak_elf_hidden_first, which the GNU one (loaded first)
 * defines only in a version that is not the default, and the SysV one in its default version. */
int TLEAK_PROBE_NAME(void) { return TLEAK_PROBE_VALUE; }

int tleak_elf_versioned_old(void) { return 1; }
int tleak_elf_versioned_new(void) { return 2; }
__asm__(".symver tleak_elf_versioned_old, tleak_elf_versioned@TLEAK_ELF_1");
__asm__(".symver tleak_elf_versioned_new, tleak_elf_versioned@@TLEAK_ELF_2");

#if TLEAK_PROBE_VALUE == 41
int tleak_elf_hidden_first_old(void) { return 1; }
__asm__(".symver tleak_elf_hidden_first_old, tleak_elf_hidden_first@TLEAK_ELF_1");
#else
int tleak_elf_hidden_first(void) { return TLEAK_PROBE_VALUE; }
#endif
