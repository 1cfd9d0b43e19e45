/* libkcheck/core/graph.h — kernels inside CUDA graphs. A graph launch reaches
 * the driver as one cuGraphLaunch, so kcheck keeps, for every executable
 * graph it saw instantiated, a clone of what it runs (mirroring the updates
 * it can) and a replay plan: the nodes in a topological order, child graphs
 * flattened in place. A chosen graph launch is replayed node by node on the
 * launch's stream, outside any capture, under the world lock: kernel nodes
 * go through the launch path (so the policy may check them in the shadow),
 * memcpy, memset and event nodes run as the equivalent stream operations.
 * A serial topological order is one of the orders the graph allows, so the
 * memory afterwards equals what the graph launch alone would have produced.
 * Graphs with nodes kcheck cannot replay faithfully (host callbacks,
 * conditional bodies, graph-owned allocations, external semaphores,
 * communication kernels) are launched unchanged and reported with the
 * reason. */
#ifndef KC_GRAPH_H
#define KC_GRAPH_H

#include <cuda.h>

#include "driver.h"

/* Stream capture began or ended (r: cuStreamEndCapture's result). Launches
 * on a capturing stream are counted as captured, not run, not checked. */
void kc_on_capture_begin(void);
void kc_on_capture_end(CUresult r);
/* Whether a capture may be in progress somewhere in the process. */
int kc_graph_captures_active(void);
/* Whether stream s is being captured (cheap while no capture is active). */
int kc_graph_stream_capturing(CUstream s, int ptsz);
/* Why a check is skipped while one is. */
#define KC_SKIP_CAPTURING                                                                          \
  "a stream capture is in progress (a check's device-wide sync would break it)"

/* An executable graph was instantiated from g (kcheck clones g). */
void kc_on_graph_instantiate(CUgraphExec exec, CUgraph g);
void kc_on_graph_exec_destroy(CUgraphExec exec);
/* cuGraphExecUpdate succeeded: the exec now runs g's parameters. */
void kc_on_graph_exec_update(CUgraphExec exec, CUgraph g);
/* cuGraphExecKernelNodeSetParams succeeded (mirrored into the clone). */
void kc_on_graph_exec_kernel_set(CUgraphExec exec, CUgraphNode node,
                                 const CUDA_KERNEL_NODE_PARAMS *p);
void kc_on_graph_exec_kernel_set_v1(CUgraphExec exec, CUgraphNode node,
                                    const CUDA_KERNEL_NODE_PARAMS_v1 *p);
/* Any other edit of an executable graph: kcheck no longer replays it. */
void kc_on_graph_exec_edit(CUgraphExec exec, const char *entry);

/* A graph launch of the application (ptsz: through a _ptsz entry). Returns
 * what the application's graph launch returns. */
CUresult kc_on_graph_launch(CUgraphExec exec, CUstream stream, int ptsz, kc_fam_GRAPH_LAUNCH real);

/* Drops every entry (a forked child keeps no parent's graphs' state lock). */
void kc_graph_postfork_child(void);

#endif
