# vramfit load: JSON contract, devices, faults and exit codes, against the
# fake CUDA driver and NVML built in $BUILD/fake.
. tests/cli/lib.sh
B=${BUILD:-build}
case "$B" in /*) ;; *) B="$PWD/$B" ;; esac
export VF_CUDA_LIBRARY="$B/fake/libcuda.so.1" VF_NVML_LIBRARY="$B/fake/libnvidia-ml.so.1"

# A safetensors file: 8-byte little-endian header length, JSON header, random data.
mk_st() { # FILE DATA_BYTES_OF_EACH_OF_TWO_TENSORS(multiple of 4)
    n=$2
    h="{\"model.layers.0.mlp.up_proj.weight\":{\"dtype\":\"F32\",\"shape\":[$((n / 4))],\"data_offsets\":[0,$n]},\"lm_head.weight\":{\"dtype\":\"F32\",\"shape\":[$((n / 4))],\"data_offsets\":[$n,$((2 * n))]}}"
    while [ $(( ${#h} % 8 )) -ne 0 ]; do h="$h "; done
    len=${#h}
    i=0
    : >"$1"
    while [ $i -lt 8 ]; do
        printf "\\$(printf %03o $(( (len >> (8 * i)) & 255 )))" >>"$1"
        i=$((i + 1))
    done
    printf '%s' "$h" >>"$1"
    head -c $((2 * n)) /dev/urandom >>"$1"
}
M="$TMP/model.safetensors"
mk_st "$M" 3000000
BYTES=6000000

check_json "host json" 0 ".tensors == 2 and .bytes == $BYTES and .weights_bytes == $BYTES and .device == \"host\" and .staging_bytes == 0 and .verified == true and .device_bytes_used == $BYTES and .peak_host_rss_bytes > 0 and .gib_per_s > 0" \
    "$VF" load "$M" --verify --json
if [ -s "$TMP/err" ]; then fail "no progress bar off a terminal" "$(head -c 200 "$TMP/err")"; else ok "no progress bar off a terminal"; fi
check_json "null json" 0 '.device == "null" and .staging_bytes >= 1048576 and .verified == false and .device_bytes_used == 0' \
    "$VF" load "$M" --device null --staging-mb 1 --threads 2 --json
check_out "human output" 0 "^loaded    2 tensors, 5.72 MiB" "$VF" load "$M" --device host

R="$TMP/report"
clean() { # NAME — the fake's at-exit report shows nothing left behind
    if grep -q 'dev_allocs=0 dev_bytes=0 host_allocs=0 host_bytes=0 streams=0 events=0 contexts=0 .* violations=0' "$R"; then
        ok "$1: nothing left"
    else
        fail "$1: nothing left" "$(cat "$R")"
    fi
    rm -f "$R"
}
export FAKE_CUDA_REPORT="$R"
check_json "cuda json" 0 ".device == \"cuda:0\" and .verified == true and .device_bytes_used == $BYTES and .device_context_bytes == 314572800 and .devices[0].name == \"Fake GPU 0\" and .devices[0].mem_source == \"nvml\" and .staging_bytes > 0" \
    env FAKE_CUDA_DELAY_US=100 "$VF" load "$M" --device cuda:0 --staging-mb 1 --verify --json
clean "cuda json"
check_err "device oom" 5 "out of memory" env FAKE_CUDA_FAIL_ALLOC=1 "$VF" load "$M" --device cuda:0
clean "device oom"
check_err "pinned alloc fails" 5 "cuMemHostAlloc" env FAKE_CUDA_FAIL_HOSTALLOC=2 "$VF" load "$M" --device cuda:0
clean "pinned alloc fails"
check_err "copy fails" 5 "cuMemcpyHtoDAsync_v2" env FAKE_CUDA_FAIL_COPY=3 "$VF" load "$M" --device cuda:0 --staging-mb 1
clean "copy fails"
check_err "event fails" 5 "cuEventSynchronize\|cuEventQuery" env FAKE_CUDA_FAIL_EVENT=2 FAKE_CUDA_DELAY_US=500 "$VF" load "$M" --device cuda:0 --staging-mb 1
clean "event fails"
check_err "verify catches a flipped bit" 5 "verify failed" env FAKE_CUDA_CORRUPT=4 "$VF" load "$M" --device cuda:0 --staging-mb 1 --verify
clean "verify catches a flipped bit"
check_json "device map auto" 0 '.device == "map" and (.devices | length) >= 2' \
    env FAKE_CUDA_DEVICES=2 "$VF" load "$M" --device-map auto --json
clean "device map auto"

# An interrupt mid-load: exit 4, everything released.
FAKE_CUDA_DELAY_US=100000 "$VF" load "$M" --device cuda:0 --staging-mb 1 >"$TMP/out" 2>"$TMP/err" &
pid=$!
sleep 0.5
kill -INT $pid
wait $pid
rc=$?
if [ $rc -eq 4 ] && grep -q '^vramfit: .*interrupted' "$TMP/err"; then ok "sigint"; else fail "sigint" "exit $rc: $(cat "$TMP/err")"; fi
clean "sigint"
unset FAKE_CUDA_REPORT
# A second interrupt while the drain waits on slow copies (5 s each) ends the process at once.
FAKE_CUDA_DELAY_US=5000000 "$VF" load "$M" --device cuda:0 --staging-mb 1 >"$TMP/out" 2>"$TMP/err" &
pid=$!
sleep 0.5
kill -INT $pid
sleep 0.3
kill -INT $pid
t0=$(date +%s)
wait $pid
rc=$?
t1=$(date +%s)
if [ $rc -eq 130 ] && [ $((t1 - t0)) -le 2 ]; then ok "second sigint"; else fail "second sigint" "exit $rc after $((t1 - t0)) s"; fi

check_err "no driver" 5 "cannot load the CUDA driver" env VF_CUDA_LIBRARY=/nonexistent/libcuda.so.1 "$VF" load "$M" --device cuda:0
check_err "no such gpu" 5 "no such device" "$VF" load "$M" --device cuda:7
check_err "bad device" 2 "host, null or cuda:N" "$VF" load "$M" --device tpu
check_err "bad staging" 2 "staging-mb" "$VF" load "$M" --staging-mb 0
check_err "no model" 2 "MODEL" "$VF" load
check_err "missing file" 3 "no such file" "$VF" load "$TMP/none.safetensors"
head -c 4000000 "$M" >"$TMP/short.safetensors"
check_err "truncated file" 3 "past the end\\|truncated" "$VF" load "$TMP/short.safetensors"
printf '{"*": "tpu"}' >"$TMP/map.json"
check_err "bad device map" 2 "not a device" "$VF" load "$M" --device-map "$TMP/map.json"
