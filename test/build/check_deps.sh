#!/bin/sh
# test/build/check_deps.sh — header dependencies are the compiler's
# (-MMD -MP): a changed header rebuilds exactly the objects that include it.
# `make -n -W HEADER` asks make what it would rebuild were HEADER new.
# Environment: MAKE, BUILD.
set -u
fail=0
# rebuilt HEADER: the sources make would compile into $BUILD/obj/.
rebuilt() {
  $MAKE --no-print-directory -n -W "$1" "$BUILD/libkcheck.so" 2>/dev/null |
    sed -n "s|.* -c \([^ ]*\.c\) -o $BUILD/obj/.*|\1|p" | sort -u
}
# expect HEADER SOURCE yes|no
expect() {
  if printf '%s\n' "$LIST" | grep -qx "$2"; then got=yes; else got=no; fi
  if [ "$got" != "$3" ]; then
    echo "FAIL deps: touching $1 rebuilds $2: $got (expected $3)"
    fail=1
  fi
}
LIST=$(rebuilt oracle/oracle.h)
expect oracle/oracle.h gates/judge.c yes
expect oracle/oracle.h gates/trial.c yes
expect oracle/oracle.h oracle/matmul.c no # liboracle's objects live in $BUILD/oracle/
expect oracle/oracle.h libkcheck/base/allocmap.c no
expect oracle/oracle.h shim/dl_hook.c no
n_oracle=$(printf '%s\n' "$LIST" | grep -c .)
LIST=$(rebuilt gates/gate.h)
expect gates/gate.h gates/runner.c yes
expect gates/gate.h shim/activate.c yes
expect gates/gate.h libkcheck/capture/policy.c no
expect gates/gate.h contract/contract.c no
n_gate=$(printf '%s\n' "$LIST" | grep -c .)
LIST=$(rebuilt libkcheck/base/allocmap.h)
expect libkcheck/base/allocmap.h libkcheck/base/allocmap.c yes
expect libkcheck/base/allocmap.h oracle/ops.c no
[ $fail = 0 ] && echo "deps: ok (oracle.h rebuilds $n_oracle objects, gate.h $n_gate)"
exit $fail
