/* libkcheck/exec/bundle.h — a standalone replay bundle for a finding: the
 * kernel's image, its name, the launch shape, the parameter bytes and the
 * bytes of every allocation the launch reaches, as the check saved them
 * before the launch ran (repro_dir, repro_budget). `kcheck repro BUNDLE`
 * loads the image with cuModuleLoadData, uploads the buffers, relocates the
 * pointers in the parameter bytes, launches and lets kcheck check it again,
 * without the original program (python/kcheck/replay.py). */
#ifndef KC_BUNDLE_H
#define KC_BUNDLE_H

#include <jansson.h>

#include "launch.h"
#include "shadow.h"

/* Writes the bundle of a finding of gate `gate` in a check of li whose
 * pre-state sh still holds (contracts: the contract files the gate used,
 * or NULL) under the repro_dir option. Returns {"bundle": folder} or
 * {"bundle_skipped": why not} for the violation record; NULL when
 * repro_dir is empty. Never fails the check. */
json_t *kc_bundle_write(const struct kc_launch_info *li, const struct kc_shadow *sh,
                        const char *gate, const char *contracts);

#endif
