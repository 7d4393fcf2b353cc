#!/bin/sh
# bench/gpu-check.sh — the loader on a machine with an NVIDIA GPU, in one go:
#   1. build; the test suite (fake driver) must pass here too;
#   2. the cuda backend against the real driver: a small checkpoint loaded
#      byte-exact (--verify reads it back), a missing device refused (exit 5);
#   3. pinned host-to-device bandwidth with the driver API (bench/h2d_bw.c,
#      through the loader's own backend); a checkpoint larger than the device
#      refused with out of memory (exit 5);
#   4. a generated GPU_CHECK_GIB (default 8) GiB checkpoint in the page cache
#      loaded with --device cuda:N: throughput as a ratio of that bandwidth
#      (target >= 0.85), peak host RSS (target <= ring + 64 MiB), device
#      memory used vs the estimate's weights figure (target within 1%).
# DEV=cuda:0  GPU_CHECK_GIB=8  H2D_GIB=8  GPU_CHECK_DIR=/tmp  GPU_CHECK_SKIP_TESTS=0
# GPU_CHECK_FAKE=1 runs it all against the fake driver (checks the script
# itself on a machine without a GPU; the figures then mean nothing).
set -u
B=${BUILD:-build}
DEV=${DEV:-cuda:0}
GIB=${GPU_CHECK_GIB:-8}
VF=$B/vramfit
if [ "${GPU_CHECK_FAKE:-0}" = 1 ]; then
    case "$B" in /*) FB="$B/fake" ;; *) FB="$PWD/$B/fake" ;; esac
    export VF_CUDA_LIBRARY="$FB/libcuda.so.1" VF_NVML_LIBRARY="$FB/libnvidia-ml.so.1"
    export FAKE_CUDA_DISCARD=${FAKE_CUDA_DISCARD:-0}
    echo "gpu-check: FAKE driver ($VF_CUDA_LIBRARY): the figures below are not a GPU's"
fi
fails=0
step() { echo; echo "== $*"; }
result() { # NAME OK(0/1) DETAIL
    if [ "$2" = 1 ]; then echo "PASS $1 ($3)"; else echo "MISS $1 ($3)"; fails=$((fails + 1)); fi
}
command -v jq >/dev/null && command -v bc >/dev/null || { echo "gpu-check: needs jq and bc" >&2; exit 2; }

step "build"
make -j"$(nproc)" all "$B/bench/limits" "$B/bench/h2d_bw" "$B/fake/libcuda.so.1" "$B/fake/libnvidia-ml.so.1" >/dev/null || exit 1
if [ "${GPU_CHECK_SKIP_TESTS:-0}" != 1 ]; then
    step "test suite (fake driver)"
    make check 2>&1 | tail -n 1
fi

DIR=$(mktemp -d "${GPU_CHECK_DIR:-/tmp}/vfgpu.XXXXXX")
trap 'rm -rf "$DIR"' EXIT INT TERM

step "driver and devices"
"$VF" gpus --local 2>&1 | head -n 10 || true

step "cuda backend against the driver: byte-exact load, refusals"
"$B/bench/limits" gen "$DIR/small.safetensors" $((256 << 20)) >/dev/null || exit 1
out=$("$VF" load "$DIR/small.safetensors" --device "$DEV" --verify --json)
rc=$?
result "small checkpoint verified on $DEV" "$([ $rc -eq 0 ] && [ "$(echo "$out" | jq .verified)" = true ] && echo 1 || echo 0)" "exit $rc"
"$VF" load "$DIR/small.safetensors" --device cuda:99 >/dev/null 2>"$DIR/err"
rc=$?
result "cuda:99 refused with exit 5" "$([ $rc -eq 5 ] && echo 1 || echo 0)" "$(cat "$DIR/err")"
rm -f "$DIR/small.safetensors"

step "pinned host-to-device bandwidth"
bw=$("$B/bench/h2d_bw" "$DEV" "${H2D_GIB:-8}") || exit 1
echo "$bw"
BW=$(echo "$bw" | sed 's/.*gib_per_s=\([0-9.]*\).*/\1/')
TOTAL=$(echo "$bw" | sed 's/.*device_total=\([0-9]*\).*/\1/')

step "out of device memory against the driver: a (sparse) checkpoint 1 GiB larger than the device"
"$B/bench/limits" sparse "$DIR/huge.safetensors" $((TOTAL + (1 << 30))) || exit 1
"$VF" load "$DIR/huge.safetensors" --device "$DEV" >/dev/null 2>"$DIR/err"
rc=$?
result "device OOM is exit 5, one line" "$([ $rc -eq 5 ] && [ "$(wc -l <"$DIR/err")" -eq 1 ] && grep -q 'out of memory' "$DIR/err" && echo 1 || echo 0)" "exit $rc: $(cat "$DIR/err")"
rm -f "$DIR/huge.safetensors"

step "load a ${GIB} GiB checkpoint from the page cache"
F=$DIR/model.safetensors
"$B/bench/limits" gen "$F" $((GIB << 30)) >/dev/null || exit 1
cat "$F" >/dev/null
"$VF" load "$F" --device "$DEV" --json >/dev/null || exit 1 # warm-up: context creation, page cache
out=$("$VF" load "$F" --device "$DEV" --json) || exit 1
echo "$out" | jq -c '{bytes, seconds, gib_per_s, peak_host_rss_bytes, staging_bytes, threads, device_bytes_used, device_context_bytes, weights_bytes}'
G=$(echo "$out" | jq .gib_per_s)
RSS=$(echo "$out" | jq .peak_host_rss_bytes)
RING=$(echo "$out" | jq .staging_bytes)
USED=$(echo "$out" | jq .device_bytes_used)
W=$(echo "$out" | jq .weights_bytes)
CTX=$(echo "$out" | jq .device_context_bytes)
R=$(echo "scale=3; $G / $BW" | bc -l)
result "load >= 0.85 x pinned H2D bandwidth" "$(echo "$G >= 0.85 * $BW" | bc -l)" "$G GiB/s = $R x $BW GiB/s"
result "peak host RSS <= ring + 64 MiB" "$(echo "$RSS <= $RING + 64 * 1048576" | bc -l)" "RSS $RSS, ring $RING"
D=$(echo "scale=5; ($USED - $W) / $W" | bc -l)
result "device memory used = weights within 1%" "$(echo "$D <= 0.01 && $D >= -0.01" | bc -l)" "used $USED vs weights $W ($D); context $CTX apart"

step "verify the large load (reads it back)"
out=$("$VF" load "$F" --device "$DEV" --verify --json) || exit 1
result "large checkpoint verified" "$([ "$(echo "$out" | jq .verified)" = true ] && echo 1 || echo 0)" "$(echo "$out" | jq .seconds) s"

echo
[ $fails -eq 0 ] && echo "gpu-check: all targets met" || echo "gpu-check: $fails target(s) missed"
[ $fails -eq 0 ]
