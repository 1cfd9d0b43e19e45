/* test/apps/atexit_lib.c — a shared library of app_atexit's with exit work
 * of its own (an ELF destructor and an atexit handler registered from its
 * constructor). The dynamic linker finalises it after libkcheck (neither
 * depends on the other), so exitcode=N must not end the process in
 * libkcheck's own destructor. */
#include <stdio.h>
#include <stdlib.h>

static void lib_handler(void) { printf("app_atexit: library's atexit handler ran\n"); }

__attribute__((constructor)) static void lib_ctor(void) { atexit(lib_handler); }
__attribute__((destructor)) static void lib_dtor(void) {
  /* Buffered on purpose, as the application's own lines. */
  printf("app_atexit: library destructor ran\n");
}

/* Called by the application, so the link keeps the library. */
int atexit_lib_loaded(void);
int atexit_lib_loaded(void) { return 1; }
