/* For the test programs whose exit scan is held to memcheck's figures (exit_call.c, signal_exit.c,
 * aborted.cc; C and C++ alike):
 * a lost node and the child only it points to, made in a call of their own, and a call that clears
 * the stack below, so that no pointer to either survives in the caller's frame or registers. */
#pragma once

#include <stdlib.h>
#include <string.h>

/* 168 B lost in 2 blocks: a 123 B node (LOST, definitely lost) and its 45 B child (CHILD,
 * indirectly lost). */
__attribute__((noinline)) static void lose_node(void) {
  char** volatile node = (char**)malloc(123); /* LOST */
  memset(node, 0, 123);
  node[0] = (char*)malloc(45); /* CHILD */
  memset(node[0], 2, 45);
}

__attribute__((noinline)) static void scrub_stack(void) {
  volatile char junk[16384];
  memset((char*)junk, 0, sizeof junk);
}
