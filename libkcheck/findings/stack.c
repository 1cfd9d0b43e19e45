/* libkcheck/findings/stack.c — stacks for violations and trace=2 launches. The
 * Python frames come from the interpreter already loaded in the process
 * (dlsym at run time), and only when this thread holds the GIL. */
#include "stack.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "options.h"
#include "prof.h"
#include "pyframes.h"
#include "report.h"
#include "stack_snap.h"
#include "symbolize.h"
#include "world.h"

#define MAX_FRAMES 64

/* _dl_find_object (glibc 2.35+): the object holding an address without
 * dladdr's walk over its symbol table, which for the largest libraries
 * (libtorch_cuda) costs a millisecond a frame. Looked up at run time so
 * libkcheck still loads on an older glibc. */
typedef int (*find_object_fn)(void *, struct dl_find_object *);
static find_object_fn find_object;
static pthread_once_t find_once = PTHREAD_ONCE_INIT;
static char main_path[4096] = "<main>"; /* the executable's l_name is "" */
static void find_lookup(void) {
  find_object = (find_object_fn)dlsym(RTLD_DEFAULT, "_dl_find_object");
  ssize_t n = readlink("/proc/self/exe", main_path, sizeof main_path - 1);
  if (n > 0)
    main_path[n] = 0;
  else
    snprintf(main_path, sizeof main_path, "<main>");
}

/* The module and offset of ip; 0 when unknown. */
static int module_of(unw_word_t ip, int symbols, const char **module, unsigned long long *moff) {
  if (!symbols && find_object) {
    struct dl_find_object fo;
    if (find_object((void *)ip, &fo) == 0 && fo.dlfo_link_map) {
      const char *n = fo.dlfo_link_map->l_name;
      *module = n && *n ? n : main_path;
      *moff = (unsigned long long)(ip - (unw_word_t)fo.dlfo_link_map->l_addr);
      return 1;
    }
    return 0;
  }
  Dl_info info = {0};
  if (dladdr((void *)ip, &info) && info.dli_fname) {
    *module = info.dli_fname;
    *moff = (unsigned long long)(ip - (unw_word_t)info.dli_fbase);
    return 1;
  }
  return 0;
}

/* symbols: name each frame (libunwind reads the object's symbol table,
 * milliseconds a frame in large libraries); without, module and offset
 * only, which `kcheck report` can symbolise later. */
__attribute__((noinline)) static json_t *host_stack(int skip, int symbols) {
  json_t *frames = json_array();
  unw_context_t ctx;
  unw_cursor_t cur;
  if (!symbols) (void)pthread_once(&find_once, find_lookup);
  if (unw_getcontext(&ctx) || unw_init_local(&cur, &ctx)) return frames;
  for (int depth = 0; depth < MAX_FRAMES + skip && unw_step(&cur) > 0; depth++) {
    if (depth < skip) continue;
    unw_word_t ip = 0, off = 0;
    unw_get_reg(&cur, UNW_REG_IP, &ip);
    char sym[256] = "";
    if (symbols && unw_get_proc_name(&cur, sym, sizeof sym, &off)) sym[0] = 0;
    const char *module = "?";
    unsigned long long moff = ip;
    (void)module_of(ip, symbols, &module, &moff);
    char offs[32];
    snprintf(offs, sizeof offs, "0x%llx", moff);
    /* ip: the absolute address, for symbolising to file:line (symbolize.c). */
    json_array_append_new(frames, json_pack("{s:s, s:s, s:s, s:o}", "module", module, "offset",
                                            offs, "symbol", sym, "ip", kc_json_addr((uint64_t)ip)));
  }
  return frames;
}

/* The part of CPython's stable C API used here. */
struct py_api {
  int (*gil_check)(void);
  void *(*get_frame)(void);    /* PyEval_GetFrame: borrowed */
  void *(*frame_code)(void *); /* PyFrame_GetCode: new ref */
  int (*frame_line)(void *);   /* PyFrame_GetLineNumber */
  void *(*frame_back)(void *); /* PyFrame_GetBack: new ref */
  void *(*getattr)(void *, const char *);
  const char *(*utf8)(void *);
  void (*decref)(void *);
  void (*err_clear)(void);
  void *(*this_thread_state)(void); /* PyGILState_GetThisThreadState */
  int (*gil_ensure)(void);          /* PyGILState_Ensure */
  void (*gil_release)(int);         /* PyGILState_Release */
  int ok;
};
static struct py_api py;
/* py is filled under the mutex and published by py_ready, so threads that
 * report at the same time never see it half written. */
static pthread_mutex_t py_mutex = PTHREAD_MUTEX_INITIALIZER;
static atomic_int py_ready;

static void py_lookup_locked(void) {
  py.gil_check = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Check");
  py.get_frame = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyEval_GetFrame");
  py.frame_code = (void *(*)(void *))dlsym(RTLD_DEFAULT, "PyFrame_GetCode");
  py.frame_line = (int (*)(void *))dlsym(RTLD_DEFAULT, "PyFrame_GetLineNumber");
  py.frame_back = (void *(*)(void *))dlsym(RTLD_DEFAULT, "PyFrame_GetBack");
  py.getattr = (void *(*)(void *, const char *))dlsym(RTLD_DEFAULT, "PyObject_GetAttrString");
  py.utf8 = (const char *(*)(void *))dlsym(RTLD_DEFAULT, "PyUnicode_AsUTF8");
  py.decref = (void (*)(void *))dlsym(RTLD_DEFAULT, "Py_DecRef");
  py.err_clear = (void (*)(void))dlsym(RTLD_DEFAULT, "PyErr_Clear");
  py.this_thread_state = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
  py.gil_ensure = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
  py.gil_release = (void (*)(int))dlsym(RTLD_DEFAULT, "PyGILState_Release");
  py.ok = py.this_thread_state && py.gil_ensure && py.gil_release && py.gil_check && py.get_frame &&
          py.frame_code && py.frame_line && py.frame_back && py.getattr && py.utf8 && py.decref &&
          py.err_clear;
}

/* Whether the interpreter's API is known; looked up until found (Python
 * may be loaded after kcheck), at every 1024th call while not. */
static int py_available(void) {
  if (atomic_load_explicit(&py_ready, memory_order_acquire)) return 1;
  /* Not (yet) a Python process: the symbols are looked up again only now
   * and then (an interpreter may be loaded later), not at every stack. */
  static atomic_uint misses;
  if (atomic_fetch_add_explicit(&misses, 1, memory_order_relaxed) % 1024) return 0;
  pthread_mutex_lock(&py_mutex);
  if (!atomic_load_explicit(&py_ready, memory_order_relaxed)) {
    py_lookup_locked();
    if (py.ok) atomic_store_explicit(&py_ready, 1, memory_order_release);
  }
  pthread_mutex_unlock(&py_mutex);
  return atomic_load_explicit(&py_ready, memory_order_acquire);
}

static void code_string(void *code, const char *attr, char *out, size_t n) {
  out[0] = 0;
  void *s = py.getattr(code, attr);
  if (!s) {
    py.err_clear();
    return;
  }
  const char *u = py.utf8(s);
  if (u)
    snprintf(out, n, "%s", u);
  else
    py.err_clear();
  py.decref(s);
}

/* A Python thread that released the GIL around this call (PyTorch's
 * bindings, ctypes, graph replay): its frames read without the GIL
 * (pyframes.h), into *frames (malloc'd, max of them) or, frames NULL,
 * into *key. 1 read (*n frames), 0 not such a thread, -1 not readable
 * (*why). */
static int py_raw(struct kc_pyframe **frames, int max, uint64_t *key, int *n, const char **why) {
  if (!py_available() || py.gil_check()) return 0;
  void *ts = py.this_thread_state();
  if (!ts) return 0;
  if (!frames) {
    *n = kc_pyframes_key(ts, key, why);
  } else {
    /* on the heap: a thread's stack may be small, and this is ~24 KiB */
    *frames = malloc((size_t)max * sizeof **frames);
    *n = *frames ? kc_pyframes_read(ts, *frames, max, 1, why) : -1;
  }
  return *n >= 0 ? 1 : -1;
}

/* Takes the GIL for walking this thread's frames where that is allowed;
 * returns 0 (why set where it helps) when the frames cannot be walked.
 * raw_why: why py_raw could not read them, where it was tried. */
static int py_enter(const char **why, int *ensured, int *state, const char *raw_why) {
  *ensured = 0;
  if (!py_available()) return 0;
  /* Frames are only safe to walk with the GIL held by this thread, or
   * (py_raw) without it by the thread itself while it is blocked here. A
   * Python thread whose frames py_raw could not read can take the GIL
   * back when python_stack=2; threads without a Python thread state
   * (autograd workers, pure C++) have no Python frames. */
  if (py.gil_check()) return 1;
  if (!py.this_thread_state()) return 0;
  if (kc_opt.python_stack < 2) {
    static __thread char buf[320];
    snprintf(buf, sizeof buf,
             "the launching thread released the GIL and %s (python_stack=2 takes it back "
             "outside checks)",
             raw_why ? raw_why : "its frames were not read");
    *why = buf;
    return 0;
  }
  /* Inside a check every other application thread may be waiting on
   * kcheck while holding the GIL: taking it would deadlock. */
  if (kc_world_exclusive_here()) {
    *why = "the launching thread released the GIL, and inside a check it is not taken back "
           "(another thread holding it may wait on kcheck)";
    return 0;
  }
  *state = py.gil_ensure();
  *ensured = 1;
  return 1;
}

static void py_leave(int ensured, int state) {
  if (ensured) py.gil_release(state);
}

/* Calls visit(frame, code, arg) for each frame, innermost first, up to
 * MAX_FRAMES; GIL held. */
static void py_walk(void (*visit)(void *, void *, void *), void *arg) {
  void *f = py.get_frame();
  int owned = 0;
  for (int depth = 0; f && depth < MAX_FRAMES; depth++) {
    void *code = py.frame_code(f);
    visit(f, code, arg);
    py.decref(code);
    void *back = py.frame_back(f);
    if (owned) py.decref(f);
    f = back;
    owned = 1;
  }
  if (f && owned) py.decref(f);
}

static void frame_to_json(void *f, void *code, void *arg) {
  char file[512], func[256];
  code_string(code, "co_filename", file, sizeof file);
  code_string(code, "co_name", func, sizeof func);
  json_array_append_new((json_t *)arg, json_pack("{s:s, s:i, s:s}", "file", file, "line",
                                                 py.frame_line(f), "function", func));
}

/* Frames read by py_raw as frame_to_json writes them. */
static json_t *raw_json(const struct kc_pyframe *fr, int n) {
  json_t *frames = json_array();
  for (int i = 0; frames && i < n; i++)
    json_array_append_new(frames, json_pack("{s:s, s:i, s:s}", "file", fr[i].file, "line",
                                            fr[i].line, "function", fr[i].func));
  return frames;
}

static json_t *python_stack(const char **why, int *without_gil) {
  int ensured, state = 0, n = 0;
  const char *raw_why = NULL;
  struct kc_pyframe *fr = NULL;
  *without_gil = 0;
  int raw = kc_opt.python_stack ? py_raw(&fr, MAX_FRAMES, NULL, &n, &raw_why) : 0;
  json_t *taken = raw > 0 ? raw_json(fr, n) : NULL;
  free(fr);
  if (raw > 0) {
    *without_gil = 1;
    return taken;
  }
  if (!py_enter(why, &ensured, &state, raw_why)) return NULL;
  json_t *frames = json_array();
  py_walk(frame_to_json, frames);
  py_leave(ensured, state);
  return frames;
}

static uint64_t mix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

static void frame_to_key(void *f, void *code, void *arg) {
  uint64_t *h = arg;
  *h = mix64(*h ^ (uint64_t)(uintptr_t)code) ^ (uint64_t)(unsigned)py.frame_line(f);
  *h = mix64(*h + 0x9e3779b97f4a7c15ull);
}

/* o's "python" frames, or "python_not_taken" saying why there are none. */
static void add_python(json_t *o) {
  const char *why = NULL;
  int without_gil = 0;
  json_t *p = kc_opt.python_stack ? python_stack(&why, &without_gil) : NULL;
  if (p) json_object_set_new(o, "python", p);
  /* read from the interpreter's structures: the thread had released the GIL */
  if (p && without_gil) json_object_set_new(o, "python_without_gil", json_true());
  /* A Python thread whose frames were not taken: say why. */
  if (!p && why) json_object_set_new(o, "python_not_taken", json_string(why));
}

/* Not inlined, so that skip counts the same frames at every optimisation
 * level: host_stack and this one, then the caller's own. */
__attribute__((noinline)) static json_t *stack_json(int skip, int symbols) {
  json_t *o = json_object();
  json_object_set_new(o, "host", host_stack(skip, symbols));
  add_python(o);
  return o;
}

json_t *kc_stack_json(int skip) { return stack_json(skip, 1); }

json_t *kc_stack_json_fast(int skip) { return stack_json(skip, 0); }

__attribute__((noinline)) json_t *kc_stack_json_deferred(int skip, struct kc_stack_snap **snap) {
  *snap = kc_stack_snap_take();
  /* this function's own frame is one more to skip */
  if (!*snap) return stack_json(skip + 1, 0);
  json_t *o = json_object();
  add_python(o);
  return o;
}

json_t *kc_stack_snap_host(const struct kc_stack_snap *snap) {
  uint64_t pcs[MAX_FRAMES + 16]; /* kcheck's own frames are among them */
  int n = kc_stack_snap_pcs(snap, pcs, MAX_FRAMES + 16);
  if (!n) return NULL;
  (void)pthread_once(&find_once, find_lookup);
  json_t *frames = json_array();
  for (int i = 0; frames && i < n; i++) {
    const char *module = "?";
    unsigned long long moff = pcs[i];
    (void)module_of((unw_word_t)pcs[i], 0, &module, &moff);
    char offs[32];
    snprintf(offs, sizeof offs, "0x%llx", moff);
    json_array_append_new(frames, json_pack("{s:s, s:s, s:s, s:o}", "module", module, "offset",
                                            offs, "symbol", "", "ip", kc_json_addr(pcs[i])));
  }
  return frames;
}

/* Stacks of tracked operations by key: 4-way set-associative, the least
 * recently used of a set replaced. A serving loop tracks a few hundred
 * (operation, Python line) pairs at every step: a direct-mapped table of
 * 512 slots indexed by the key's low bits (the key's lowest bit always
 * set) lost most of them to collisions, and each miss takes a whole native
 * stack (measured: stream_races=1 over 300 call sites cost 53 us a launch
 * with it, 3 us with enough room). At most REUSE_SETS * REUSE_WAYS stacks
 * are kept. A thread that finds the table busy takes its stack whole; a
 * forked child starts with it free. */
#define REUSE_SETS 512
#define REUSE_WAYS 4
static struct reuse_slot {
  uint64_t key;
  uint64_t used; /* reuse_clock at the last hit or fill */
  json_t *stack;
} reuse[REUSE_SETS][REUSE_WAYS];
static uint64_t reuse_clock;
static atomic_flag reuse_busy = ATOMIC_FLAG_INIT;

static pthread_mutex_t ref_lock = PTHREAD_MUTEX_INITIALIZER;

json_t *kc_stack_ref(json_t *stack) {
  if (!stack) return NULL;
  pthread_mutex_lock(&ref_lock);
  json_incref(stack);
  pthread_mutex_unlock(&ref_lock);
  return stack;
}

void kc_stack_unref(json_t *stack) {
  if (!stack) return;
  pthread_mutex_lock(&ref_lock);
  json_decref(stack);
  pthread_mutex_unlock(&ref_lock);
}

static void reuse_child(void) {
  atomic_flag_clear(&reuse_busy);
  pthread_mutex_init(&ref_lock, NULL);
}
__attribute__((constructor)) static void reuse_atfork(void) {
  pthread_atfork(NULL, NULL, reuse_child);
}

/* The key of this thread's Python frames and salt; 0 when there are none
 * to key on. */
static uint64_t python_key(uint64_t salt) {
  const char *why = NULL, *raw_why = NULL;
  int ensured, state = 0, n = 0;
  uint64_t h = mix64(salt ^ 0x5bd1e995u), start = h;
  /* without the GIL: keyed on each frame's code and instruction (no
   * names or lines, which only the stack taken on a miss needs) */
  int raw = py_raw(NULL, MAX_FRAMES, &h, &n, &raw_why);
  if (raw > 0) return n == 0 ? 0 : (h | 1);
  if (!py_enter(&why, &ensured, &state, raw_why)) return 0;
  py_walk(frame_to_key, &h);
  py_leave(ensured, state);
  return h == start ? 0 : (h | 1);
}

static struct reuse_slot *reuse_set(uint64_t key) { return reuse[mix64(key) % REUSE_SETS]; }

/* Under reuse_busy: the set's slot holding key, else NULL. */
static struct reuse_slot *reuse_find(struct reuse_slot *set, uint64_t key) {
  for (int w = 0; w < REUSE_WAYS; w++)
    if (set[w].key == key && set[w].stack) return &set[w];
  return NULL;
}

/* Under reuse_busy: where key goes (an empty slot, else the least recently
 * used). */
static struct reuse_slot *reuse_victim(struct reuse_slot *set) {
  struct reuse_slot *v = &set[0];
  for (int w = 0; w < REUSE_WAYS; w++) {
    if (!set[w].stack) return &set[w];
    if (set[w].used < v->used) v = &set[w];
  }
  return v;
}

/* This thread's native return addresses into pcs[0..cap), their count.
 * libunwind's unw_backtrace keeps a per-thread cache of frame layouts, so
 * the unwind tables are not read again at every tracked launch (the
 * stand-in's serving loop under stream_races=1: 0.96 us a launch against
 * 3.63 with glibc's backtrace, 43% of that process in libgcc's unwinder;
 * bench/results/2026-12-08-serving-cpu-audit-f5cfa5d.md). Under
 * ThreadSanitizer glibc's backtrace: that cache's destructor runs at
 * thread exit after ThreadSanitizer has let the thread go (test-tsan's
 * streams16 crashed). libunwind's unw_step loop is slower than either. */
static int native_pcs(void **pcs, int cap) {
#if defined(__SANITIZE_THREAD__)
  return backtrace(pcs, cap);
#else
  return unw_backtrace(pcs, cap);
#endif
}

/* The key of this thread's native return addresses and salt, for a stack
 * without Python frames (autograd's and other C++ threads, or
 * python_stack=0): the addresses cost about a microsecond, where naming
 * their modules and writing the stack's JSON costs tens (python_stack=0
 * over the stand-in's 300-site loop: 50 us a tracked launch before keys)
 * and more through libtorch's frames. Equal addresses are an equal host
 * stack, so the stack kept for them is this operation's own. 0 when none
 * were read. */
static uint64_t native_key(uint64_t salt) {
  void *pcs[MAX_FRAMES + 8];
  int n = native_pcs(pcs, (int)(sizeof pcs / sizeof *pcs));
  if (n <= 0) return 0;
  uint64_t h = mix64(salt ^ 0x2545f4914f6cdd1dull);
  for (int i = 0; i < n; i++)
    h = mix64((h ^ (uint64_t)(uintptr_t)pcs[i]) + 0x9e3779b97f4a7c15ull);
  return h | 1;
}

__attribute__((noinline)) json_t *kc_stack_json_reused(int skip, uint64_t salt) {
  uint64_t key = kc_opt.python_stack ? python_key(salt) : 0;
  /* Only where the stack holds no Python frames: a Python thread whose
   * frames could not be keyed may still have them read into its stack,
   * and other lines share its native addresses. */
  if (!key && (!kc_opt.python_stack || !py_available() || !py.this_thread_state()))
    key = native_key(salt);
  struct reuse_slot *set = key ? reuse_set(key) : NULL;
  if (set && !atomic_flag_test_and_set_explicit(&reuse_busy, memory_order_acquire)) {
    struct reuse_slot *hit = reuse_find(set, key);
    json_t *st = hit ? kc_stack_ref(hit->stack) : NULL;
    if (hit) hit->used = ++reuse_clock;
    atomic_flag_clear_explicit(&reuse_busy, memory_order_release);
    if (st) {
      kc_prof_count(KC_PC_stack_reused, 1);
      return st;
    }
  }
  kc_prof_count(KC_PC_stack_taken, 1);
  /* this function and stack_json's own frame are the two skip counts */
  json_t *st = stack_json(skip + 1, 0);
  if (!key || !st) return st;
  json_t *kept = json_deep_copy(st);
  if (kept) json_object_set_new(kept, "reused", json_true());
  if (kept && !atomic_flag_test_and_set_explicit(&reuse_busy, memory_order_acquire)) {
    struct reuse_slot *slot = reuse_find(set, key);
    if (!slot) slot = reuse_victim(set);
    json_t *old = slot->stack;
    *slot = (struct reuse_slot){key, ++reuse_clock, kept};
    kept = old;
    atomic_flag_clear_explicit(&reuse_busy, memory_order_release);
  }
  kc_stack_unref(kept);
  return st;
}

json_t *kc_stack_copy_without_own(json_t *stack) {
  json_t *c = json_deep_copy(stack);
  json_t *host = c ? json_object_get(c, "host") : NULL;
  for (size_t i = json_array_size(host); i-- > 0;)
    if (kc_frame_is_own(json_string_value(json_object_get(json_array_get(host, i), "module"))))
      json_array_remove(host, i);
  return c;
}
