#!/bin/sh
# bench/load.sh (run by make bench): the loader against the two limits that bound it, side by side
# in one run, on one generated checkpoint held in the page cache
# (docs/loader.md "Benchmarks"). Each measurement runs in its own process so
# its peak RSS (getrusage) is its own; each is taken REPS times, best kept.
#   BENCH_GIB=4 (checkpoint size)  BENCH_DIR=/tmp  REPS=2  STAGING_MB=64
# Exits 1 when a target of issue 7 is missed.
set -u
B=${BUILD:-build}
VF=$B/vramfit
LIM=$B/bench/limits
GIB=${BENCH_GIB:-4}
REPS=${REPS:-2}
STAGING_MB=${STAGING_MB:-64}
DIR=$(mktemp -d "${BENCH_DIR:-/tmp}/vfbench.XXXXXX")
trap 'rm -rf "$DIR"' EXIT INT TERM
F=$DIR/model.safetensors
case "$B" in /*) FAKE="$B/fake/libcuda.so.1" ;; *) FAKE="$PWD/$B/fake/libcuda.so.1" ;; esac
for x in "$VF" "$LIM" "$B/fake/libcuda.so.1"; do
    [ -x "$x" ] || [ -f "$x" ] || { echo "bench: $x missing (run make bench)" >&2; exit 2; }
done
command -v jq >/dev/null || { echo "bench: jq is needed" >&2; exit 2; }

echo "generating a ${GIB} GiB checkpoint in $DIR ..."
"$LIM" gen "$F" $((GIB * 1024 * 1024 * 1024)) >/dev/null || exit 1
cat "$F" >/dev/null # into the page cache
SIZE=$(stat -c %s "$F")
MODEL=$("$VF" inspect --json "$F" | jq .bytes)
echo "file $SIZE bytes, tensors $MODEL bytes; $(nproc) CPUs; page cache warm"

# best_limit MODE → "gib_per_s peak_rss" of the fastest of REPS runs
best_limit() {
    best=""
    i=0
    while [ $i -lt "$REPS" ]; do
        line=$("$LIM" "$1" "$F") || exit 1
        g=$(echo "$line" | sed 's/.*gib_per_s=\([0-9.]*\).*/\1/')
        r=$(echo "$line" | sed 's/.*peak_rss=\([0-9]*\).*/\1/')
        if [ -z "$best" ] || [ "$(echo "$g > ${best% *}" | bc -l)" = 1 ]; then best="$g $r"; fi
        i=$((i + 1))
    done
    echo "$best"
}
# best_load ARGS... → "gib_per_s peak_rss staging_bytes"
best_load() {
    best=""
    i=0
    while [ $i -lt "$REPS" ]; do
        out=$("$@" --json) || { echo "bench: $* failed" >&2; exit 1; }
        g=$(echo "$out" | jq '.gib_per_s * 1000 | round / 1000')
        r=$(echo "$out" | jq .peak_host_rss_bytes)
        s=$(echo "$out" | jq .staging_bytes)
        if [ -z "$best" ] || [ "$(echo "$g > ${best%% *}" | bc -l)" = 1 ]; then best="$g $r $s"; fi
        i=$((i + 1))
    done
    echo "$best"
}

set -- $(best_limit hostmem); HM_G=$1; HM_R=$2
set -- $(best_limit stream); ST_G=$1; ST_R=$2
set -- $(best_load "$VF" load "$F" --device host --staging-mb "$STAGING_MB"); HO_G=$1; HO_R=$2; HO_S=$3
set -- $(best_load "$VF" load "$F" --device null --staging-mb "$STAGING_MB"); NU_G=$1; NU_R=$2; NU_S=$3
set -- $(best_limit classic); CL_G=$1; CL_R=$2
set -- $(VF_CUDA_LIBRARY="$FAKE" VF_NVML_LIBRARY=/nonexistent FAKE_CUDA_DISCARD=1 \
    REPS=1 best_load "$VF" load "$F" --device cuda:0 --staging-mb "$STAGING_MB"); CU_G=$1; CU_R=$2; CU_S=$3

MiB=1048576
mib() { echo "scale=1; $1 / $MiB" | bc -l; }
ratio() { echo "scale=3; $1 / $2" | bc -l; }
printf '\n%-34s %10s %12s %s\n' "path" "GiB/s" "peak RSS" "note"
printf '%-34s %10s %10s MiB %s\n' "host-memory limit (pread→fresh map)" "$HM_G" "$(mib "$HM_R")" ""
printf '%-34s %10s %10s MiB %s\n' "streaming limit (8 MiB buffer)" "$ST_G" "$(mib "$ST_R")" ""
printf '%-34s %10s %10s MiB %s\n' "vramfit load --device host" "$HO_G" "$(mib "$HO_R")" "$(ratio "$HO_G" "$HM_G") x host-memory limit"
printf '%-34s %10s %10s MiB %s\n' "vramfit load --device null" "$NU_G" "$(mib "$NU_R")" "$(ratio "$NU_G" "$ST_G") x streaming limit; ring $(mib "$NU_S") MiB"
printf '%-34s %10s %10s MiB %s\n' "classic (read all, copy all)" "$CL_G" "$(mib "$CL_R")" "$(ratio "$CL_R" "$MODEL") x model bytes in RSS"
printf '%-34s %10s %10s MiB %s\n' "vramfit load --device cuda:0 (fake)" "$CU_G" "$(mib "$CU_R")" "ring $(mib "$CU_S") MiB; fake device memory not resident"

fails=0
target() { # NAME CONDITION(bc)
    if [ "$(echo "$2" | bc -l)" = 1 ]; then echo "PASS $1"; else echo "MISS $1"; fails=$((fails + 1)); fi
}
echo
target "host >= 0.8 x host-memory limit" "$HO_G >= 0.8 * $HM_G"
target "host RSS <= model + ring + 64 MiB" "$HO_R <= $MODEL + $HO_S + 64 * $MiB"
target "classic RSS >= 2 x model" "$CL_R >= 2 * $MODEL"
target "null >= 0.8 x streaming limit" "$NU_G >= 0.8 * $ST_G"
target "null RSS <= ring + 64 MiB" "$NU_R <= $NU_S + 64 * $MiB"
target "cuda (fake) RSS <= ring + 64 MiB" "$CU_R <= $CU_S + 64 * $MiB"
[ $fails -eq 0 ]
