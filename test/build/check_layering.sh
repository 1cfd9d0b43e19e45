#!/bin/sh
# test/build/check_layering.sh — the build's include paths enforce the
# layering: shim -> gates -> {contract, core}; contract -> {core, oracle};
# oracle -> its own; the core (libkcheck/) is rooms, each of which sees
# itself and the rooms below it (KC_ROOMS, lowest first). For each folder
# and room, a header of one it may not use must not be found with its
# flags, and a header of one it may use must be (so this test can fail
# both ways). Environment: CC, CSTD, KC_ROOMS, KC_INC_<folder or room>.
set -u
fail=0
checks=0
# try FOLDER HEADER EXPECT(ok|fail)
try() {
  eval "flags=\$KC_INC_$1"
  checks=$((checks + 1))
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
# One header of each room, the only one of that name in the core.
room_header() {
  case $1 in
    base) echo log.h ;;
    findings) echo report.h ;;
    capture) echo policy.h ;;
    exec) echo perturb.h ;;
    core) echo core.h ;;
    *) echo "check_layering: no header named for room $1" >&2; exit 2 ;;
  esac
}
# Rooms: every pair, both ways.
for r in $KC_ROOMS; do
  below=1
  for s in $KC_ROOMS; do
    if [ $below = 1 ]; then try "$r" "$(room_header "$s")" ok; else try "$r" "$(room_header "$s")" fail; fi
    [ "$s" = "$r" ] && below=0
  done
  for h in contract.h gate.h oracle.h shim.h; do try "$r" $h fail; done
done
# The oracle: nothing of ours.
try oracle oracle.h ok
for r in $KC_ROOMS; do try oracle "$(room_header "$r")" fail; done
try oracle contract.h fail
try oracle gate.h fail
# Contracts: the core and the oracle, not the gates or the shim.
try contract contract.h ok
for r in $KC_ROOMS; do try contract "$(room_header "$r")" ok; done
try contract oracle.h ok
try contract gate.h fail
try contract shim.h fail
# Gates: contracts, the core, the oracle; not the shim.
try gates gate.h ok
try gates contract.h ok
try gates core.h ok
try gates shim.h fail
# The shim: everything below it.
try shim gate.h ok
try shim contract.h ok
try shim shim.h ok
[ $fail = 0 ] && echo "layering: ok ($checks include checks)"
exit $fail
