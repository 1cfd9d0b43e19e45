/* libkcheck/core/dispatch.h — where the shim hands the core every
 * application launch, and where the gates install the check. */
#ifndef KC_DISPATCH_H
#define KC_DISPATCH_H

#include "launch.h"

/* Called by the shim for every application launch not made by kcheck. */
CUresult kc_on_launch(const struct kc_launch_args *a);
/* A kernel node of a graph replayed node by node (graph.c), with the world
 * already held: counted as a kernel launch inside a graph, and checked when
 * the policy chooses it. a->call_real launches the node. */
CUresult kc_on_graph_kernel(const struct kc_launch_args *a, const struct kc_graph_ref *ref);
/* The check a gate runner performs on a selected launch; it must perform
 * the application's launch itself (a->call_real) exactly once and return
 * its result. Installed by the layer above (gates); NULL: no checking. */
typedef CUresult (*kc_check_fn)(struct kc_launch_info *li);
void kc_set_check_hook(kc_check_fn fn);
int kc_check_hook_installed(void);

#endif
