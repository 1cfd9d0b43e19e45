/* libkcheck/findings/pyframes.h — the Python frames of the calling thread,
 * read from CPython's own structures while the thread does NOT hold the
 * GIL. PyTorch's bindings, ctypes and CUDA graph replay release the GIL
 * around the driver call kcheck hooks; taking it back there costs up to a
 * switch interval and can deadlock, but the thread's frames cannot change
 * while it is blocked inside kcheck, so they can be read as they are.
 *
 * Supported: CPython 3.10 to 3.14 with the GIL (the layouts are per
 * version, below in pyframes.c). The first read of the process is made
 * with reads that cannot fault (process_vm_readv) and checks every frame's
 * code object's type; only a layout that passed is then read directly.
 * Anything else (another version, a free-threaded or debug build, a frame
 * that is not what the layout says) is "not taken" with the reason. */
#ifndef KC_PYFRAMES_H
#define KC_PYFRAMES_H

#include <jansson.h>
#include <stdint.h>

struct kc_pyframe {
  uintptr_t code;  /* the code object (identity) */
  uintptr_t instr; /* its instruction pointer (identity) */
  int line;        /* 0 unless asked for */
  char file[256], func[96];
};

/* Fills out[0..max) innermost first (names and lines only when full) and
 * returns how many; -1 with *why when the frames cannot be read. tstate:
 * PyGILState_GetThisThreadState() of the calling thread. */
int kc_pyframes_read(void *tstate, struct kc_pyframe *out, int max, int full, const char **why);
/* The same frames' identity (each one's code object and instruction)
 * mixed into *key, without copying them: how many frames, or -1 (*why). */
int kc_pyframes_key(void *tstate, uint64_t *key, const char **why);
/* For the summary: {layout ("3.12", "none"), state (checked: read
 * directly after the first read passed; refused, with why; unchecked),
 * reads, checked_reads (made with reads that cannot fault)}; NULL when no
 * frames were read without the GIL. */
json_t *kc_pyframes_summary(void);

#endif
