/* libkcheck/base/launch_entry.h — the driver entries a kernel launch comes
 * through. The report counts launches by entry (findings/) and the launch
 * path records which one was used (capture/). */
#ifndef KC_LAUNCH_ENTRY_H
#define KC_LAUNCH_ENTRY_H

enum kc_launch_entry { KC_LE_KERNEL, KC_LE_KERNEL_EX, KC_LE_COOPERATIVE, KC_LE_COUNT };
/* Names of the launch entries, indexed by enum kc_launch_entry. */
extern const char *const kc_launch_entry_names[KC_LE_COUNT];

#endif
