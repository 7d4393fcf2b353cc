#!/bin/sh
# bench/catalog-speed.sh — is every answer instant? Every catalog model's
# inspect, estimate (generic, transformers, vLLM, llama.cpp, training) and fit
# (the same runtimes and training) timed with $BUILD/vramfit and with a
# baseline build side by side in this one run, each the best of $REPS runs
# (wall and the process's CPU time: build/bench/timeit); then the heavy
# answers (fit without --gpu, a sweep, a training sweep, a training fit with
# its advice) on the largest catalog models. Prints per command the maximum
# over the catalog for both builds, the model at the maximum, the ratio, and
# whether every answer of the new build is byte-identical to the baseline's.
#
# The baseline: BASE_BIN (a vramfit binary), else commit $BASE (default: main
# before the speed work) built into $BUILD/bench-base. Target:
# a catalog model's inspect, estimate or fit well under 20 ms; heavy answers
# under 1 s.
#   BUILD=build sh bench/catalog-speed.sh            all models, REPS=3
#   MODELS="qwen3-8b deepseek-ai/DeepSeek-V3" REPS=5 sh bench/catalog-speed.sh
B=${BUILD:-build}
VF="$B/vramfit" TI="$B/bench/timeit"
REPS=${REPS:-3} HEAVY=${HEAVY:-2} BASE=${BASE:-5257cdb}
for x in "$VF" "$TI"; do
    [ -x "$x" ] || { echo "bench/catalog-speed.sh: $x missing (make all $TI)" >&2; exit 1; }
done
command -v jq >/dev/null || { echo "bench/catalog-speed.sh: needs jq" >&2; exit 1; }
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT

# the baseline build
OLD=${BASE_BIN:-}
if [ -z "$OLD" ]; then
    BB="$B/bench-base"
    OLD="$BB/build/vramfit"
    if [ ! -x "$OLD" ] || [ "$(cat "$BB/rev" 2>/dev/null)" != "$BASE" ]; then
        rm -rf "$BB" && mkdir -p "$BB"
        git archive "$BASE" | tar -x -C "$BB" || { echo "bench/catalog-speed.sh: cannot read commit $BASE" >&2; exit 1; }
        nice make -C "$BB" -j2 BUILD=build build/vramfit >"$BB/make.log" 2>&1 ||
            { echo "bench/catalog-speed.sh: baseline $BASE does not build ($BB/make.log)" >&2; exit 1; }
        echo "$BASE" >"$BB/rev"
    fi
fi

# one command for both builds (the baseline REPS or BASE_REPS times):
# "label model old-wall old-cpu new-wall new-cpu same"
one() {
    label=$1 model=$2 oreps=$3
    shift 3
    o=$("$TI" "$oreps" "$OLD" "$@") n=$("$TI" "$REPS" "$VF" "$@")
    "$OLD" "$@" >"$D/old" 2>&1
    echo "rc $?" >>"$D/old"
    "$VF" "$@" >"$D/new" 2>&1
    echo "rc $?" >>"$D/new"
    same=0
    cmp -s "$D/old" "$D/new" && same=1
    set -- $o
    ow=$1 oc=$3
    set -- $n
    echo "$label $model $ow $oc $1 $3 $same" >>"$D/rows"
}

"$VF" models --json | jq -r '.models[] | "\(.params) \(.id)"' | sort -n >"$D/catalog"
models=${MODELS:-$(cut -d' ' -f2 "$D/catalog")}
for m in $models; do
    one inspect "$m" "$REPS" inspect "$m" --json
    one est:generic "$m" "$REPS" estimate "$m" --runtime generic --json
    one est:transformers "$m" "$REPS" estimate "$m" --json
    one est:vllm "$m" "$REPS" estimate "$m" --runtime vllm --gpu H100 --json
    one est:llamacpp "$m" "$REPS" estimate "$m" --runtime llamacpp --json
    one est:train "$m" "$REPS" estimate "$m" --train --json
    one fit:generic "$m" "$REPS" fit "$m" --gpu H100 --runtime generic --json
    one fit:transformers "$m" "$REPS" fit "$m" --gpu H100 --json
    one fit:vllm "$m" "$REPS" fit "$m" --gpu H100 --runtime vllm --json
    one fit:llamacpp "$m" "$REPS" fit "$m" --gpu "RTX 4090" --runtime llamacpp --json
    # the training fit of the largest models ran for tens of seconds: the baseline once
    one fit:train "$m" 1 fit "$m" --gpu H100 --train --json
done
# the heavy answers on the largest models, the baseline once
heavy=${HEAVY_MODELS:-$(tail -n "$HEAVY" "$D/catalog" | cut -d' ' -f2)}
for m in $heavy; do
    one fit:no-gpu "$m" 1 fit "$m" --json
    one sweep "$m" 1 sweep "$m" --gpu H100 --json
    one sweep:train "$m" 1 sweep "$m" --gpu H100 --train --json
done

awk -v reps="$REPS" -v base="${BASE_BIN:-$BASE}" '
{
    k = $1
    if (!(k in n)) order[++nk] = k
    n[k]++; same[k] += $7
    if ($5 > nw[k]) { nw[k] = $5; nwm[k] = $2 }
    if ($6 > nc[k]) { nc[k] = $6; ncm[k] = $2 }
    if ($3 > ow[k]) { ow[k] = $3; owm[k] = $2 }
    if ($4 > oc[k]) { oc[k] = $4; ocm[k] = $2 }
    allsame += $7; all++
}
END {
    printf "catalog-speed: max over the models, best of %d (fit:train and heavy rows: the baseline once), ms; baseline %s\n", reps, base
    printf "  %-18s %5s %9s %9s %7s %9s %9s %7s  %s\n", "command", "runs", "base-wall", "new-wall", "ratio", "base-cpu", "new-cpu", "ratio", "slowest now (cpu) / identical"
    for (i = 1; i <= nk; i++) {
        k = order[i]
        printf "  %-18s %5d %9.1f %9.1f %6.1fx %9.1f %9.1f %6.1fx  %s / %d of %d\n", k, n[k], ow[k], nw[k],
            (nw[k] > 0 ? ow[k] / nw[k] : 0), oc[k], nc[k], (nc[k] > 0 ? oc[k] / nc[k] : 0), ncm[k], same[k], n[k]
    }
    printf "  answers byte-identical to the baseline: %d of %d\n", allsame, all
    exit (allsame == all ? 0 : 1)
}' "$D/rows"
