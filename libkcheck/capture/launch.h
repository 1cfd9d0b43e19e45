/* libkcheck/capture/launch.h — the launch event the shim hands to the core, and the
 * captured description of one launch (parameters, pointers, attributes). */
#ifndef KC_LAUNCH_H
#define KC_LAUNCH_H

#include <cuda.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel.h"
#include "launch_entry.h"

/* A word that looks like a user-space address (2^32 .. 2^47). Device
 * pointers always do; sizes, strides and flags almost never. Stale stack
 * bytes in parameter structs often do too, which is why such a word is
 * only a candidate pointer. */
static inline int kc_addr_like(uint64_t w) { return w >= (1ull << 32) && w < (1ull << 47); }

/* What the application asked for, exactly as it asked. */
struct kc_launch_args {
  int entry; /* enum kc_launch_entry */
  int ptsz;  /* came through a _ptsz (per-thread default stream) entry */
  CUfunction f;
  unsigned grid[3], block[3], shmem;
  CUstream stream;
  void **params;
  void **extra;
  const CUlaunchConfig *config; /* cuLaunchKernelEx only */
  /* Performs the application's launch through the real entry it used. */
  CUresult (*call_real)(const struct kc_launch_args *a);
  void *real; /* that real entry */
};

/* A pointer-sized word of the parameter bytes that points into device memory. */
struct kc_ptr {
  uint32_t offset; /* byte offset in the parameter buffer */
  uint64_t value;
  uint64_t base, size; /* the allocation it points into */
  int from_driver;     /* resolved by a driver query, not kcheck's map */
};

#define KC_MAX_ATTRS 16

/* Where a launch replayed from a CUDA graph sits (graph.c). */
struct kc_graph_ref {
  long graph;  /* instantiation number of the executable graph */
  long launch; /* which launch of it */
  int node;    /* position in the replay plan */
  int nodes;   /* steps in the plan */
};

/* Writes on another stream that a launch reads or overwrites with no
 * ordering between them (stream_races, streams.c), for the stream_delay
 * gate's re-run "as if the earlier write had not landed yet". */
#define KC_MAX_DELAY 4
struct kc_delay {
  int n;
  uint64_t addr[KC_MAX_DELAY], size[KC_MAX_DELAY]; /* size 1: a kernel's write, extent unknown */
  char what[96];                                   /* the first write's operation */
  int stream;                                      /* its stream (streams.c's index) */
  json_t *stack; /* the first write's stack (a counted reference; kc_capture_free drops it), so
                  * that a stream_delay finding names both sides' lines */
};

struct kc_launch_info {
  struct kc_kernel *k;
  uint64_t seq; /* launch index in the process (0-based) */
  const struct kc_launch_args *args;
  unsigned grid[3], block[3], shmem;
  CUstream stream;
  unsigned char *param_buf; /* packed parameter bytes (owned unless inline_buf) */
  /* Optional caller storage for the parameter bytes (the launch path's
   * stack): most launches are never checked, so they need no allocation. */
  unsigned char *inline_buf;
  size_t inline_cap;
  size_t param_size;
  const char *param_form; /* "params", "extra", "none", "unknown" */
  struct kc_ptr *ptrs;    /* owned */
  int nptrs;
  /* The check resolves the pointers itself, under the world lock
   * (kc_shadow_begin): ptrs is empty until then. */
  int ptrs_pending;
  CUlaunchAttribute attrs[KC_MAX_ATTRS];
  int nattrs;
  uint64_t signature;               /* set when the launch is considered for checking */
  const struct kc_graph_ref *graph; /* a kernel node of a replayed graph, else NULL */
  int checked;                      /* set by the check hook when it ran a check */
  struct kc_delay delay;            /* new unordered writes it races with (stream_races) */
};

/* Fills grid/block/stream/attributes and packs the parameter bytes. */
int kc_capture(struct kc_launch_info *li, struct kc_kernel *k, const struct kc_launch_args *a);
/* How kc_capture_pointers treats address-like words kcheck's map does not
 * know. */
enum kc_ptr_lookup {
  KC_PTRS_ASK_DRIVER,      /* asks the driver about each (a check) */
  KC_PTRS_REMEMBER_MISSES, /* skips words the driver recently said are no
                            * device memory (trace records; never a check) */
  KC_PTRS_MAP_ONLY         /* leaves them out: the map's allocations only */
};
/* Scans every 8-byte-aligned word of the parameter bytes for device
 * pointers: kcheck's allocation map, then (by lookup) the driver. */
void kc_capture_pointers(struct kc_launch_info *li, enum kc_ptr_lookup lookup);
void kc_capture_free(struct kc_launch_info *li);
/* Writes the `launch` record (trace=1) of li; stack_json: the serialised
 * stack object (trace=2) or NULL. Formatted without jansson. */
void kc_launch_emit(const struct kc_launch_info *li, const char *stack_json);
/* The same record's fields as JSON (for violation records: `kcheck repro`). */
json_t *kc_launch_json(const struct kc_launch_info *li);

/* A `skip` record: this launch was selected but is not checked, and why. */
void kc_report_skip(const struct kc_launch_info *li, const char *why);

/* The application's own launch (through the CUPTI audit when active). */
CUresult kc_app_launch(const struct kc_launch_args *a);

/* The `graph` member of records about such a launch. */
static inline json_t *kc_graph_ref_json(const struct kc_graph_ref *g) {
  return json_pack("{s:I, s:I, s:i, s:i}", "graph", (json_int_t)g->graph, "graph_launch",
                   (json_int_t)g->launch, "node", g->node, "nodes", g->nodes);
}

#endif
