/* test/dlsym/next_b.c — the definition next_a.c must reach via RTLD_NEXT. */
int kc_test_hello(int x);
int kc_test_hello(int x) { return 10 * x; }
