/* libkcheck/base/torch_boot.h — torch=1: the PyTorch binding's boot folder on
 * PYTHONPATH, set from the library's constructor. */
#ifndef KC_TORCH_BOOT_H
#define KC_TORCH_BOOT_H

/* With torch=1 in KCHECK_OPTIONS, prepends python/kcheck/_boot to
 * PYTHONPATH (once). Runs before options are parsed. */
void kc_torch_boot_env(void);

#endif
