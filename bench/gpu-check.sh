#!/bin/sh
# bench/gpu-check.sh — the loader on a machine with an NVIDIA GPU, in one go:
#   0. dependencies: tools/deps.sh when something is missing (offline: goes on
#      with what is there); jq and bc are optional (sed and awk stand in);
#   1. build (a failed build falls back to binaries already in $BUILD); the
#      test suite against the fake driver when cmocka is there;
#   2. the cuda backend against the real driver: a small checkpoint loaded
#      byte-exact (--verify reads it back), a missing device refused (exit 5);
#   3. pinned host-to-device bandwidth with the driver API (bench/h2d_bw.c,
#      through the loader's own backend); a checkpoint larger than the device
#      refused with out of memory (exit 5);
#   4. a generated GPU_CHECK_GIB (default 8) GiB checkpoint in the page cache
#      loaded with --device cuda:N: throughput as a ratio of that bandwidth
#      (target >= 0.85), peak host RSS (target <= ring + 64 MiB), device
#      memory used vs the estimate's weights figure (target within 1%); then
#      the same load with other reader counts and ring sizes (for tuning);
#   5. the same load under `vramfit watch`: the device memory NVML saw (the
#      load process's own peak, and the device's rise over its baseline)
#      against the loader's own figures (weights + context; target within 2%);
#   6. the same checkpoint into PyTorch (python/: vramfit.load_safetensors,
#      DLPack) against safetensors.torch.load_file + .to(device), side by side
#      (needs torch with CUDA in $PYTHON; skipped otherwise).
# DEV=cuda:0  GPU_CHECK_GIB=8  H2D_GIB=8  GPU_CHECK_DIR=/tmp  GPU_CHECK_SKIP_TESTS=0
# GPU_CHECK_SWEEP=1 (0: no thread/ring sweep)
# GPU_CHECK_FAKE=1 runs it all against the fake driver (checks the script
# itself on a machine without a GPU; the figures then mean nothing).
# Exit: 0 all targets met, 1 a target missed, 2 nothing could be built,
# 3 no usable CUDA driver.
set -u
B=${BUILD:-build}
DEV=${DEV:-cuda:0}
GIB=${GPU_CHECK_GIB:-8}
VF=$B/vramfit
H2D=$B/bench/h2d_bw
LIM=$B/bench/limits
if [ "${GPU_CHECK_FAKE:-0}" = 1 ]; then
    case "$B" in /*) FB="$B/fake" ;; *) FB="$PWD/$B/fake" ;; esac
    export VF_CUDA_LIBRARY="$FB/libcuda.so.1" VF_NVML_LIBRARY="$FB/libnvidia-ml.so.1"
    export FAKE_CUDA_DISCARD=${FAKE_CUDA_DISCARD:-0}
    echo "gpu-check: FAKE driver ($VF_CUDA_LIBRARY): the figures below are not a GPU's"
fi
# The fake keeps "device" memory in host RAM unless told to discard it (no read-back then).
MEASURE="env"
[ "${GPU_CHECK_FAKE:-0}" = 1 ] && MEASURE="env FAKE_CUDA_DISCARD=1"
fails=0
step() { echo; echo "== $*"; }
result() { # NAME OK(0/1) DETAIL
    if [ "$2" = 1 ]; then echo "PASS $1 ($3)"; else echo "MISS $1 ($3)"; fails=$((fails + 1)); fi
}
skip() { echo "SKIP $1 ($2)"; }
have() { command -v "$1" >/dev/null 2>&1; }
# The first "KEY": value of a JSON text on stdin (our objects list the top-level
# figures before the per-device array, so the first match is the top level).
jget() {
    if have jq; then
        jq -r ".$1"
    else
        grep -o "\"$1\": *[^,}]*" | head -n 1 | sed 's/^[^:]*: *//; s/"//g'
    fi
}
# awk, not bc: awk is on every system. calc 'EXPR' prints 1 or 0 for a comparison.
calc() { awk "BEGIN { x = ($1); if (x == x + 0 && (x == 0 || x == 1)) print x; else printf \"%.4f\n\", x }"; }

step "dependencies"
missing=""
pkg-config --exists jansson 2>/dev/null || missing="$missing jansson"
pkg-config --exists cmocka 2>/dev/null || missing="$missing cmocka"
pkg-config --exists libmicrohttpd 2>/dev/null || missing="$missing libmicrohttpd"
have jq || missing="$missing jq"
if [ -n "$missing" ]; then
    echo "missing:$missing; trying tools/deps.sh (needs a package mirror)"
    if have timeout; then timeout 120 tools/deps.sh >/dev/null 2>&1; else tools/deps.sh >/dev/null 2>&1; fi ||
        echo "gpu-check: could not install everything; going on with what is here"
else
    echo "all present"
fi

step "build"
LOG=$(mktemp)
if make -j"$(nproc)" all "$LIM" "$H2D" "$B/fake/libcuda.so.1" "$B/fake/libnvidia-ml.so.1" >"$LOG" 2>&1; then
    echo "built $B"
else
    # Without libmicrohttpd the CLI cannot link; the library and the bandwidth probe still can.
    make -j"$(nproc)" "$B/libvramfit.a" "$LIM" "$H2D" >>"$LOG" 2>&1
    echo "gpu-check: the full build failed (last lines below); using what exists in $B"
    tail -n 5 "$LOG"
fi
rm -f "$LOG"
[ -x "$H2D" ] && [ -x "$LIM" ] || { echo "gpu-check: cannot build $H2D and $LIM (is libjansson-dev there?)" >&2; exit 2; }
CLI=1
[ -x "$VF" ] || { CLI=0; echo "gpu-check: no $VF: the load steps are skipped"; }

if [ "${GPU_CHECK_SKIP_TESTS:-0}" = 1 ]; then
    skip "test suite" "GPU_CHECK_SKIP_TESTS=1"
elif ! pkg-config --exists cmocka 2>/dev/null; then
    skip "test suite" "no cmocka"
else
    step "test suite (fake driver)"
    last=$(make check 2>&1 | tail -n 1)
    echo "$last"
    result "test suite" "$(echo "$last" | grep -q ' 0 failed' && echo 1 || echo 0)" "$last"
fi

DIR=$(mktemp -d "${GPU_CHECK_DIR:-/tmp}/vfgpu.XXXXXX")
trap 'rm -rf "$DIR"' EXIT INT TERM

step "driver and devices"
if have nvidia-smi && [ "${GPU_CHECK_FAKE:-0}" != 1 ]; then
    nvidia-smi --query-gpu=index,name,driver_version,pcie.link.gen.current,pcie.link.width.current,memory.total,memory.used \
        --format=csv 2>&1 | head -n 9
fi
[ $CLI = 1 ] && "$VF" gpus --local 2>&1 | head -n 10

step "pinned host-to-device bandwidth"
if ! bw=$("$H2D" "$DEV" "${H2D_GIB:-8}" 2>"$DIR/err"); then
    echo "gpu-check: no usable CUDA device: $(cat "$DIR/err")" >&2
    exit 3
fi
echo "$bw"
BW=$(echo "$bw" | sed 's/.*gib_per_s=\([0-9.]*\).*/\1/')
TOTAL=$(echo "$bw" | sed 's/.*device_total=\([0-9]*\).*/\1/')

if [ $CLI = 0 ]; then
    echo
    echo "gpu-check: bandwidth measured; no vramfit binary, so nothing loaded"
    exit 1
fi

step "cuda backend against the driver: byte-exact load, refusals"
"$LIM" gen "$DIR/small.safetensors" $((256 << 20)) >/dev/null || exit 1
out=$("$VF" load "$DIR/small.safetensors" --device "$DEV" --verify --json 2>"$DIR/err")
rc=$?
result "small checkpoint verified on $DEV" "$([ $rc -eq 0 ] && [ "$(echo "$out" | jget verified)" = true ] && echo 1 || echo 0)" "exit $rc $(cat "$DIR/err")"
"$VF" load "$DIR/small.safetensors" --device cuda:99 >/dev/null 2>"$DIR/err"
rc=$?
result "cuda:99 refused with exit 5" "$([ $rc -eq 5 ] && echo 1 || echo 0)" "$(cat "$DIR/err")"
rm -f "$DIR/small.safetensors"

step "out of device memory against the driver: a (sparse) checkpoint 1 GiB larger than the device"
if "$LIM" sparse "$DIR/huge.safetensors" $((TOTAL + (1 << 30))); then
    "$VF" load "$DIR/huge.safetensors" --device "$DEV" >/dev/null 2>"$DIR/err"
    rc=$?
    result "device OOM is exit 5, one line" "$([ $rc -eq 5 ] && [ "$(wc -l <"$DIR/err")" -eq 1 ] && grep -q 'out of memory' "$DIR/err" && echo 1 || echo 0)" "exit $rc: $(cat "$DIR/err")"
else
    skip "device OOM" "cannot make a sparse file in $DIR"
fi
rm -f "$DIR/huge.safetensors"

step "load a ${GIB} GiB checkpoint from the page cache"
F=$DIR/model.safetensors
"$LIM" gen "$F" $((GIB << 30)) >/dev/null || exit 1
cat "$F" >/dev/null
"$VF" load "$F" --device "$DEV" --json >/dev/null || exit 1 # warm-up: context creation, page cache
out=$($MEASURE "$VF" load "$F" --device "$DEV" --json) || exit 1
for k in bytes seconds gib_per_s peak_host_rss_bytes staging_bytes buffers threads device_bytes_used device_context_bytes weights_bytes; do
    printf '%s=%s ' "$k" "$(echo "$out" | jget $k)"
done
echo
G=$(echo "$out" | jget gib_per_s)
RSS=$(echo "$out" | jget peak_host_rss_bytes)
RING=$(echo "$out" | jget staging_bytes)
USED=$(echo "$out" | jget device_bytes_used)
W=$(echo "$out" | jget weights_bytes)
CTX=$(echo "$out" | jget device_context_bytes)
R=$(calc "$G / $BW")
result "load >= 0.85 x pinned H2D bandwidth" "$(calc "$G >= 0.85 * $BW")" "$G GiB/s = $R x $BW GiB/s"
result "peak host RSS <= ring + 64 MiB" "$(calc "$RSS <= $RING + 64 * 1048576")" "RSS $RSS, ring $RING"
D=$(calc "($USED - $W) / $W")
result "device memory used = weights within 1%" "$(calc "$D <= 0.01 && $D >= -0.01")" "used $USED vs weights $W ($D); context $CTX apart"

if [ "${GPU_CHECK_SWEEP:-1}" = 1 ]; then
    step "readers and ring (GiB/s; for tuning the defaults, no target)"
    for t in 4 8 16; do
        for mb in 64 256 512; do
            g=$($MEASURE "$VF" load "$F" --device "$DEV" --threads $t --staging-mb $mb --json 2>/dev/null | jget gib_per_s)
            echo "threads=$t staging_mb=$mb gib_per_s=${g:-failed} ratio=$(calc "${g:-0} / $BW")"
        done
    done
fi

step "the load under vramfit watch: NVML's view against the loader's"
if "$VF" watch --interval 20 --json --output "$DIR/watch.json" -- "$VF" load "$F" --device "$DEV" --json \
    >"$DIR/load.json" 2>"$DIR/err"; then
    USED=$(jget device_bytes_used <"$DIR/load.json")
    CTX=$(jget device_context_bytes <"$DIR/load.json")
    if have jq; then # the GPU the load ran on: the one whose processes' peak is highest
        PP=$(jq '[.gpus[].process_peak_bytes] | max' "$DIR/watch.json")
        RISE=$(jq '[.gpus[] | (.peak_bytes - .baseline_bytes)] | max' "$DIR/watch.json")
        AFTER=$(jq '[.gpus[] | (.after_bytes - .baseline_bytes)] | max' "$DIR/watch.json")
        N=$(jq '.samples' "$DIR/watch.json")
        echo "watch: $N samples; process peak $PP, device rise $RISE, after - before $AFTER; loader: used $USED + context $CTX"
        if [ "${GPU_CHECK_FAKE:-0}" = 1 ]; then
            skip "watched load vs the loader" "fake NVML: it does not see the fake driver's other process"
        else
            L=$((USED + CTX))
            result "watch: the process's peak = loader's used + context within 2%" \
                "$(calc "($PP - $L) / $L <= 0.02 && ($PP - $L) / $L >= -0.02")" "process peak $PP vs $L"
            result "watch: the device's rise = loader's used + context within 2%" \
                "$(calc "($RISE - $L) / $L <= 0.02 && ($RISE - $L) / $L >= -0.02")" "rise $RISE vs $L"
            result "watch: memory back to the baseline after the load exits (within 64 MiB)" \
                "$(calc "$AFTER <= 64 * 1048576")" "after - before $AFTER"
        fi
    else
        skip "watched load" "no jq"
    fi
else
    result "watched load ran" 0 "$(cat "$DIR/err")"
fi

step "into PyTorch: vramfit.load_safetensors against safetensors.torch.load_file + .to(device)"
# Needs torch with CUDA (and, for the comparison, the safetensors package) in $PYTHON; skipped without.
PYTHON=${PYTHON:-python3}
if [ "${GPU_CHECK_FAKE:-0}" = 1 ]; then
    skip "torch load" "the fake driver is not PyTorch's"
elif ! "$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    skip "torch load" "$PYTHON has no torch with CUDA"
else
    PYVF="$DIR/pyvf"
    rm -rf "$PYVF" && "$PYTHON" -m venv --system-site-packages "$PYVF" >/dev/null 2>&1 &&
        VRAMFIT_BUILD="$PWD/$B" "$PYVF/bin/pip" install -q --no-index --no-build-isolation ./python >/dev/null 2>&1 ||
        PYVF=""
    if [ -z "$PYVF" ]; then
        skip "torch load" "pip install ./python failed"
    else
        # each in its own process (page cache warm, the first CUDA call's context outside the timing)
        cat >"$DIR/torch_load.py" <<'PYEOF'
import resource, sys, time, torch
which, path, dev = sys.argv[1:4]
torch.zeros(1, device=dev); torch.cuda.synchronize()
t0 = time.perf_counter()
if which == "vramfit":
    import vramfit
    t = vramfit.load_safetensors(path, device=dev)
else:
    from safetensors.torch import load_file
    t = {k: v.to(dev) for k, v in load_file(path).items()}
torch.cuda.synchronize()
s = time.perf_counter() - t0
n = sum(v.numel() * v.element_size() for v in t.values())
ok = all(v.is_cuda for v in t.values())
print("%s gib_per_s=%.3f seconds=%.3f bytes=%d peak_rss_mib=%.1f on_device=%s" % (
    which, n / s / 2**30, s, n, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, ok))
PYEOF
        VT=$("$PYVF/bin/python" "$DIR/torch_load.py" vramfit "$F" "$DEV" 2>&1 | tail -n 1)
        echo "$VT"
        result "vramfit.load_safetensors: every tensor on $DEV" "$(echo "$VT" | grep -q 'on_device=True' && echo 1 || echo 0)" "$VT"
        if "$PYVF/bin/python" -c 'import safetensors.torch' 2>/dev/null; then
            ST=$("$PYVF/bin/python" "$DIR/torch_load.py" safetensors "$F" "$DEV" 2>&1 | tail -n 1)
            echo "$ST"
            VG=$(echo "$VT" | sed -n 's/.*gib_per_s=\([0-9.]*\).*/\1/p')
            SG=$(echo "$ST" | sed -n 's/.*gib_per_s=\([0-9.]*\).*/\1/p')
            echo "vramfit / safetensors+.to: $(calc "${VG:-0} / ${SG:-1}") x throughput (no target: reported)"
        else
            skip "safetensors.torch.load_file + .to(device)" "no safetensors package in $PYTHON"
        fi
    fi
fi

step "verify the large load (reads it back)"
out=$("$VF" load "$F" --device "$DEV" --verify --json) || exit 1
result "large checkpoint verified" "$([ "$(echo "$out" | jget verified)" = true ] && echo 1 || echo 0)" "$(echo "$out" | jget seconds) s"

echo
[ $fails -eq 0 ] && echo "gpu-check: all targets met" || echo "gpu-check: $fails target(s) missed"
[ $fails -eq 0 ]
