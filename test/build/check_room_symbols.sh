#!/bin/sh
# test/build/check_room_symbols.sh — no room of the core uses a symbol
# defined in a room above it (KC_ROOMS, lowest first), whatever its
# headers say: an extern written by hand would slip past the include
# paths. Reads the objects of $BUILD/obj/libkcheck/<room>/.
set -u
objs=${BUILD:-build}/obj/libkcheck
rank=0
ranks=""
for r in $KC_ROOMS; do
  ranks="$ranks $r=$rank"
  rank=$((rank + 1))
done
out=$(for r in $KC_ROOMS; do
  for o in "$objs/$r"/*.o; do
    [ -e "$o" ] || { echo "MISSING $o"; continue; }
    nm "$o" | awk -v room="$r" -v obj="$o" '$1 == "U" { print "U", room, obj, $2; next }
      NF == 3 && $2 ~ /^[TDBRV]$/ { print "D", room, obj, $3 }'
  done
done | awk -v ranks="$ranks" '
  BEGIN { n = split(ranks, a, " "); for (i = 1; i <= n; i++) { split(a[i], kv, "="); rank[kv[1]] = kv[2] } }
  $1 == "MISSING" { print "FAIL room symbols: no objects:", $2; bad = 1; next }
  $1 == "D" { room_of[$4] = $2; obj_of[$4] = $3; next }
  $1 == "U" { uses[++u] = $0 }
  END {
    for (i = 1; i <= u; i++) {
      split(uses[i], f, " ")
      if ((f[4] in room_of) && rank[room_of[f[4]]] > rank[f[2]]) {
        print "FAIL room symbols: " f[3] " (" f[2] ") uses " f[4] " of " obj_of[f[4]] " (" room_of[f[4]] ")"
        bad = 1
      }
    }
    exit bad
  }')
rc=$?
[ -n "$out" ] && echo "$out"
[ $rc = 0 ] && echo "room symbols: ok (no use of a symbol from a room above)"
exit $rc
