/* libkcheck/base/world.h — the process-wide check lock ("the world"). A check
 * saves, re-runs and restores whole allocations, so while it runs no other
 * thread of the application may put GPU work in flight (launches, copies,
 * memsets, graph launches) or free memory: that work would be reverted by
 * the restore, read shadow values, or pull memory out from under the
 * snapshot. Every intercepted entry that moves or frees device memory holds
 * the world shared around its real call; a check holds it exclusively.
 *
 * The shared side is per thread (a Dekker-style flag in a slot of its own
 * and one read of the global "check wanted" word): uncontended it costs two
 * stores and a load on cache lines no other thread writes, and readers
 * never contend with each other. Nested holds by one thread (shared in
 * exclusive, shared in shared) are no-ops, so kcheck's own driver calls
 * inside a check can never deadlock on it; a thread that holds the world
 * shared cannot take it exclusively (the check is skipped instead). */
#ifndef KC_WORLD_H
#define KC_WORLD_H

/* Holds the world shared until kc_world_leave. Never fails. */
void kc_world_enter(void);
void kc_world_leave(void);

/* Holds the world exclusively: waits until no other thread is inside an
 * entry, keeps new ones waiting. Gives up after timeout_ms (0 = wait
 * without limit) and returns -1 with *why set; 0 once held. */
int kc_world_lock(unsigned timeout_ms, const char **why);
void kc_world_unlock(void);

/* Whether this thread holds the world exclusively (kcheck then must not
 * wait on anything another application thread may hold, like the GIL). */
int kc_world_exclusive_here(void);

/* Resets all state in a forked child (only the forking thread exists). */
void kc_world_postfork_child(void);

#endif
