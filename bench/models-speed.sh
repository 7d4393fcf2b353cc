#!/bin/sh
# bench/models-speed.sh — the whole-catalog questions: `models --json` (the
# listing, counted at build time) and `models --fits` (the reverse question)
# with $BUILD/vramfit and with main's build, side by side in this one run,
# best of $REPS (wall and the process's CPU time, build/bench/timeit). main
# has no --fits: its column says so. Prints the ratios (base / new, wall and
# CPU) and whether both builds answer byte for byte alike. Target: each
# under 300 ms.
#   BUILD=build sh bench/models-speed.sh          REPS=5, BASE=main
B=${BUILD:-build}
VF="$B/vramfit" TI="$B/bench/timeit"
REPS=${REPS:-5} BASE=${BASE:-main}
for x in "$VF" "$TI"; do
    [ -x "$x" ] || { echo "bench/models-speed.sh: $x missing (make all $TI)" >&2; exit 1; }
done
OLD=${BASE_BIN:-}
if [ -z "$OLD" ]; then
    rev=$(git rev-parse "$BASE" 2>/dev/null) || { echo "bench/models-speed.sh: no commit $BASE" >&2; exit 1; }
    BB="$B/bench-main"
    OLD="$BB/build/vramfit"
    if [ ! -x "$OLD" ] || [ "$(cat "$BB/rev" 2>/dev/null)" != "$rev" ]; then
        rm -rf "$BB" && mkdir -p "$BB"
        git archive "$rev" | tar -x -C "$BB" &&
            nice make -C "$BB" -j2 BUILD=build build/vramfit >"$BB/make.log" 2>&1 ||
            { echo "bench/models-speed.sh: $BASE does not build ($BB/make.log)" >&2; exit 1; }
        echo "$rev" >"$BB/rev"
    fi
fi

printf 'models-speed: best of %d, ms; baseline %s (%s); %s CPUs (models --fits: a thread each, up to 8)\n' \
    "$REPS" "$BASE" "$OLD" "$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo '?')"
printf '  %-62s %9s %9s %9s %9s %7s %7s %s\n' command base-wall base-cpu new-wall new-cpu wall-x cpu-x same
row() {
    label=$1
    shift
    n=$("$TI" "$REPS" "$VF" "$@")
    if "$OLD" "$@" >/dev/null 2>&1 || [ $? -eq 1 ]; then
        o=$("$TI" "$REPS" "$OLD" "$@")
    else
        o="- - -"
    fi
    same=-
    [ "$o" = "- - -" ] || { "$OLD" "$@" >"$B/bench-old.out" 2>&1; "$VF" "$@" >"$B/bench-new.out" 2>&1
        cmp -s "$B/bench-old.out" "$B/bench-new.out" && same=yes || same=no; }
    set -- $o $n
    printf '  %-62s %9s %9s %9s %9s %7s %7s %s\n' "$label" "$1" "$3" "$4" "$6" "$(ratio "$1" "$4")" "$(ratio "$3" "$6")" "$same"
}
# base / new, 'x' a speed-up
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b + 0 == 0) print "-"; else printf "%.2fx", a / b }'; }
row "models --json" models --json
row "models --fits RTX-4090 --json (transformers)" models --fits RTX-4090 --json
row "models --fits RTX-4090 --runtime llamacpp --context 8192 --json" models --fits RTX-4090 --runtime llamacpp --context 8192 --json
row "models --fits RTX-4090 --runtime llamacpp --host-memory 64GiB" models --fits RTX-4090 --runtime llamacpp --host-memory 64GiB --json
row "models --fits RTX-3060 --runtime llamacpp --json" models --fits RTX-3060 --runtime llamacpp --json
row "models --fits H100 --runtime vllm --json" models --fits H100 --runtime vllm --json
row "models --fits H100x8 --json" models --fits H100x8 --json
row "models --fits H100x8 --runtime llamacpp --json" models --fits H100x8 --runtime llamacpp --json
rm -f "$B/bench-old.out" "$B/bench-new.out"
echo "  ('-': the baseline has no such command; same: the two builds' output byte for byte)"
