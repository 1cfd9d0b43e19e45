/* libkcheck/base/export.h — the one mark of a symbol libkcheck.so exports.
 * Everything else is hidden (-fvisibility=hidden); the version script
 * (shim/exports.map.in) lists what may be exported: the public API of
 * include/kcheck.h and the driver symbols the shim interposes. */
#ifndef KC_EXPORT_H
#define KC_EXPORT_H

#define KC_EXPORT __attribute__((visibility("default")))

#endif
