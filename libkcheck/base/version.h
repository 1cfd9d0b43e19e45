/* libkcheck/base/version.h — kcheck's version string (also in the report). */
#ifndef KC_VERSION_H
#define KC_VERSION_H
#define KCHECK_VERSION "0.2.0"
#endif
