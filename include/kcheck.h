/* kcheck.h — kcheck's public C API (version 1). Programs may call these
 * when libkcheck.so is loaded; look them up with dlsym(RTLD_DEFAULT, ...)
 * to stay runnable without kcheck. */
#ifndef KCHECK_H
#define KCHECK_H

#ifdef __cplusplus
extern "C" {
#endif

#define KCHECK_API_VERSION 1

/* The library's version string, e.g. "0.1.0". */
const char *kcheck_version(void);
/* Prints the KCHECK_OPTIONS table to stderr. */
void kcheck_print_options(void);
/* Prints the gate registry (id, severity, contract) to stderr. */
void kcheck_print_gates(void);

#ifdef __cplusplus
}
#endif

#endif
