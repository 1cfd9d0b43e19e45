/* bench/pyframes_read.c — the cost of one read of the calling thread's
 * Python frames without the GIL (libkcheck/findings/pyframes.c, compiled
 * in by bench/python_frames_cpu.py): called through ctypes, which releases
 * the GIL as PyTorch's bindings do. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "pyframes.h"

/* ns per read over n reads: full (names and lines, as a finding or a
 * trace=2 record takes them) or the reuse key of a tracked operation;
 * -1 when the frames cannot be read. */
double pyframes_bench(int n, int full) {
  void *(*this_ts)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
  struct kc_pyframe *fr = malloc(64 * sizeof *fr);
  const char *why = NULL;
  uint64_t key = 0;
  if (!this_ts || !fr || kc_pyframes_read(this_ts(), fr, 64, 1, &why) < 0) return -1;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < n; i++)
    if ((full ? kc_pyframes_read(this_ts(), fr, 64, 1, &why)
              : kc_pyframes_key(this_ts(), &key, &why)) < 0)
      return -1;
  clock_gettime(CLOCK_MONOTONIC, &b);
  free(fr);
  return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n;
}
