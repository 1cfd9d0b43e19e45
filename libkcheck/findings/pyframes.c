/* libkcheck/findings/pyframes.c — this thread's Python frames without the
 * GIL (pyframes.h). Offsets are CPython's own (Include/cpython/pystate.h,
 * Include/internal/pycore_frame.h, Include/cpython/code.h (3.10:
 * Include/cpython/frameobject.h) and
 * unicodeobject.h of each version), checked for 3.11 with offsetof against
 * the installed headers. Nothing here takes a reference, allocates or
 * calls the interpreter except PyUnstable_InterpreterFrame_GetLine (3.12+)
 * and PyCode_Addr2Line, which only read the code's line table. */
#include "pyframes.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

struct layout {
  long ts_cframe;  /* tstate -> _PyCFrame * (3.11, 3.12), else -1 */
  long cf_frame;   /* _PyCFrame -> current frame */
  long ts_frame;   /* tstate -> current frame (3.13+), else -1 */
  long fr_code;    /* frame -> code object (3.14: a tagged stack reference) */
  long fr_prev;    /* frame -> the caller's frame */
  long fr_instr;   /* frame -> instruction pointer */
  long fr_owner;   /* frame -> owner (char) */
  int shim_owner;  /* owner of the C stack's entry frames (3.12+), else -1 */
  long co_code;    /* code -> its first instruction (3.11's line), else 0 */
  long ascii_size; /* sizeof(PyASCIIObject): a compact ASCII string's text */
  long utf8;       /* PyCompactUnicodeObject.utf8 */
  long co_file;    /* code -> co_filename (co_name follows it) */
};

/* 3.10: tstate->frame, a PyFrameObject: f_back, f_code, f_lasti (with
 * f_lineno: an identity), no owner (a byte of f_trace_lines is read) */
static const struct layout L310 = {-1, 0, 24, 32, 24, 96, 84, -1, 0, 48, 56, 104};
static const struct layout L311 = {56, 8, -1, 32, 48, 56, 69, -1, 184, 48, 56, 112};
static const struct layout L312 = {56, 0, -1, 0, 8, 56, 70, 3, 0, 40, 48, 112};
static const struct layout L313 = {-1, 0, 72, 0, 8, 56, 70, 3, 0, 40, 48, 112};
static const struct layout L314 = {-1, 0, 72, 0, 8, 56, 74, 3, 0, 40, 48, 112};

#define OB_TYPE 8 /* PyObject_HEAD: refcount, type (not in free-threaded builds) */
#define STR_LENGTH 16
#define STR_STATE 32
#define STATE_COMPACT (1u << 5)
#define STATE_ASCII (1u << 6)

static struct {
  const struct layout *l;
  uintptr_t code_type, str_type, tag_mask;
  int (*frame_line)(void *);     /* PyUnstable_InterpreterFrame_GetLine */
  int (*addr2line)(void *, int); /* PyCode_Addr2Line */
  const char *why;               /* why no frames can be read */
} py;
static pthread_once_t once = PTHREAD_ONCE_INIT;
/* 0 not yet validated, 1 validated (direct reads), -1 failed (py.why) */
static atomic_int state;
static pthread_mutex_t validating = PTHREAD_MUTEX_INITIALIZER;
static int py_minor;
/* walks made, and those of them made with reads that cannot fault */
static atomic_long walks, checked_walks;

static void lookup(void) {
  const char *(*version)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
  const char *v = version ? version() : NULL;
  int major = 0, minor = 0;
  if (!v || sscanf(v, "%d.%d", &major, &minor) != 2) {
    py.why = "no Python interpreter version found";
    return;
  }
  py_minor = minor;
  if (major == 3 && minor == 10) py.l = &L310;
  if (major == 3 && minor == 11) py.l = &L311;
  if (major == 3 && minor == 12) py.l = &L312;
  if (major == 3 && minor == 13) py.l = &L313;
  if (major == 3 && minor == 14) py.l = &L314;
  py.tag_mask = minor >= 14 ? ~(uintptr_t)3 : ~(uintptr_t)0; /* _PyStackRef's tag bits */
  py.code_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
  py.str_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyUnicode_Type");
  /* 3.10's frames are frame objects, whose line needs no GIL either */
  py.frame_line = (int (*)(void *))dlsym(
      RTLD_DEFAULT, minor == 10 ? "PyFrame_GetLineNumber" : "PyUnstable_InterpreterFrame_GetLine");
  py.addr2line = (int (*)(void *, int))dlsym(RTLD_DEFAULT, "PyCode_Addr2Line");
  if (!py.l)
    py.why = "this Python version's frames cannot be read without the GIL (3.10 to 3.14 can)";
  else if (!py.code_type || !py.str_type || (py.l->co_code ? !py.addr2line : !py.frame_line))
    py.why = "the interpreter does not export what reading its frames needs";
  if (py.why) py.l = NULL;
}

/* Copies n bytes at src; the process's first read faults nowhere (the
 * kernel copies, and says EFAULT where the layout was wrong). */
static int no_safe_reads;         /* neither way below works here */
static int pipe_fd[2] = {-1, -1}; /* open only while the first read is checked */
static int rd(void *dst, uintptr_t src, size_t n, int safe) {
  if (!src) return 0;
  if (!safe) {
    memcpy(dst, (const void *)src, n);
    return 1;
  }
  struct iovec local = {dst, n}, remote = {(void *)src, n};
  if (pipe_fd[0] < 0) {
    if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)n) return 1;
    if (errno != EPERM && errno != ENOSYS) return 0;
    /* a seccomp filter refuses it: the kernel copying into a pipe faults
     * nowhere either (write says EFAULT) */
    if (pipe2(pipe_fd, O_CLOEXEC | O_NONBLOCK)) {
      no_safe_reads = 1;
      return 0;
    }
  }
  if (write(pipe_fd[1], (const void *)src, n) != (ssize_t)n) return 0;
  return read(pipe_fd[0], dst, n) == (ssize_t)n;
}

static int rd_word(uintptr_t *w, uintptr_t src, int safe) { return rd(w, src, sizeof *w, safe); }

/* An object of type t at o (its type word read). */
static int is_type(uintptr_t o, uintptr_t t, int safe) {
  uintptr_t ty = 0;
  return o && rd_word(&ty, o + OB_TYPE, safe) && ty == t;
}

/* A str's UTF-8 text into out: compact ASCII strings (every file and
 * function name in practice) hold it inline; others only where CPython
 * already cached their UTF-8. */
static void str_text(uintptr_t s, char *out, size_t n, int safe) {
  out[0] = 0;
  unsigned st = 0;
  uintptr_t len = 0, text = 0;
  if (!is_type(s, py.str_type, safe) || !rd(&st, s + STR_STATE, sizeof st, safe) ||
      !(st & STATE_COMPACT))
    return;
  if (st & STATE_ASCII) {
    if (!rd_word(&len, s + STR_LENGTH, safe)) return;
    text = s + (uintptr_t)py.l->ascii_size;
  } else if (!rd_word(&text, s + (uintptr_t)py.l->utf8, safe) || !text ||
             !rd_word(&len, s + (uintptr_t)py.l->ascii_size, safe)) {
    return;
  }
  if (len >= n) len = n - 1;
  if (rd(out, text, len, safe)) out[len] = 0;
}

/* The C stack of this thread: 3.11/3.12 keep the current _PyCFrame there
 * (a local of the eval loop) or inside the thread state. */
static __thread uintptr_t stack_lo, stack_hi;
static int on_own_stack(uintptr_t p) {
  if (!stack_hi) {
    pthread_attr_t a;
    void *lo = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &a)) return 0;
    if (!pthread_attr_getstack(&a, &lo, &size)) {
      stack_lo = (uintptr_t)lo;
      stack_hi = stack_lo + size;
    }
    pthread_attr_destroy(&a);
  }
  return p >= stack_lo && p < stack_hi;
}

/* A frame's identity into a running key. */
static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

/* Frames into out (names and lines when full), or, with out NULL, each
 * frame's code and instruction into *key. */
static int walk(uintptr_t ts, struct kc_pyframe *out, int max, int full, int safe, const char **why,
                uint64_t *key) {
  const struct layout *l = py.l;
  uintptr_t f = 0;
  if (l->ts_cframe >= 0) {
    uintptr_t cf = 0;
    if (!rd_word(&cf, ts + (uintptr_t)l->ts_cframe, safe)) goto bad;
    if (!cf) return 0;
    if (!on_own_stack(cf) && (cf < ts || cf >= ts + 4096)) goto bad;
    if (!rd_word(&f, cf + (uintptr_t)l->cf_frame, safe)) goto bad;
  } else if (!rd_word(&f, ts + (uintptr_t)l->ts_frame, safe)) {
    goto bad;
  }
  int n = 0;
  for (int depth = 0; f && n < max && depth < 4 * max; depth++) {
    uintptr_t code = 0, instr = 0, prev = 0;
    char owner = 0;
    if (!rd_word(&code, f + (uintptr_t)l->fr_code, safe) ||
        !rd(&owner, f + (uintptr_t)l->fr_owner, 1, safe) ||
        !rd_word(&instr, f + (uintptr_t)l->fr_instr, safe) ||
        !rd_word(&prev, f + (uintptr_t)l->fr_prev, safe))
      goto bad;
    code &= py.tag_mask;
    if (l->shim_owner < 0 || owner != l->shim_owner) { /* not a C stack's entry frame */
      if (!is_type(code, py.code_type, safe)) goto bad;
      if (!out) {
        *key = mix(mix(*key, code), instr);
        n++;
        f = prev;
        continue;
      }
      struct kc_pyframe *o = &out[n++];
      o->code = code;
      o->instr = instr;
      o->line = 0;
      o->file[0] = o->func[0] = 0;
      if (full) {
        uintptr_t name = 0, file = 0;
        uintptr_t co_file = code + (uintptr_t)l->co_file;
        if (rd_word(&file, co_file, safe)) str_text(file, o->file, sizeof o->file, safe);
        if (rd_word(&name, co_file + 8, safe)) str_text(name, o->func, sizeof o->func, safe);
        /* the line of the instruction the frame is in (a call) */
        if (l->co_code)
          o->line =
              py.addr2line((void *)code, (int)((intptr_t)instr - (intptr_t)(code + l->co_code)));
        else
          o->line = py.frame_line((void *)f);
      }
    }
    f = prev;
  }
  return n;
bad:
  *why = "this Python's frames are not laid out as kcheck reads them (read without the GIL)";
  return -1;
}

int kc_pyframes_read(void *tstate, struct kc_pyframe *out, int max, int full, const char **why) {
  (void)pthread_once(&once, lookup);
  if (!py.l) {
    *why = py.why;
    return -1;
  }
  int s = atomic_load_explicit(&state, memory_order_acquire);
  if (s < 0) {
    *why = py.why;
    return -1;
  }
  atomic_fetch_add_explicit(&walks, 1, memory_order_relaxed);
  if (s > 0) return walk((uintptr_t)tstate, out, max, full, 0, why, NULL);
  atomic_fetch_add_explicit(&checked_walks, 1, memory_order_relaxed);
  /* The first frames of the process: read with reads that cannot fault,
   * every frame's code checked; a layout that passes is read directly
   * from then on. A thread without frames decides nothing. */
  pthread_mutex_lock(&validating);
  int n = walk((uintptr_t)tstate, out, max, 1, 1, why, NULL);
  for (int i = 0; i < 2; i++)
    if (pipe_fd[i] >= 0) close(pipe_fd[i]), pipe_fd[i] = -1;
  if (n < 0 && atomic_load(&state) == 0) {
    if (no_safe_reads)
      *why = "process_vm_readv is refused here, so the first frames cannot be "
             "read safely (read without the GIL)";
    py.why = *why;
    atomic_store_explicit(&state, -1, memory_order_release);
  } else if (n > 0) { /* every frame's code object checked on the way */
    atomic_store_explicit(&state, 1, memory_order_release);
  }
  pthread_mutex_unlock(&validating);
  return n;
}

int kc_pyframes_key(void *tstate, uint64_t *key, const char **why) {
  (void)pthread_once(&once, lookup);
  if (!py.l || atomic_load_explicit(&state, memory_order_acquire) < 0) {
    *why = py.why;
    return -1;
  }
  if (atomic_load_explicit(&state, memory_order_acquire) == 0) {
    /* the first read (checked) takes names: it needs a few frames' room */
    struct kc_pyframe *fr = malloc(16 * sizeof *fr);
    int n = fr ? kc_pyframes_read(tstate, fr, 16, 1, why) : -1;
    free(fr);
    if (n < 0 || atomic_load(&state) <= 0) return n < 0 ? -1 : 0;
  }
  atomic_fetch_add_explicit(&walks, 1, memory_order_relaxed);
  return walk((uintptr_t)tstate, NULL, 64, 0, 0, why, key);
}

json_t *kc_pyframes_summary(void) {
  long n = atomic_load(&walks);
  if (!n) return NULL; /* no thread ever reached kcheck without the GIL */
  int s = atomic_load(&state);
  char layout[16];
  snprintf(layout, sizeof layout, "3.%d", py_minor);
  json_t *o =
      json_pack("{s:s, s:s, s:I, s:I}", "layout", py.l ? layout : "none", "state",
                s > 0   ? "checked"
                : s < 0 ? "refused"
                        : "unchecked",
                "reads", (json_int_t)n, "checked_reads", (json_int_t)atomic_load(&checked_walks));
  if (o && s < 0 && py.why) json_object_set_new(o, "why", json_string(py.why));
  return o;
}
