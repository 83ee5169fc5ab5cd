/* Iteration marks and snapshots for a program diagnosed with `tleak run -- PROGRAM`.
 *
 * Include this header and call tleak_mark_iteration() at the end of each turn of the loop whose
 * memory you want judged, and tleak_snapshot("name") wherever a full report of the live heap
 * helps. Nothing to link: the functions are inline and call into tleak's agent only when the
 * agent is loaded (weak references resolve to null otherwise), so the same binary runs unchanged,
 * at the cost of one branch per call, without tleak.
 *
 *   #include <tleak/marks.h>
 *   int main(void) {
 *     for (int step = 0; step < 100; ++step) {
 *       train_step();
 *       tleak_mark_iteration();
 *     }
 *     tleak_snapshot("after-training");
 *     return 0;
 *   }
 *
 * C and C++ alike; thread-safe; never allocates through the program's malloc.
 */
#ifndef TLEAK_MARKS_H
#define TLEAK_MARKS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Defined by libtleak_preload.so; null when it is not loaded. */
void tleak_agent_mark_iteration(void) __attribute__((weak));
void tleak_agent_snapshot(const char* name) __attribute__((weak));
int tleak_agent_recording(void) __attribute__((weak));

/* One iteration of the program's loop is over: tleak samples every site's live bytes here. */
static inline void tleak_mark_iteration(void) {
  if (tleak_agent_mark_iteration) tleak_agent_mark_iteration();
}

/* Writes a full report of the live heap now, named NAME (at most 255 bytes; letters, digits, '-',
 * '_' and '.' keep the file name as given), next to the final report. */
static inline void tleak_snapshot(const char* name) {
  if (tleak_agent_snapshot) tleak_agent_snapshot(name);
}

/* Whether tleak records this process. (Not a child it forked or started: those inherit the agent
 * but are not recorded.) */
static inline int tleak_attached(void) { return tleak_agent_recording != 0 && tleak_agent_recording(); }

#ifdef __cplusplus
}
#endif

#endif /* TLEAK_MARKS_H */
