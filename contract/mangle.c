/* contract/mangle.c — just enough of the Itanium C++ ABI's mangling to
 * read a kernel's parameter types from a name like _Z6vecaddPKfS0_Pfi
 * (vecadd(const float*, const float*, float*, int)), so that lint can tell
 * a contract that declares a float tensor with a smaller format. Only plain
 * function names with builtin, pointer, const and substitution components
 * are read; anything else stops the walk (the answer is then "unknown"). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "contract.h"

enum { MAX_SUBS = 32, MAX_PARAMS = 64 };

struct walk {
  const char *s;
  /* Substitution candidates: the pointee size of each (0: not a float). */
  int subs_ptr[MAX_SUBS];  /* 1: the candidate is a pointer type */
  int subs_size[MAX_SUBS]; /* float size of the candidate (or of its pointee) */
  int nsubs;
};

static void add_sub(struct walk *w, int is_ptr, int size) {
  if (w->nsubs < MAX_SUBS) w->subs_ptr[w->nsubs] = is_ptr, w->subs_size[w->nsubs++] = size;
}

/* One type at w->s. Returns 0 and sets *is_ptr and *size (float size of the
 * type, or of the pointee for a pointer), or -1 when the grammar is beyond
 * this reader. */
static int type(struct walk *w, int *is_ptr, int *size) {
  const char *s = w->s;
  switch (*s) {
  case 'f': w->s++, *is_ptr = 0, *size = 4; return 0;
  case 'd': w->s++, *is_ptr = 0, *size = 8; return 0;
  case 'v':
  case 'b':
  case 'c':
  case 'a':
  case 'h':
  case 's':
  case 't':
  case 'i':
  case 'j':
  case 'l':
  case 'm':
  case 'x':
  case 'y': w->s++, *is_ptr = 0, *size = 0; return 0;
  case 'K':
  case 'V': {
    w->s++;
    int p, z;
    if (type(w, &p, &z)) return -1;
    add_sub(w, p, z);
    *is_ptr = p, *size = z;
    return 0;
  }
  case 'P': {
    w->s++;
    int p, z;
    if (type(w, &p, &z)) return -1;
    if (p) z = 0; /* pointer to pointer: not a tensor of floats */
    add_sub(w, 1, z);
    *is_ptr = 1, *size = z;
    return 0;
  }
  case 'S': {
    /* S_ is candidate 0, S<base-36 n>_ candidate n + 1. */
    const char *q = s + 1;
    int idx = 0;
    if (*q == '_') {
      idx = 0;
    } else {
      int v = 0;
      while (isdigit((unsigned char)*q) || isupper((unsigned char)*q)) {
        v = v * 36 + (isdigit((unsigned char)*q) ? *q - '0' : *q - 'A' + 10), q++;
        /* more digits only make it larger: no candidate has that index
         * (and v * 36 cannot overflow while v < nsubs) */
        if (v + 1 >= w->nsubs) return -1;
      }
      if (*q != '_') return -1;
      idx = v + 1;
    }
    if (idx >= w->nsubs) return -1;
    w->s = q + 1;
    *is_ptr = w->subs_ptr[idx], *size = w->subs_size[idx];
    return 0;
  }
  default:
    if (isdigit((unsigned char)*s)) { /* a class name: __half, __nv_bfloat16 */
      char *end;
      long n = strtol(s, &end, 10);
      if (n <= 0 || (long)strlen(end) < n) return -1;
      int z =
          (n == 6 && !strncmp(end, "__half", 6)) || (n == 13 && !strncmp(end, "__nv_bfloat16", 13))
              ? 2
              : 0;
      w->s = end + n;
      add_sub(w, 0, z);
      *is_ptr = 0, *size = z;
      return 0;
    }
    return -1;
  }
}

int kc_contract_mangled_float_pointee(const char *mangled, int idx) {
  if (!mangled || strncmp(mangled, "_Z", 2) || !isdigit((unsigned char)mangled[2])) return 0;
  char *end;
  long n = strtol(mangled + 2, &end, 10);
  if (n <= 0 || (long)strlen(end) < n) return 0;
  struct walk w = {.s = end + n};
  for (int i = 0; *w.s && i < MAX_PARAMS; i++) {
    int p = 0, z = 0;
    if (type(&w, &p, &z)) return 0;
    if (i == idx) return p ? z : 0;
  }
  return 0;
}
