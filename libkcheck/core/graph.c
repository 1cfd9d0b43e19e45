/* libkcheck/core/graph.c — kernels inside CUDA graphs (see graph.h): the table
 * of executable graphs with kcheck's clone and replay plan of each, the
 * mirroring of updates, and the node-by-node replay of a chosen launch. */
#include "graph.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "dispatch.h"
#include "guard.h"
#include "kernel.h"
#include "log.h"
#include "options.h"
#include "policy.h"
#include "prof.h"
#include "report.h"
#include "serving.h"
#include "shadow.h"
#include "streams.h"
#include "uninit.h"
#include "world.h"

/* One node of the replay plan, with what the replay needs of it. */
struct step {
  CUgraphNodeType type;
  CUgraphNode node; /* in kcheck's clone */
};

struct gexec {
  CUgraphExec exec;
  long id;       /* instantiation number in the process */
  CUgraph clone; /* what the exec runs, as far as kcheck knows */
  /* The instantiated graph's top-level nodes and their clones, for
   * updates that name a node of the original graph. */
  CUgraphNode *orig, *mine;
  size_t nmap;
  struct step *plan;
  int nplan, kernels;
  char why[192]; /* why it is not replayed; "" when it can be */
  long launches;
  /* What a launch of it touches, for stream_races: every kernel node's
   * pointer parameters (reads, or writes once a check learned them: the
   * kernel and parameter offset say which), memset and memcpy nodes'
   * device sides. Read at instantiation (the nodes' parameters are fixed). */
  struct kc_access *acc;
  const struct kc_kernel **acc_k; /* NULL: not a kernel's parameter */
  uint32_t *acc_off;
  int nacc, acc_cap;
  int replayed;         /* since its last change: what its nodes reach was touched (graph_uninit) */
  const char *reported; /* last reason a graph_skip record was written for */
  UT_hash_handle hh;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct gexec *table;
static long next_id;
static atomic_int captures;

void kc_on_capture_begin(void) { atomic_fetch_add(&captures, 1); }

void kc_on_capture_end(CUresult r) {
  /* Any result but these ended a capture. A miscount only costs a capture
   * query per launch (too high) or leaves the check path's own query to
   * catch a captured launch (too low): never clamp below zero. */
  if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_ILLEGAL_STATE) return;
  int c = atomic_load(&captures);
  while (c > 0 && !atomic_compare_exchange_weak(&captures, &c, c - 1))
    ;
}

int kc_graph_captures_active(void) { return atomic_load_explicit(&captures, memory_order_relaxed); }

/* ---- the plan -------------------------------------------------------------- */

struct idx {
  CUgraphNode node;
  int i;
  UT_hash_handle hh;
};

static void set_why(struct gexec *e, const char *fmt, const char *arg) {
  if (!e->why[0]) snprintf(e->why, sizeof e->why, fmt, arg);
}

static CUfunction node_function(const CUDA_KERNEL_NODE_PARAMS *p) {
  return p->func ? p->func : (CUfunction)p->kern;
}

static int push_step(struct gexec *e, CUgraphNodeType t, CUgraphNode n, int *cap) {
  if (e->nplan == *cap) {
    int ncap = *cap ? 2 * *cap : 16;
    struct step *p = realloc(e->plan, (size_t)ncap * sizeof *p);
    if (!p) return -1;
    e->plan = p;
    *cap = ncap;
  }
  e->plan[e->nplan++] = (struct step){t, n};
  return 0;
}

static void check_kernel_node(struct gexec *e, CUgraphNode n) {
  CUDA_KERNEL_NODE_PARAMS p;
  memset(&p, 0, sizeof p);
  if (!kc_drv.cuGraphKernelNodeGetParams_v2 ||
      kc_drv.cuGraphKernelNodeGetParams_v2(n, &p) != CUDA_SUCCESS || !node_function(&p)) {
    set_why(e, "%s", "a kernel node's parameters could not be read");
    return;
  }
  struct kc_kernel *k = kc_kernel_get(node_function(&p));
  if (k && k->communication)
    set_why(e, "it contains a communication kernel (%s): never re-run or delayed", k->demangled);
  e->kernels++;
}

/* Appends g's nodes in a topological order (Kahn's algorithm, ties in the
 * driver's node order), child graphs in place of their node. */
static int flatten(struct gexec *e, CUgraph g, int depth, int *cap) {
  size_t n = 0;
  if (depth > 8) {
    set_why(e, "%s", "child graphs nested too deeply");
    return 0;
  }
  if (kc_drv.cuGraphGetNodes(g, NULL, &n) != CUDA_SUCCESS) return -1;
  CUgraphNode *nodes = calloc(n ? n : 1, sizeof *nodes);
  int *indeg = calloc(n ? n : 1, sizeof *indeg), *order = calloc(n ? n : 1, sizeof *order);
  int **out = calloc(n ? n : 1, sizeof *out), *nout = calloc(n ? n : 1, sizeof *nout);
  struct idx *map = NULL, *cells = calloc(n ? n : 1, sizeof *cells);
  int rc = -1;
  if (!nodes || !indeg || !order || !out || !nout || !cells) goto done;
  if (kc_drv.cuGraphGetNodes(g, nodes, &n) != CUDA_SUCCESS) goto done;
  for (size_t i = 0; i < n; i++) {
    cells[i].node = nodes[i];
    cells[i].i = (int)i;
    HASH_ADD_PTR(map, node, &cells[i]);
  }
  /* Edges from each node's dependencies. */
  for (size_t i = 0; i < n; i++) {
    size_t nd = 0;
    if (kc_drv.cuGraphNodeGetDependencies_v2(nodes[i], NULL, NULL, &nd) != CUDA_SUCCESS) goto done;
    if (!nd) continue;
    CUgraphNode *deps = calloc(nd, sizeof *deps);
    if (!deps) goto done;
    if (kc_drv.cuGraphNodeGetDependencies_v2(nodes[i], deps, NULL, &nd) != CUDA_SUCCESS) {
      free(deps);
      goto done;
    }
    for (size_t d = 0; d < nd; d++) {
      struct idx *c = NULL;
      HASH_FIND_PTR(map, &deps[d], c);
      if (!c) continue;
      int *grown = realloc(out[c->i], (size_t)(nout[c->i] + 1) * sizeof *grown);
      if (!grown) {
        free(deps);
        goto done;
      }
      out[c->i] = grown;
      out[c->i][nout[c->i]++] = (int)i;
      indeg[i]++;
    }
    free(deps);
  }
  size_t head = 0, tail = 0;
  for (size_t i = 0; i < n; i++)
    if (!indeg[i]) order[tail++] = (int)i;
  while (head < tail) {
    int v = order[head++];
    for (int j = 0; j < nout[v]; j++)
      if (!--indeg[out[v][j]]) order[tail++] = out[v][j];
  }
  if (tail != n) {
    set_why(e, "%s", "its dependencies have a cycle");
    rc = 0;
    goto done;
  }
  rc = 0;
  for (size_t o = 0; o < n && rc == 0; o++) {
    CUgraphNode node = nodes[order[o]];
    CUgraphNodeType t;
    if (kc_drv.cuGraphNodeGetType(node, &t) != CUDA_SUCCESS) {
      rc = -1;
      break;
    }
    switch (t) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      check_kernel_node(e, node);
      rc = push_step(e, t, node, cap);
      break;
    case CU_GRAPH_NODE_TYPE_MEMCPY:
    case CU_GRAPH_NODE_TYPE_MEMSET:
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD: rc = push_step(e, t, node, cap); break;
    case CU_GRAPH_NODE_TYPE_EMPTY: break;
    case CU_GRAPH_NODE_TYPE_GRAPH: {
      CUgraph child = NULL;
      if (kc_drv.cuGraphChildGraphNodeGetGraph(node, &child) != CUDA_SUCCESS)
        rc = -1;
      else
        rc = flatten(e, child, depth + 1, cap);
      break;
    }
    case CU_GRAPH_NODE_TYPE_HOST:
      set_why(e, "%s", "it has a host node (a CPU callback kcheck would have to run itself)");
      break;
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
      set_why(e, "%s", "it has a conditional node (what runs depends on device values)");
      break;
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      set_why(e, "%s", "it allocates or frees graph-owned memory (memory nodes)");
      break;
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
      set_why(e, "%s", "it has external semaphore nodes");
      break;
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
      set_why(e, "%s", "it has a batch memory operation node");
      break;
    default: set_why(e, "%s", "it has a node of a type kcheck does not replay"); break;
    }
  }
done:
  HASH_CLEAR(hh, map);
  for (size_t i = 0; out && i < n; i++)
    free(out[i]);
  free(nodes), free(indeg), free(order), free(out), free(nout), free(cells);
  return rc;
}

static void add_access(struct gexec *e, uint64_t addr, uint64_t size, int write,
                       const struct kc_kernel *k, uint32_t off) {
  if (!addr || e->nacc >= 4096) return;
  if (e->nacc == e->acc_cap) {
    int ncap = e->acc_cap ? 2 * e->acc_cap : 32;
    struct kc_access *a = realloc(e->acc, (size_t)ncap * sizeof *a);
    if (a) e->acc = a;
    const struct kc_kernel **kk = realloc(e->acc_k, (size_t)ncap * sizeof *kk);
    if (kk) e->acc_k = kk;
    uint32_t *o = realloc(e->acc_off, (size_t)ncap * sizeof *o);
    if (o) e->acc_off = o;
    if (!a || !kk || !o) return;
    e->acc_cap = ncap;
  }
  e->acc[e->nacc] = (struct kc_access){addr, size, write};
  e->acc_k[e->nacc] = k;
  e->acc_off[e->nacc++] = off;
}

static CUresult no_call(const struct kc_launch_args *a) {
  (void)a;
  return CUDA_ERROR_NOT_SUPPORTED;
}

/* The accesses of e's plan (guarded; stream_races only). */
static void collect_accesses(struct gexec *e) {
  for (int i = 0; i < e->nplan; i++) {
    CUgraphNode n = e->plan[i].node;
    switch (e->plan[i].type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      CUDA_KERNEL_NODE_PARAMS p;
      memset(&p, 0, sizeof p);
      if (kc_drv.cuGraphKernelNodeGetParams_v2(n, &p) != CUDA_SUCCESS) break;
      struct kc_kernel *k = kc_kernel_get(node_function(&p));
      if (!k) break;
      CUlaunchConfig cfg;
      memset(&cfg, 0, sizeof cfg);
      cfg.gridDimX = p.gridDimX, cfg.gridDimY = p.gridDimY, cfg.gridDimZ = p.gridDimZ;
      cfg.blockDimX = p.blockDimX, cfg.blockDimY = p.blockDimY, cfg.blockDimZ = p.blockDimZ;
      struct kc_launch_args a = {
          KC_LE_KERNEL_EX, 0,    node_function(&p), {0}, {0}, 0, NULL, p.kernelParams,
          p.extra,         &cfg, no_call,           NULL};
      struct kc_launch_info li = {0};
      unsigned char buf[2048];
      li.inline_buf = buf;
      li.inline_cap = sizeof buf;
      if (kc_capture(&li, k, &a) == 0 && strcmp(li.param_form, "unknown")) {
        kc_capture_pointers(&li, KC_PTRS_REMEMBER_MISSES);
        for (int j = 0; j < li.nptrs; j++)
          add_access(e, li.ptrs[j].value, 1, 0, k, li.ptrs[j].offset);
      }
      kc_capture_free(&li);
      break;
    }
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      CUDA_MEMSET_NODE_PARAMS m;
      if (kc_drv.cuGraphMemsetNodeGetParams &&
          kc_drv.cuGraphMemsetNodeGetParams(n, &m) == CUDA_SUCCESS)
        add_access(e, m.dst,
                   (uint64_t)m.pitch * (m.height ? m.height - 1 : 0) +
                       (uint64_t)m.width * m.elementSize,
                   1, NULL, 0);
      break;
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY: {
      CUDA_MEMCPY3D c;
      if (!kc_drv.cuGraphMemcpyNodeGetParams ||
          kc_drv.cuGraphMemcpyNodeGetParams(n, &c) != CUDA_SUCCESS)
        break;
      uint64_t span =
          (uint64_t)c.WidthInBytes * (c.Height ? c.Height : 1) * (c.Depth ? c.Depth : 1);
      if (c.dstMemoryType == CU_MEMORYTYPE_DEVICE || c.dstMemoryType == CU_MEMORYTYPE_UNIFIED)
        add_access(e, c.dstDevice, span, 1, NULL, 0);
      if (c.srcMemoryType == CU_MEMORYTYPE_DEVICE || c.srcMemoryType == CU_MEMORYTYPE_UNIFIED)
        add_access(e, c.srcDevice, span, 0, NULL, 0);
      break;
    }
    default: break;
    }
  }
}

static int have_graph_calls(void) {
  return kc_drv.cuGraphClone && kc_drv.cuGraphDestroy && kc_drv.cuGraphGetNodes &&
         kc_drv.cuGraphNodeGetType && kc_drv.cuGraphNodeGetDependencies_v2 &&
         kc_drv.cuGraphKernelNodeGetParams_v2 && kc_drv.cuGraphChildGraphNodeGetGraph &&
         kc_drv.cuGraphNodeFindInClone && kc_drv.cuLaunchKernelEx;
}

static void entry_clear(struct gexec *e) {
  if (e->clone) kc_drv.cuGraphDestroy(e->clone);
  free(e->plan), free(e->orig), free(e->mine);
  free(e->acc), free(e->acc_k), free(e->acc_off);
  e->acc = NULL, e->acc_k = NULL, e->acc_off = NULL;
  e->nacc = e->acc_cap = 0;
  e->clone = NULL, e->plan = NULL, e->orig = e->mine = NULL;
  e->nplan = e->kernels = 0;
  e->replayed = 0;
  e->nmap = 0;
  e->why[0] = 0;
}

/* Clones g into e and builds the plan. Guarded. */
static void entry_build(struct gexec *e, CUgraph g) {
  if (!have_graph_calls()) {
    set_why(e, "%s", "the driver lacks the graph entries kcheck reads graphs with");
    return;
  }
  if (kc_drv.cuGraphClone(&e->clone, g) != CUDA_SUCCESS) {
    e->clone = NULL;
    set_why(e, "%s", "cloning the graph failed");
    return;
  }
  size_t n = 0;
  if (kc_drv.cuGraphGetNodes(g, NULL, &n) == CUDA_SUCCESS && n) {
    e->orig = calloc(n, sizeof *e->orig);
    e->mine = calloc(n, sizeof *e->mine);
    if (e->orig && e->mine && kc_drv.cuGraphGetNodes(g, e->orig, &n) == CUDA_SUCCESS) {
      e->nmap = n;
      for (size_t i = 0; i < n; i++)
        if (kc_drv.cuGraphNodeFindInClone(&e->mine[i], e->orig[i], e->clone) != CUDA_SUCCESS)
          e->mine[i] = NULL;
    }
  }
  int cap = 0;
  if (flatten(e, e->clone, 0, &cap)) set_why(e, "%s", "reading the graph's nodes failed");
  if (kc_opt.stream_races) collect_accesses(e);
}

/* Locked: a copy of what a launch of e touches, for stream_races, with the
 * writes checks have learned since; NULL when nothing. */
static struct kc_access *launch_accesses(const struct gexec *e, int *n) {
  *n = e->nacc;
  struct kc_access *acc = *n ? malloc((size_t)*n * sizeof *acc) : NULL;
  if (!acc) return NULL;
  memcpy(acc, e->acc, (size_t)*n * sizeof *acc);
  for (int i = 0; i < *n; i++)
    if (e->acc_k[i] && e->acc_off[i] % 8 == 0 && e->acc_off[i] / 8 < 64)
      acc[i].write = (atomic_load(&e->acc_k[i]->written_words) >> (e->acc_off[i] / 8)) & 1;
  return acc;
}

static json_t *graph_json(const struct gexec *e) {
  json_t *r = json_pack("{s:I, s:i, s:i, s:b}", "graph", (json_int_t)e->id, "nodes", e->nplan,
                        "kernel_nodes", e->kernels, "checkable", !e->why[0]);
  if (r && e->why[0]) json_object_set_new(r, "reason", json_string(e->why));
  return r;
}

void kc_on_graph_instantiate(CUgraphExec exec, CUgraph g) {
  struct gexec *e = calloc(1, sizeof *e);
  if (!e) return;
  e->exec = exec;
  kc_guard_enter();
  entry_build(e, g);
  pthread_mutex_lock(&lock);
  e->id = next_id++;
  struct gexec *old = NULL;
  HASH_FIND_PTR(table, &exec, old);
  if (old) { /* a handle the driver reused after a destroy kcheck missed */
    HASH_DEL(table, old);
    entry_clear(old);
    free(old);
  }
  HASH_ADD_PTR(table, exec, e);
  json_t *rec = graph_json(e);
  pthread_mutex_unlock(&lock);
  atomic_fetch_add(&kc_count.graphs, 1);
  kc_report_emit("graph", rec);
  kc_guard_leave();
}

void kc_on_graph_exec_destroy(CUgraphExec exec) {
  pthread_mutex_lock(&lock);
  struct gexec *e = NULL;
  HASH_FIND_PTR(table, &exec, e);
  if (e) HASH_DEL(table, e);
  pthread_mutex_unlock(&lock);
  if (!e) return;
  kc_guard_enter();
  entry_clear(e);
  kc_guard_leave();
  free(e);
}

void kc_on_graph_exec_update(CUgraphExec exec, CUgraph g) {
  kc_guard_enter();
  pthread_mutex_lock(&lock);
  struct gexec *e = NULL;
  HASH_FIND_PTR(table, &exec, e);
  if (e) {
    entry_clear(e);
    entry_build(e, g);
    e->launches = 0; /* new parameters: its next launch is a first one again */
    e->reported = NULL;
  }
  pthread_mutex_unlock(&lock);
  kc_guard_leave();
}

void kc_on_graph_exec_kernel_set(CUgraphExec exec, CUgraphNode node,
                                 const CUDA_KERNEL_NODE_PARAMS *p) {
  kc_guard_enter();
  pthread_mutex_lock(&lock);
  struct gexec *e = NULL;
  HASH_FIND_PTR(table, &exec, e);
  if (e && !e->why[0]) {
    CUgraphNode mine = NULL;
    for (size_t i = 0; i < e->nmap && !mine; i++)
      if (e->orig[i] == node) mine = e->mine[i];
    if (!mine || !kc_drv.cuGraphKernelNodeSetParams_v2 ||
        kc_drv.cuGraphKernelNodeSetParams_v2(mine, p) != CUDA_SUCCESS) {
      set_why(e, "%s", "a cuGraphExecKernelNodeSetParams could not be mirrored");
    } else {
      struct kc_kernel *k = kc_kernel_get(node_function(p));
      if (k && k->communication)
        set_why(e, "it contains a communication kernel (%s): never re-run or delayed",
                k->demangled);
      e->launches = 0;
      e->replayed = 0;
    }
  }
  pthread_mutex_unlock(&lock);
  kc_guard_leave();
}

void kc_on_graph_exec_kernel_set_v1(CUgraphExec exec, CUgraphNode node,
                                    const CUDA_KERNEL_NODE_PARAMS_v1 *p) {
  if (!p) return;
  CUDA_KERNEL_NODE_PARAMS v2;
  memset(&v2, 0, sizeof v2);
  v2.func = p->func;
  v2.gridDimX = p->gridDimX, v2.gridDimY = p->gridDimY, v2.gridDimZ = p->gridDimZ;
  v2.blockDimX = p->blockDimX, v2.blockDimY = p->blockDimY, v2.blockDimZ = p->blockDimZ;
  v2.sharedMemBytes = p->sharedMemBytes;
  v2.kernelParams = p->kernelParams;
  v2.extra = p->extra;
  kc_on_graph_exec_kernel_set(exec, node, &v2);
}

void kc_on_graph_exec_edit(CUgraphExec exec, const char *entry) {
  pthread_mutex_lock(&lock);
  struct gexec *e = NULL;
  HASH_FIND_PTR(table, &exec, e);
  if (e) set_why(e, "it was changed by %s, which kcheck does not mirror", entry);
  pthread_mutex_unlock(&lock);
}

void kc_graph_postfork_child(void) {
  pthread_mutex_init(&lock, NULL);
  atomic_store(&captures, 0);
}

/* ---- the launch ------------------------------------------------------------ */

/* The application's graph launch, unchanged (fenced like its other work). */
static CUresult plain(kc_fam_GRAPH_LAUNCH real, CUgraphExec exec, CUstream stream) {
  kc_cost_stop(); /* the application's own launch */
  if (kc_opt.check_lock) kc_world_enter();
  CUresult r = real(exec, stream);
  if (kc_opt.check_lock) kc_world_leave();
  return r;
}

/* Into a capture: nothing runs, the driver records it. */
static CUresult plain_unfenced(kc_fam_GRAPH_LAUNCH real, CUgraphExec exec, CUstream stream) {
  kc_cost_stop();
  return real(exec, stream);
}

static void report_skip(struct gexec *e, long id, long launch, const char *why) {
  /* Once per graph and reason in a row: a decode loop launches the same
   * graph thousands of times for the same reason. */
  static atomic_int unknown_reported;
  if (e) {
    pthread_mutex_lock(&lock);
    int same = e->reported == why;
    e->reported = why;
    pthread_mutex_unlock(&lock);
    if (same) return;
  } else if (atomic_exchange(&unknown_reported, 1)) {
    return;
  }
  kc_guard_enter();
  kc_report_emit("graph_skip", json_pack("{s:I, s:I, s:s}", "graph", (json_int_t)id, "graph_launch",
                                         (json_int_t)launch, "reason", why));
  kc_guard_leave();
}

int kc_graph_stream_capturing(CUstream s, int ptsz) {
  if (!kc_graph_captures_active()) return 0;
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  if (!kc_drv.cuStreamIsCapturing) return 0;
  kc_guard_enter();
  CUresult r = kc_drv.cuStreamIsCapturing(ptsz && !s ? CU_STREAM_PER_THREAD : s, &st);
  kc_guard_leave();
  return r == CUDA_SUCCESS && st == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

static int stream_capturing(CUstream s) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  if (!kc_drv.cuStreamIsCapturing) return 0;
  kc_guard_enter();
  CUresult r = kc_drv.cuStreamIsCapturing(s, &st);
  kc_guard_leave();
  return r == CUDA_SUCCESS && st == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

/* Why this launch of e is not replayed, or NULL. */
static const char *choose(const struct gexec *e, long launch) {
  if (e->why[0]) return e->why;
  if (!e->kernels) return "no kernel nodes";
  if (!kc_check_hook_installed()) return "no gates";
  if (kc_opt.max_checks >= 0 && atomic_load(&kc_count.checks) >= kc_opt.max_checks)
    return "max_checks reached";
  const char *budget = kc_budget_exhausted(kc_policy_check_seconds());
  if (budget) return budget;
  if (launch > 0 &&
      kc_policy_uniform((uint64_t)e->id << 32 ^ (uint64_t)launch) >= kc_opt.graph_sample)
    return "not sampled (graph_sample)";
  return NULL;
}

/* What one step needs, read before anything runs: a graph whose nodes
 * cannot all be read is launched unchanged instead. */
struct prep {
  CUDA_KERNEL_NODE_PARAMS k;
  CUlaunchAttribute attrs[2];
  unsigned nattrs;
  CUDA_MEMCPY3D c;
  CUDA_MEMSET_NODE_PARAMS m;
  CUevent ev;
};

static int prepare(const struct step *s, struct prep *p) {
  memset(p, 0, sizeof *p);
  switch (s->type) {
  case CU_GRAPH_NODE_TYPE_KERNEL:
    if (kc_drv.cuGraphKernelNodeGetParams_v2(s->node, &p->k) != CUDA_SUCCESS) return -1;
    if (kc_drv.cuGraphKernelNodeGetAttribute) {
      /* Launch attributes that change what the kernel computes. */
      CUlaunchAttributeValue v;
      memset(&v, 0, sizeof v);
      if (kc_drv.cuGraphKernelNodeGetAttribute(s->node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &v) ==
              CUDA_SUCCESS &&
          v.cooperative) {
        p->attrs[p->nattrs].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        p->attrs[p->nattrs++].value = v;
      }
      memset(&v, 0, sizeof v);
      if (kc_drv.cuGraphKernelNodeGetAttribute(s->node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
                                               &v) == CUDA_SUCCESS &&
          v.clusterDim.x * v.clusterDim.y * v.clusterDim.z > 1) {
        p->attrs[p->nattrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        p->attrs[p->nattrs++].value = v;
      }
    }
    return 0;
  case CU_GRAPH_NODE_TYPE_MEMCPY:
    return kc_drv.cuGraphMemcpyNodeGetParams &&
                   kc_drv.cuGraphMemcpyNodeGetParams(s->node, &p->c) == CUDA_SUCCESS &&
                   kc_drv.cuMemcpy3DAsync_v2
               ? 0
               : -1;
  case CU_GRAPH_NODE_TYPE_MEMSET:
    return kc_drv.cuGraphMemsetNodeGetParams &&
                   kc_drv.cuGraphMemsetNodeGetParams(s->node, &p->m) == CUDA_SUCCESS &&
                   (p->m.elementSize == 1 || p->m.elementSize == 2 || p->m.elementSize == 4)
               ? 0
               : -1;
  case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    return kc_drv.cuGraphEventRecordNodeGetEvent &&
                   kc_drv.cuGraphEventRecordNodeGetEvent(s->node, &p->ev) == CUDA_SUCCESS &&
                   kc_drv.cuEventRecord
               ? 0
               : -1;
  case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
    return kc_drv.cuGraphEventWaitNodeGetEvent &&
                   kc_drv.cuGraphEventWaitNodeGetEvent(s->node, &p->ev) == CUDA_SUCCESS &&
                   kc_drv.cuStreamWaitEvent
               ? 0
               : -1;
  default: return -1;
  }
}

/* A kernel node's launch as the application's own: cuLaunchKernelEx with
 * the node's configuration and launch attributes on the replay stream. */
static CUresult call_node(const struct kc_launch_args *a) {
  return kc_drv.cuLaunchKernelEx(a->config, a->f, a->params, a->extra);
}

static CUresult run_memset(const CUDA_MEMSET_NODE_PARAMS *m, CUstream st) {
  size_t h = m->height ? m->height : 1;
  if (h == 1) {
    /* One row: the 1D entries (a captured cudaMemsetAsync may carry no
     * pitch, which the 2D entries refuse). */
    switch (m->elementSize) {
    case 1: return kc_drv.cuMemsetD8Async(m->dst, (unsigned char)m->value, m->width, st);
    case 2: return kc_drv.cuMemsetD16Async(m->dst, (unsigned short)m->value, m->width, st);
    default: return kc_drv.cuMemsetD32Async(m->dst, m->value, m->width, st);
    }
  }
  switch (m->elementSize) {
  case 1:
    return kc_drv.cuMemsetD2D8Async(m->dst, m->pitch, (unsigned char)m->value, m->width, h, st);
  case 2:
    return kc_drv.cuMemsetD2D16Async(m->dst, m->pitch, (unsigned short)m->value, m->width, h, st);
  default: return kc_drv.cuMemsetD2D32Async(m->dst, m->pitch, m->value, m->width, h, st);
  }
}

static CUresult run_step(const struct step *s, struct prep *p, CUstream st,
                         struct kc_graph_ref *ref) {
  CUresult r;
  switch (s->type) {
  case CU_GRAPH_NODE_TYPE_KERNEL: {
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = p->k.gridDimX, cfg.gridDimY = p->k.gridDimY, cfg.gridDimZ = p->k.gridDimZ;
    cfg.blockDimX = p->k.blockDimX, cfg.blockDimY = p->k.blockDimY, cfg.blockDimZ = p->k.blockDimZ;
    cfg.sharedMemBytes = p->k.sharedMemBytes;
    cfg.hStream = st;
    cfg.attrs = p->nattrs ? p->attrs : NULL;
    cfg.numAttrs = p->nattrs;
    struct kc_launch_args a = {KC_LE_KERNEL_EX,
                               0,
                               node_function(&p->k),
                               {0},
                               {0},
                               0,
                               st,
                               p->k.kernelParams,
                               p->k.extra,
                               &cfg,
                               call_node,
                               NULL};
    /* The launch path, unguarded: the node's launch is the application's. */
    return kc_on_graph_kernel(&a, ref);
  }
  case CU_GRAPH_NODE_TYPE_MEMCPY:
    r = kc_drv.cuMemcpy3DAsync_v2(&p->c, st);
    if (kc_opt.graph_uninit) kc_uninit_touch_addr(p->c.dstDevice);
    break;
  case CU_GRAPH_NODE_TYPE_MEMSET:
    r = run_memset(&p->m, st);
    if (kc_opt.graph_uninit) kc_uninit_touch_addr(p->m.dst);
    break;
  case CU_GRAPH_NODE_TYPE_EVENT_RECORD: r = kc_drv.cuEventRecord(p->ev, st); break;
  case CU_GRAPH_NODE_TYPE_WAIT_EVENT: r = kc_drv.cuStreamWaitEvent(st, p->ev, 0); break;
  default: r = CUDA_ERROR_NOT_SUPPORTED; break;
  }
  return r;
}

/* Replays e's plan on stream st with the world held. Returns what the
 * application's graph launch returns. */
static CUresult replay(struct gexec *e, long launch, CUstream st, kc_fam_GRAPH_LAUNCH real) {
  const char *why = NULL;
  double t0 = kc_now_s(); /* waiting for other threads' driver calls counts too */
  if (kc_opt.check_lock && kc_world_lock((unsigned)kc_opt.check_lock_ms, &why)) {
    report_skip(e, e->id, launch, why);
    return plain(real, e->exec, st);
  }
  if (kc_graph_captures_active()) {
    if (kc_opt.check_lock) kc_world_unlock();
    report_skip(e, e->id, launch, KC_SKIP_CAPTURING);
    return plain(real, e->exec, st);
  }
  CUstreamCaptureMode mode;
  int relaxed = kc_capture_mode_relax(&mode);
  kc_guard_enter();
  struct prep *preps = calloc((size_t)e->nplan, sizeof *preps);
  int ok = preps != NULL;
  for (int i = 0; ok && i < e->nplan; i++)
    ok = prepare(&e->plan[i], &preps[i]) == 0;
  /* Everything the graph launch waits for by stream order has completed. */
  ok = ok && kc_sync_device() == CUDA_SUCCESS;
  kc_guard_leave();
  if (!ok) {
    free(preps);
    if (relaxed) kc_capture_mode_restore(mode);
    if (kc_opt.check_lock) kc_world_unlock();
    report_skip(e, e->id, launch, "its nodes could not be read for the replay");
    return plain(real, e->exec, st);
  }
  atomic_fetch_add(&kc_count.graph_replays, 1);
  pthread_mutex_lock(&lock);
  e->replayed = 1;
  pthread_mutex_unlock(&lock);
  struct kc_graph_ref ref = {e->id, launch, 0, e->nplan};
  CUresult r = CUDA_SUCCESS;
  long checks_before = atomic_load(&kc_count.graph_kernel_checks);
  double checked_s = kc_policy_check_seconds();
  for (int i = 0; i < e->nplan && r == CUDA_SUCCESS; i++) {
    ref.node = i;
    if (e->plan[i].type == CU_GRAPH_NODE_TYPE_KERNEL) {
      r = run_step(&e->plan[i], &preps[i], st, &ref);
    } else {
      kc_guard_enter();
      r = run_step(&e->plan[i], &preps[i], st, &ref);
      kc_guard_leave();
    }
  }
  if (r != CUDA_SUCCESS)
    KC_INTERNAL_ERROR("replaying a graph node by node failed at a node (%d); the application "
                      "gets that error as its graph launch's",
                      (int)r);
  kc_guard_enter();
  kc_sync_device();
  double cost = kc_now_s() - t0, inside = kc_policy_check_seconds() - checked_s;
  /* The replay's own cost (syncs, eager node launches) counts against the
   * time budget like the checks inside it. */
  if (cost > inside) kc_policy_record(0, -1, 0, cost - inside);
  kc_report_emit("graph_check",
                 json_pack("{s:I, s:I, s:i, s:i, s:I, s:f, s:i}", "graph", (json_int_t)e->id,
                           "graph_launch", (json_int_t)launch, "nodes", e->nplan, "kernel_nodes",
                           e->kernels, "kernels_checked",
                           (json_int_t)(atomic_load(&kc_count.graph_kernel_checks) - checks_before),
                           "cost_ms", 1e3 * cost, "result", (int)r));
  kc_guard_leave();
  free(preps);
  if (relaxed) kc_capture_mode_restore(mode);
  if (kc_opt.check_lock) kc_world_unlock();
  return r;
}

static CUresult on_graph_launch(CUgraphExec exec, CUstream stream, int ptsz,
                                kc_fam_GRAPH_LAUNCH real);

/* kcheck's time on a graph launch counts against time_budget (serving.h);
 * a replay records its own. */
CUresult kc_on_graph_launch(CUgraphExec exec, CUstream stream, int ptsz, kc_fam_GRAPH_LAUNCH real) {
  kc_cost_enter();
  CUresult r = on_graph_launch(exec, stream, ptsz, real);
  kc_cost_leave();
  return r;
}

static CUresult on_graph_launch(CUgraphExec exec, CUstream stream, int ptsz,
                                kc_fam_GRAPH_LAUNCH real) {
  /* Launched into a capture: recorded as a child graph, nothing runs now. */
  if (kc_graph_captures_active() &&
      stream_capturing(ptsz && !stream ? CU_STREAM_PER_THREAD : stream)) {
    atomic_fetch_add(&kc_count.captured_launches, 1);
    return plain_unfenced(real, exec, stream);
  }
  atomic_fetch_add(&kc_count.graph_launches, 1);
  pthread_mutex_lock(&lock);
  struct gexec *e = NULL;
  HASH_FIND_PTR(table, &exec, e);
  int nacc = 0;
  struct kc_access *acc = e && kc_opt.stream_races ? launch_accesses(e, &nacc) : NULL;
  long launch = e ? e->launches++ : 0, id = e ? e->id : -1;
  int kernels = e ? e->kernels : 0;
  const char *why = e ? choose(e, launch) : "the graph was instantiated before kcheck saw it";
  int unseen = !e || !e->replayed;
  /* Launched unchanged, its nodes' fixed pointers all reach allocations
   * that exist now: touching everything once covers its later launches. */
  if (why && e && kc_opt.graph_uninit) e->replayed = 1;
  pthread_mutex_unlock(&lock);
  if (acc) {
    /* The launch as one operation of its stream, before it runs. */
    char what[48];
    snprintf(what, sizeof what, "cuGraphLaunch (CUDA graph %ld)", id);
    uint64_t t = kc_prof_now();
    kc_streams_op(stream, ptsz, 0, what, acc, nacc);
    kc_prof_lap(KC_PS_streams, t);
    free(acc);
  }
  atomic_fetch_add(&kc_count.graph_kernel_launches, kernels);
  if (why) {
    /* What a graph never replayed writes is unknown to graph_uninit. */
    if (kc_opt.graph_uninit && unseen) kc_uninit_touch_all();
    report_skip(e, id, launch, why);
    return plain(real, exec, stream);
  }
  /* The per-thread default stream of a _ptsz launch, named explicitly: the
   * replay's entries are the legacy ones. */
  kc_cost_stop(); /* a replay records its own cost */
  return replay(e, launch, ptsz && !stream ? CU_STREAM_PER_THREAD : stream, real);
}
