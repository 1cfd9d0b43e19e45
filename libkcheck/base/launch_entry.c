/* libkcheck/base/launch_entry.c — the names of the launch entries. */
#include "launch_entry.h"

const char *const kc_launch_entry_names[KC_LE_COUNT] = {"cuLaunchKernel", "cuLaunchKernelEx",
                                                        "cuLaunchCooperativeKernel"};
