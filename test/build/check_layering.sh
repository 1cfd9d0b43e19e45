#!/bin/sh
# test/build/check_layering.sh — the build's include paths enforce the
# layering: shim -> gates -> {contract, core}; contract -> {core, oracle};
# core (libkcheck/) -> its own; oracle -> its own. For each folder, a header
# of a folder it may not use must not be found with that folder's flags,
# and a header of one it may use must be (so this test can fail both ways).
# Environment: CC, CSTD, KC_INC_<folder> (the flags the build uses).
set -u
fail=0
# try FOLDER HEADER EXPECT(ok|fail)
try() {
  eval "flags=\$KC_INC_$1"
  # shellcheck disable=SC2086
  if printf '#include "%s"\n' "$2" | $CC $CSTD $flags -fsyntax-only -x c - 2>/dev/null; then
    got=ok
  else
    got=fail
  fi
  if [ "$got" != "$3" ]; then
    if [ "$3" = fail ]; then
      echo "FAIL layering: $1/ can include $2"
    else
      echo "FAIL layering: $1/ cannot include $2"
    fi
    fail=1
  fi
}
# The core: its own headers only.
try libkcheck log.h ok
try libkcheck shadow.h ok
try libkcheck contract.h fail
try libkcheck gate.h fail
try libkcheck oracle.h fail
try libkcheck shim.h fail
# The oracle: nothing of ours.
try oracle oracle.h ok
try oracle log.h fail
try oracle contract.h fail
try oracle gate.h fail
# Contracts: the core and the oracle, not the gates or the shim.
try contract contract.h ok
try contract log.h ok
try contract oracle.h ok
try contract gate.h fail
try contract shim.h fail
# Gates: contracts, the core, the oracle; not the shim.
try gates gate.h ok
try gates contract.h ok
try gates log.h ok
try gates shim.h fail
# The shim: everything below it.
try shim gate.h ok
try shim contract.h ok
try shim shim.h ok
[ $fail = 0 ] && echo "layering: ok (22 include checks)"
exit $fail
