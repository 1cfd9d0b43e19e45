/* test/fakecuda/fakecuda_graph.c — the stand-in's CUDA graphs beyond stream
 * capture: explicit construction (kernel, memcpy, memset, host, empty,
 * event record/wait and child graph nodes with dependencies), the node
 * queries an interposer reads a graph with (type, dependencies, parameters),
 * cloning, updates of an instantiated graph, and the replay of a graph.
 * Nodes live in an array in the order they were added; a node may only
 * depend on nodes added before it, so that order is a topological order and
 * a launch runs the nodes in it, one after another on the calling thread. */
#include <stdlib.h>
#include <string.h>

#include "fakecuda_int.h"

/* ---- storage ------------------------------------------------------------- */

static CUresult push(struct fk_graph *g, const struct fk_node *n, unsigned *index) {
  if (g->nnodes == g->cap) {
    unsigned cap = g->cap ? 2 * g->cap : 8;
    struct fk_node *p = realloc(g->nodes, cap * sizeof *p);
    if (p == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    g->nodes = p;
    g->cap = cap;
  }
  *index = g->nnodes;
  g->nodes[g->nnodes++] = *n;
  return CUDA_SUCCESS;
}

void fk_graph_add(struct fk_graph *g, const struct fk_node *n) {
  /* A capture on one stream is a chain: each node after the previous one. */
  struct fk_node c = *n;
  c.ndeps = g->nnodes ? 1 : 0;
  c.deps[0] = g->nnodes ? g->nnodes - 1 : 0;
  c.h = NULL;
  c.argv = NULL;
  unsigned at;
  if (push(g, &c, &at) != CUDA_SUCCESS) free(c.args);
}

static void node_free(struct fk_node *n) {
  free(n->args);
  free(n->argv);
  if (n->child) {
    fk_graph_free(n->child);
    free(n->child);
  }
  n->args = NULL;
  n->argv = NULL;
  n->child = NULL;
}

void fk_graph_free(struct fk_graph *g) {
  for (unsigned i = 0; i < g->nnodes; i++)
    node_free(&g->nodes[i]);
  free(g->nodes);
  g->nodes = NULL;
  g->nnodes = g->cap = 0;
}

/* A node's own copy of what it owns (handles belong to the source graph). */
static CUresult node_copy(struct fk_node *dst, const struct fk_node *src) {
  *dst = *src;
  dst->h = NULL;
  dst->argv = NULL;
  dst->args = NULL;
  dst->child = NULL;
  if (src->args) {
    dst->args = malloc(src->args_size ? src->args_size : 1);
    if (dst->args == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(dst->args, src->args, src->args_size);
  }
  if (src->child) {
    dst->child = calloc(1, sizeof *dst->child);
    if (dst->child == NULL || fk_graph_copy(dst->child, src->child) != CUDA_SUCCESS) {
      free(dst->args);
      free(dst->child);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    dst->child->magic = FK_MAGIC_GRAPH;
  }
  return CUDA_SUCCESS;
}

CUresult fk_graph_copy(struct fk_graph *dst, const struct fk_graph *src) {
  for (unsigned i = 0; i < src->nnodes; i++) {
    struct fk_node n;
    unsigned at;
    if (node_copy(&n, &src->nodes[i]) != CUDA_SUCCESS || push(dst, &n, &at) != CUDA_SUCCESS) {
      fk_graph_free(dst);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  return CUDA_SUCCESS;
}

static struct fk_graph *graph_of(CUgraph h) {
  struct fk_graph *g = (struct fk_graph *)h;
  return g && g->magic == FK_MAGIC_GRAPH ? g : NULL;
}

static struct fk_node *node_of(CUgraphNode h) {
  struct fk_nodeh *n = (struct fk_nodeh *)h;
  if (n == NULL || n->magic != FK_MAGIC_NODE || n->g->magic != FK_MAGIC_GRAPH ||
      n->index >= n->g->nnodes)
    return NULL;
  return &n->g->nodes[n->index];
}

static CUgraphNode handle_of(struct fk_graph *g, unsigned i) {
  struct fk_node *n = &g->nodes[i];
  if (n->h == NULL) {
    struct fk_nodeh *h = fk_new(sizeof *h);
    if (h == NULL) return NULL;
    h->magic = FK_MAGIC_NODE;
    h->g = g;
    h->index = i;
    n->h = h;
  }
  return (CUgraphNode)n->h;
}

/* ---- replay -------------------------------------------------------------- */

CUresult fk_graph_run(const struct fk_graph *g, struct fk_ctx *ctx, struct fk_graph *cap) {
  for (unsigned i = 0; i < g->nnodes; i++) {
    const struct fk_node *n = &g->nodes[i];
    CUresult rc = CUDA_SUCCESS;
    if (cap) {
      /* Captured into another graph: the nodes are copied in. */
      struct fk_node c;
      if (node_copy(&c, n) != CUDA_SUCCESS) return CUDA_ERROR_OUT_OF_MEMORY;
      fk_graph_add(cap, &c);
      continue;
    }
    switch (n->kind) {
    case FK_NODE_KERNEL:
    case FK_NODE_MEMSET:
    case FK_NODE_MEMCPY: rc = fk_run_node(n, ctx); break;
    case FK_NODE_HOST: n->host_fn(n->host_data); break;
    case FK_NODE_EVENT_RECORD: fk_event_mark(n->event); break;
    case FK_NODE_CHILD: rc = fk_graph_run(n->child, ctx, NULL); break;
    default: break; /* empty, event wait: launches run in order anyway */
    }
    if (rc != CUDA_SUCCESS) return rc;
  }
  return CUDA_SUCCESS;
}

/* ---- explicit construction ----------------------------------------------- */

static CUresult add(CUgraphNode *out, CUgraph hg, const CUgraphNode *deps, size_t ndeps,
                    struct fk_node *n) {
  struct fk_graph *g = graph_of(hg);
  if (out == NULL || g == NULL || ndeps > FK_MAX_DEPS || (ndeps && deps == NULL)) {
    node_free(n);
    return CUDA_ERROR_INVALID_VALUE;
  }
  n->ndeps = 0;
  for (size_t i = 0; i < ndeps; i++) {
    struct fk_nodeh *d = (struct fk_nodeh *)deps[i];
    if (d == NULL || d->magic != FK_MAGIC_NODE || d->g != g || d->index >= g->nnodes) {
      node_free(n);
      return CUDA_ERROR_INVALID_VALUE;
    }
    n->deps[n->ndeps++] = d->index;
  }
  n->h = NULL;
  n->argv = NULL;
  unsigned at;
  CUresult rc = push(g, n, &at);
  if (rc != CUDA_SUCCESS) {
    node_free(n);
    return rc;
  }
  *out = handle_of(g, at);
  return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult kernel_node(struct fk_node *n, const CUDA_KERNEL_NODE_PARAMS *p) {
  memset(n, 0, sizeof *n);
  if (p == NULL) return CUDA_ERROR_INVALID_VALUE;
  struct fk_func *fn = fk_func_of(p->func ? p->func : (CUfunction)p->kern);
  if (fn == NULL || fn->magic != FK_MAGIC_FUNC) return CUDA_ERROR_INVALID_HANDLE;
  n->kind = FK_NODE_KERNEL;
  n->func = fn;
  n->grid[0] = p->gridDimX, n->grid[1] = p->gridDimY, n->grid[2] = p->gridDimZ;
  n->block[0] = p->blockDimX, n->block[1] = p->blockDimY, n->block[2] = p->blockDimZ;
  n->shmem = p->sharedMemBytes;
  return fk_pack_params(fn->def, p->kernelParams, p->extra, &n->args, &n->args_size);
}

CUresult cuGraphAddKernelNode_v2(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                 const CUDA_KERNEL_NODE_PARAMS *p) {
  FK_ENTER("cuGraphAddKernelNode_v2");
  struct fk_node n;
  CUresult rc = kernel_node(&n, p);
  if (rc != CUDA_SUCCESS) return rc;
  return add(out, g, deps, ndeps, &n);
}

CUresult cuGraphAddEmptyNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps) {
  FK_ENTER("cuGraphAddEmptyNode");
  struct fk_node n = {.kind = FK_NODE_EMPTY};
  return add(out, g, deps, ndeps, &n);
}

CUresult cuGraphAddHostNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                            const CUDA_HOST_NODE_PARAMS *p) {
  FK_ENTER("cuGraphAddHostNode");
  if (p == NULL || p->fn == NULL) return CUDA_ERROR_INVALID_VALUE;
  struct fk_node n = {.kind = FK_NODE_HOST, .host_fn = p->fn, .host_data = p->userData};
  return add(out, g, deps, ndeps, &n);
}

static CUresult event_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                           CUevent ev, int kind) {
  struct fk_event *e = (struct fk_event *)ev;
  if (e == NULL || e->magic != FK_MAGIC_EVENT) return CUDA_ERROR_INVALID_HANDLE;
  struct fk_node n = {.kind = kind, .event = e};
  return add(out, g, deps, ndeps, &n);
}
CUresult cuGraphAddEventRecordNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                   size_t ndeps, CUevent ev) {
  FK_ENTER("cuGraphAddEventRecordNode");
  return event_node(out, g, deps, ndeps, ev, FK_NODE_EVENT_RECORD);
}
CUresult cuGraphAddEventWaitNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                 CUevent ev) {
  FK_ENTER("cuGraphAddEventWaitNode");
  return event_node(out, g, deps, ndeps, ev, FK_NODE_EVENT_WAIT);
}

CUresult cuGraphAddChildGraphNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                  size_t ndeps, CUgraph child) {
  FK_ENTER("cuGraphAddChildGraphNode");
  struct fk_graph *c = graph_of(child);
  if (c == NULL) return CUDA_ERROR_INVALID_VALUE;
  /* The driver clones the child into the node. */
  struct fk_node n = {.kind = FK_NODE_CHILD, .child = calloc(1, sizeof(struct fk_graph))};
  if (n.child == NULL || fk_graph_copy(n.child, c) != CUDA_SUCCESS) {
    free(n.child);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  n.child->magic = FK_MAGIC_GRAPH;
  return add(out, g, deps, ndeps, &n);
}

/* Linear 1D memory only (the stand-in has no arrays); rows must be
 * contiguous so one node covers the whole set. */
CUresult cuGraphAddMemsetNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                              const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx) {
  FK_ENTER("cuGraphAddMemsetNode");
  (void)ctx;
  if (p == NULL || (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4))
    return CUDA_ERROR_INVALID_VALUE;
  if (p->height > 1 && p->pitch != p->width * p->elementSize) return CUDA_ERROR_NOT_SUPPORTED;
  struct fk_node n = {.kind = FK_NODE_MEMSET,
                      .dst = p->dst,
                      .value = p->value,
                      .elem = p->elementSize,
                      .count = p->width * (p->height ? p->height : 1)};
  return add(out, g, deps, ndeps, &n);
}

CUresult cuGraphAddMemcpyNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                              const CUDA_MEMCPY3D *p, CUcontext ctx) {
  FK_ENTER("cuGraphAddMemcpyNode");
  (void)ctx;
  if (p == NULL) return CUDA_ERROR_INVALID_VALUE;
  if ((p->Height > 1 || p->Depth > 1) || p->srcXInBytes || p->dstXInBytes || p->srcY || p->dstY)
    return CUDA_ERROR_NOT_SUPPORTED;
  struct fk_node n = {.kind = FK_NODE_MEMCPY, .count = p->WidthInBytes};
  if (p->srcMemoryType == CU_MEMORYTYPE_HOST)
    n.host_src = p->srcHost;
  else if (p->srcMemoryType == CU_MEMORYTYPE_DEVICE)
    n.src = p->srcDevice;
  else
    return CUDA_ERROR_NOT_SUPPORTED;
  if (p->dstMemoryType == CU_MEMORYTYPE_HOST)
    n.host_dst = p->dstHost;
  else if (p->dstMemoryType == CU_MEMORYTYPE_DEVICE)
    n.dst = p->dstDevice;
  else
    return CUDA_ERROR_NOT_SUPPORTED;
  return add(out, g, deps, ndeps, &n);
}

/* ---- queries ------------------------------------------------------------- */

CUresult cuGraphGetNodes(CUgraph hg, CUgraphNode *nodes, size_t *n) {
  FK_ENTER("cuGraphGetNodes");
  struct fk_graph *g = graph_of(hg);
  if (g == NULL || n == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (nodes != NULL)
    for (size_t i = 0; i < *n && i < g->nnodes; i++)
      if ((nodes[i] = handle_of(g, (unsigned)i)) == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *n = g->nnodes;
  return CUDA_SUCCESS;
}

CUresult cuGraphNodeGetType(CUgraphNode h, CUgraphNodeType *type) {
  FK_ENTER("cuGraphNodeGetType");
  struct fk_node *n = node_of(h);
  if (n == NULL || type == NULL) return CUDA_ERROR_INVALID_VALUE;
  static const CUgraphNodeType types[] = {
      [FK_NODE_KERNEL] = CU_GRAPH_NODE_TYPE_KERNEL,
      [FK_NODE_MEMSET] = CU_GRAPH_NODE_TYPE_MEMSET,
      [FK_NODE_MEMCPY] = CU_GRAPH_NODE_TYPE_MEMCPY,
      [FK_NODE_HOST] = CU_GRAPH_NODE_TYPE_HOST,
      [FK_NODE_EMPTY] = CU_GRAPH_NODE_TYPE_EMPTY,
      [FK_NODE_EVENT_RECORD] = CU_GRAPH_NODE_TYPE_EVENT_RECORD,
      [FK_NODE_EVENT_WAIT] = CU_GRAPH_NODE_TYPE_WAIT_EVENT,
      [FK_NODE_CHILD] = CU_GRAPH_NODE_TYPE_GRAPH,
  };
  *type = types[n->kind];
  return CUDA_SUCCESS;
}

static CUresult get_deps(CUgraphNode h, CUgraphNode *deps, CUgraphEdgeData *edges, size_t *ndeps) {
  struct fk_node *n = node_of(h);
  if (n == NULL || ndeps == NULL) return CUDA_ERROR_INVALID_VALUE;
  struct fk_graph *g = ((struct fk_nodeh *)h)->g;
  if (deps != NULL)
    for (size_t i = 0; i < *ndeps && i < n->ndeps; i++) {
      if ((deps[i] = handle_of(g, n->deps[i])) == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
      if (edges) memset(&edges[i], 0, sizeof edges[i]);
    }
  *ndeps = n->ndeps;
  return CUDA_SUCCESS;
}
CUresult cuGraphNodeGetDependencies(CUgraphNode h, CUgraphNode *deps, size_t *ndeps) {
  FK_ENTER("cuGraphNodeGetDependencies");
  return get_deps(h, deps, NULL, ndeps);
}
CUresult cuGraphNodeGetDependencies_v2(CUgraphNode h, CUgraphNode *deps, CUgraphEdgeData *edges,
                                       size_t *ndeps) {
  FK_ENTER("cuGraphNodeGetDependencies_v2");
  return get_deps(h, deps, edges, ndeps);
}

CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode h, CUDA_KERNEL_NODE_PARAMS *p) {
  FK_ENTER("cuGraphKernelNodeGetParams_v2");
  struct fk_node *n = node_of(h);
  if (n == NULL || p == NULL || n->kind != FK_NODE_KERNEL) return CUDA_ERROR_INVALID_VALUE;
  const struct fk_kernel_def *def = n->func->def;
  if (n->argv == NULL && def->nparams) {
    /* kernelParams point into the node's own copy, valid while it lives. */
    n->argv = calloc(def->nparams, sizeof *n->argv);
    if (n->argv == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    for (unsigned i = 0; i < def->nparams; i++)
      n->argv[i] = n->args + fk_param_offset(def, i);
  }
  memset(p, 0, sizeof *p);
  p->func = (CUfunction)n->func;
  p->gridDimX = n->grid[0], p->gridDimY = n->grid[1], p->gridDimZ = n->grid[2];
  p->blockDimX = n->block[0], p->blockDimY = n->block[1], p->blockDimZ = n->block[2];
  p->sharedMemBytes = n->shmem;
  p->kernelParams = n->argv;
  return CUDA_SUCCESS;
}

static CUresult set_kernel(struct fk_node *n, const CUDA_KERNEL_NODE_PARAMS *p) {
  struct fk_node k;
  CUresult rc = kernel_node(&k, p);
  if (rc != CUDA_SUCCESS) return rc;
  free(n->args);
  free(n->argv);
  n->argv = NULL;
  n->func = k.func;
  memcpy(n->grid, k.grid, sizeof n->grid);
  memcpy(n->block, k.block, sizeof n->block);
  n->shmem = k.shmem;
  n->args = k.args;
  n->args_size = k.args_size;
  return CUDA_SUCCESS;
}

CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS *p) {
  FK_ENTER("cuGraphKernelNodeSetParams_v2");
  struct fk_node *n = node_of(h);
  if (n == NULL || n->kind != FK_NODE_KERNEL) return CUDA_ERROR_INVALID_VALUE;
  return set_kernel(n, p);
}

CUresult cuGraphMemsetNodeGetParams(CUgraphNode h, CUDA_MEMSET_NODE_PARAMS *p) {
  FK_ENTER("cuGraphMemsetNodeGetParams");
  struct fk_node *n = node_of(h);
  if (n == NULL || p == NULL || n->kind != FK_NODE_MEMSET) return CUDA_ERROR_INVALID_VALUE;
  memset(p, 0, sizeof *p);
  p->dst = n->dst;
  p->value = n->value;
  p->elementSize = n->elem;
  p->width = n->count;
  p->height = 1;
  p->pitch = n->count * n->elem;
  return CUDA_SUCCESS;
}

CUresult cuGraphMemcpyNodeGetParams(CUgraphNode h, CUDA_MEMCPY3D *p) {
  FK_ENTER("cuGraphMemcpyNodeGetParams");
  struct fk_node *n = node_of(h);
  if (n == NULL || p == NULL || n->kind != FK_NODE_MEMCPY) return CUDA_ERROR_INVALID_VALUE;
  memset(p, 0, sizeof *p);
  if (n->src) {
    p->srcMemoryType = CU_MEMORYTYPE_DEVICE;
    p->srcDevice = n->src;
  } else {
    p->srcMemoryType = CU_MEMORYTYPE_HOST;
    p->srcHost = n->host_src;
  }
  if (n->dst) {
    p->dstMemoryType = CU_MEMORYTYPE_DEVICE;
    p->dstDevice = n->dst;
  } else {
    p->dstMemoryType = CU_MEMORYTYPE_HOST;
    p->dstHost = n->host_dst;
  }
  p->WidthInBytes = n->count;
  p->Height = p->Depth = 1;
  return CUDA_SUCCESS;
}

CUresult cuGraphHostNodeGetParams(CUgraphNode h, CUDA_HOST_NODE_PARAMS *p) {
  FK_ENTER("cuGraphHostNodeGetParams");
  struct fk_node *n = node_of(h);
  if (n == NULL || p == NULL || n->kind != FK_NODE_HOST) return CUDA_ERROR_INVALID_VALUE;
  p->fn = n->host_fn;
  p->userData = n->host_data;
  return CUDA_SUCCESS;
}

static CUresult node_event(CUgraphNode h, CUevent *ev, int kind) {
  struct fk_node *n = node_of(h);
  if (n == NULL || ev == NULL || n->kind != kind) return CUDA_ERROR_INVALID_VALUE;
  *ev = (CUevent)n->event;
  return CUDA_SUCCESS;
}
CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode h, CUevent *ev) {
  FK_ENTER("cuGraphEventRecordNodeGetEvent");
  return node_event(h, ev, FK_NODE_EVENT_RECORD);
}
CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode h, CUevent *ev) {
  FK_ENTER("cuGraphEventWaitNodeGetEvent");
  return node_event(h, ev, FK_NODE_EVENT_WAIT);
}

CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode h, CUgraph *out) {
  FK_ENTER("cuGraphChildGraphNodeGetGraph");
  struct fk_node *n = node_of(h);
  if (n == NULL || out == NULL || n->kind != FK_NODE_CHILD) return CUDA_ERROR_INVALID_VALUE;
  *out = (CUgraph)n->child; /* owned by the node, as with the driver */
  return CUDA_SUCCESS;
}

/* ---- cloning ------------------------------------------------------------- */

CUresult cuGraphClone(CUgraph *out, CUgraph orig) {
  FK_ENTER("cuGraphClone");
  struct fk_graph *g = graph_of(orig);
  if (out == NULL || g == NULL) return CUDA_ERROR_INVALID_VALUE;
  struct fk_graph *c = fk_new(sizeof *c);
  if (c == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  c->magic = FK_MAGIC_GRAPH;
  c->origin = g;
  CUresult rc = fk_graph_copy(c, g);
  if (rc != CUDA_SUCCESS) {
    c->magic = FK_MAGIC_DEAD;
    return rc;
  }
  *out = (CUgraph)c;
  return CUDA_SUCCESS;
}

CUresult cuGraphNodeFindInClone(CUgraphNode *out, CUgraphNode orig, CUgraph clone) {
  FK_ENTER("cuGraphNodeFindInClone");
  struct fk_graph *c = graph_of(clone);
  struct fk_nodeh *o = (struct fk_nodeh *)orig;
  if (out == NULL || c == NULL || o == NULL || o->magic != FK_MAGIC_NODE || c->origin != o->g ||
      o->index >= c->nnodes)
    return CUDA_ERROR_INVALID_VALUE;
  *out = handle_of(c, o->index);
  return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* ---- updates of an instantiated graph ------------------------------------ */

/* The exec's node for a node of the graph it was instantiated from (same
 * index: instantiation copies the nodes in order). */
static struct fk_node *exec_node(CUgraphExec he, CUgraphNode h) {
  struct fk_gexec *e = (struct fk_gexec *)he;
  struct fk_nodeh *o = (struct fk_nodeh *)h;
  if (e == NULL || e->magic != FK_MAGIC_GEXEC || o == NULL || o->magic != FK_MAGIC_NODE ||
      o->index >= e->copy.nnodes)
    return NULL;
  return &e->copy.nodes[o->index];
}

CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec e, CUgraphNode h,
                                           const CUDA_KERNEL_NODE_PARAMS *p) {
  FK_ENTER("cuGraphExecKernelNodeSetParams_v2");
  struct fk_node *n = exec_node(e, h);
  if (n == NULL || n->kind != FK_NODE_KERNEL) return CUDA_ERROR_INVALID_VALUE;
  return set_kernel(n, p);
}

CUresult cuGraphExecHostNodeSetParams(CUgraphExec e, CUgraphNode h,
                                      const CUDA_HOST_NODE_PARAMS *p) {
  FK_ENTER("cuGraphExecHostNodeSetParams");
  struct fk_node *n = exec_node(e, h);
  if (n == NULL || p == NULL || p->fn == NULL || n->kind != FK_NODE_HOST)
    return CUDA_ERROR_INVALID_VALUE;
  n->host_fn = p->fn;
  n->host_data = p->userData;
  return CUDA_SUCCESS;
}

CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec e, CUgraphNode h,
                                        const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx) {
  FK_ENTER("cuGraphExecMemsetNodeSetParams");
  (void)ctx;
  struct fk_node *n = exec_node(e, h);
  if (n == NULL || p == NULL || n->kind != FK_NODE_MEMSET || p->elementSize != n->elem ||
      (p->height > 1 && p->pitch != p->width * p->elementSize))
    return CUDA_ERROR_INVALID_VALUE;
  n->dst = p->dst;
  n->value = p->value;
  n->count = p->width * (p->height ? p->height : 1);
  return CUDA_SUCCESS;
}

/* Whole-graph update: the same topology, new parameters. */
CUresult cuGraphExecUpdate_v2(CUgraphExec he, CUgraph hg, CUgraphExecUpdateResultInfo *info) {
  FK_ENTER("cuGraphExecUpdate_v2");
  struct fk_gexec *e = (struct fk_gexec *)he;
  struct fk_graph *g = graph_of(hg);
  if (e == NULL || e->magic != FK_MAGIC_GEXEC || g == NULL) return CUDA_ERROR_INVALID_VALUE;
  int same = g->nnodes == e->copy.nnodes;
  for (unsigned i = 0; same && i < g->nnodes; i++)
    same = g->nodes[i].kind == e->copy.nodes[i].kind &&
           g->nodes[i].ndeps == e->copy.nodes[i].ndeps &&
           !memcmp(g->nodes[i].deps, e->copy.nodes[i].deps, g->nodes[i].ndeps * sizeof(unsigned));
  if (info) {
    memset(info, 0, sizeof *info);
    info->result =
        same ? CU_GRAPH_EXEC_UPDATE_SUCCESS : CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
  }
  if (!same) return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  struct fk_graph copy = {0};
  CUresult rc = fk_graph_copy(&copy, g);
  if (rc != CUDA_SUCCESS) return rc;
  fk_graph_free(&e->copy);
  e->copy = copy;
  return CUDA_SUCCESS;
}

CUresult cuGraphExecUpdate(CUgraphExec e, CUgraph g, CUgraphNode *err,
                           CUgraphExecUpdateResult *res) {
  FK_ENTER("cuGraphExecUpdate");
  CUgraphExecUpdateResultInfo info;
  CUresult rc = cuGraphExecUpdate_v2(e, g, &info);
  if (err) *err = NULL;
  if (res) *res = info.result;
  return rc;
}

CUresult cuGraphExecKernelNodeSetParams(CUgraphExec e, CUgraphNode h,
                                        const CUDA_KERNEL_NODE_PARAMS_v1 *p) {
  FK_ENTER("cuGraphExecKernelNodeSetParams");
  if (p == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUDA_KERNEL_NODE_PARAMS v2;
  memset(&v2, 0, sizeof v2);
  v2.func = p->func;
  v2.gridDimX = p->gridDimX, v2.gridDimY = p->gridDimY, v2.gridDimZ = p->gridDimZ;
  v2.blockDimX = p->blockDimX, v2.blockDimY = p->blockDimY, v2.blockDimZ = p->blockDimZ;
  v2.sharedMemBytes = p->sharedMemBytes;
  v2.kernelParams = p->kernelParams;
  v2.extra = p->extra;
  struct fk_node *n = exec_node(e, h);
  if (n == NULL || n->kind != FK_NODE_KERNEL) return CUDA_ERROR_INVALID_VALUE;
  return set_kernel(n, &v2);
}

static CUresult exec_event(CUgraphExec e, CUgraphNode h, CUevent ev, int kind) {
  struct fk_node *n = exec_node(e, h);
  struct fk_event *x = (struct fk_event *)ev;
  if (n == NULL || n->kind != kind || x == NULL || x->magic != FK_MAGIC_EVENT)
    return CUDA_ERROR_INVALID_VALUE;
  n->event = x;
  return CUDA_SUCCESS;
}
CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec e, CUgraphNode h, CUevent ev) {
  FK_ENTER("cuGraphExecEventRecordNodeSetEvent");
  return exec_event(e, h, ev, FK_NODE_EVENT_RECORD);
}
CUresult cuGraphExecEventWaitNodeSetEvent(CUgraphExec e, CUgraphNode h, CUevent ev) {
  FK_ENTER("cuGraphExecEventWaitNodeSetEvent");
  return exec_event(e, h, ev, FK_NODE_EVENT_WAIT);
}

/* Not modelled by the stand-in (exported so every hooked entry exists). */
CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec e, CUgraphNode h, const CUDA_MEMCPY3D *p,
                                        CUcontext ctx) {
  FK_ENTER("cuGraphExecMemcpyNodeSetParams");
  (void)e, (void)h, (void)p, (void)ctx;
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec e, CUgraphNode h, CUgraph child) {
  FK_ENTER("cuGraphExecChildGraphNodeSetParams");
  (void)e, (void)h, (void)child;
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuGraphExecNodeSetParams(CUgraphExec e, CUgraphNode h, CUgraphNodeParams *p) {
  FK_ENTER("cuGraphExecNodeSetParams");
  (void)e, (void)h, (void)p;
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuGraphNodeSetEnabled(CUgraphExec e, CUgraphNode h, unsigned enabled) {
  FK_ENTER("cuGraphNodeSetEnabled");
  (void)e, (void)h, (void)enabled;
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuGraphKernelNodeGetAttribute(CUgraphNode h, CUkernelNodeAttrID attr,
                                       CUkernelNodeAttrValue *v) {
  FK_ENTER("cuGraphKernelNodeGetAttribute");
  (void)h, (void)attr, (void)v;
  return CUDA_ERROR_NOT_SUPPORTED;
}
static CUresult capture_to_graph(void) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult cuStreamBeginCaptureToGraph(CUstream s, CUgraph g, const CUgraphNode *deps,
                                     const CUgraphEdgeData *edges, size_t n,
                                     CUstreamCaptureMode mode) {
  FK_ENTER("cuStreamBeginCaptureToGraph");
  (void)s, (void)g, (void)deps, (void)edges, (void)n, (void)mode;
  return capture_to_graph();
}
CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g, const CUgraphNode *deps,
                                          const CUgraphEdgeData *edges, size_t n,
                                          CUstreamCaptureMode mode);
CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g, const CUgraphNode *deps,
                                          const CUgraphEdgeData *edges, size_t n,
                                          CUstreamCaptureMode mode) {
  FK_ENTER("cuStreamBeginCaptureToGraph_ptsz");
  (void)s, (void)g, (void)deps, (void)edges, (void)n, (void)mode;
  return capture_to_graph();
}
