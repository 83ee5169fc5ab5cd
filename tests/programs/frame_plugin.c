/* Built twice, with FRAME_BYTES 8 and 104: two plugins whose plugin_make has the same code, at the
 * same offsets, byte for byte but for two immediates, and a frame of another size (its CFA is rsp +
 * 16 in one and rsp + 112 in the other, at the return address of its call of malloc).
 * plugin_swap.c loads them in turn at the same address. Written in assembly so that every compiler
 * makes the same code (a C version came out of clang with another layout in each build). */

#define TEXT(x) #x
#define STRING(x) TEXT(x)

__asm__(
    "  .text\n"
    "  .globl plugin_make\n"
    "  .type plugin_make, @function\n"
    "plugin_make:\n" /* void* plugin_make(size_t size): malloc(size) from a frame of FRAME_BYTES */
    "  .cfi_startproc\n"
    "  subq $" STRING(FRAME_BYTES) ", %rsp\n"
    "  .cfi_adjust_cfa_offset " STRING(FRAME_BYTES) "\n"
    /* The frame zeroed: read with the other plugin's rule, a return address would be a 0 here. */
    "  movq %rdi, %rdx\n"
    "  movq %rsp, %rdi\n"
    "  movl $(" STRING(FRAME_BYTES) " / 8), %ecx\n"
    "  xorl %eax, %eax\n"
    "  rep stosq\n"
    "  movq %rdx, %rdi\n"
    "  call malloc@PLT\n"
    "  addq $" STRING(FRAME_BYTES) ", %rsp\n"
    "  .cfi_adjust_cfa_offset -" STRING(FRAME_BYTES) "\n"
    "  ret\n"
    "  .cfi_endproc\n"
    "  .size plugin_make, .-plugin_make\n");
