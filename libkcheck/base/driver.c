/* libkcheck/base/driver.c — the core's driver table (driver.def): the real entry
 * points kcheck calls (kc_drv, filled by the shim when it loads libcuda),
 * each row's exported name and whether the shim hooks it. */
#include "driver.h"

struct kc_driver kc_drv;

const char *const kc_entry_names[KC_E_COUNT] = {
#define KC_HOOK(sym, fam) [KC_E_##sym] = #sym,
#define KC_CALL(sym) [KC_E_##sym] = #sym,
#include "driver.def"
#undef KC_HOOK
#undef KC_CALL
};

const unsigned char kc_entry_hooked[KC_E_COUNT] = {
#define KC_HOOK(sym, fam) [KC_E_##sym] = 1,
#define KC_CALL(sym) [KC_E_##sym] = 0,
#include "driver.def"
#undef KC_HOOK
#undef KC_CALL
};
