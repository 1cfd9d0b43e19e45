/* test/dlsym/next_a.c — interposes kc_test_hello and finds the next
 * definition with dlsym(RTLD_NEXT). If a dlsym wrapper answered RTLD_NEXT
 * relative to itself, this would find itself and recurse. */
#include <dlfcn.h>

int kc_test_hello(int x);
int kc_test_hello(int x) {
  static __thread int depth;
  if (++depth > 2) return -1000; /* recursion: RTLD_NEXT was broken */
  int (*next)(int) = (int (*)(int))dlsym(RTLD_NEXT, "kc_test_hello");
  int r = next ? next(x) + 1 : -2000;
  depth--;
  return r;
}
