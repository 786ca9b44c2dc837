#!/usr/bin/env bash
# The blocks live at a program's peak (bench/alloc_peak.c's file), summed by the code that
# asked for them, largest first, each named by addr2line (function, file:line).
# Usage: alloc_peak.sh PEAK.txt [BIN-DIR-OR-MODULE]: modules that are not found where the
# file says (it was written on another machine) are looked up by their name in BIN-DIR, or
# replaced by MODULE.
set -eu
f=$1
alt=${2:-}
head -1 "$f"
tail -n +2 "$f" | awk '{s[$2" "$3]+=$1; n[$2" "$3]++} END {for (k in s) print s[k], n[k], k}' |
    sort -rn | while read -r bytes count mod off; do
        m=$mod
        if [ ! -e "$m" ] && [ -n "$alt" ]; then
            if [ -d "$alt" ]; then m=$alt/$(basename "$mod"); else m=$alt; fi
        fi
        where=$(addr2line -f -i -C -e "$m" "$off" 2>/dev/null | paste -sd' ' || echo "?")
        printf '%12d bytes %4d blocks  %s  (%s %s)\n' "$bytes" "$count" "$where" \
            "$(basename "$mod")" "$off"
    done
