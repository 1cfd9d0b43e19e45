/* test/dlsym/next_main.c — prints kc_test_hello(4): 41 when RTLD_NEXT
 * resolves from the caller (next_a) to next_b, as glibc defines it; and
 * checks dlvsym and RTLD_DEFAULT lookups of non-CUDA names still work. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int kc_test_hello(int x);

int main(void) {
  int v = kc_test_hello(4);
  void *p = dlsym(RTLD_DEFAULT, "strlen");
  void *q = dlvsym(RTLD_DEFAULT, "strlen", "GLIBC_2.2.5");
  printf("hello=%d default=%d versioned=%d\n", v, p == (void *)strlen, q != NULL);
  return v == 41 && p == (void *)strlen && q ? 0 : 1;
}
