#!/bin/sh
# bench/serve.sh — 'vramfit serve' under load on loopback: 200 requests at
# once (the page's five kinds in turn), each with a 90 s deadline, against
# the same requests made one at a time in the same run. Prints how many were
# answered and the latency p50 / p99; a benchmark, not a timed test.
B=${BUILD:-build}
LOAD="$B/bench/serve_load"
[ -x "$LOAD" ] || { echo "bench/serve.sh: $LOAD not built (make bench)"; exit 1; }
. bench/serve.inc
start_serve
M="model=meta-llama/Llama-3.1-70B&runtime=vllm&context=8192"
set -- "/api/estimate?$M&gpu=H100x2" "/api/fit?$M&gpu=H100x2" "/api/fit?$M" "/api/sweep?$M&gpu=H100x2&over=context" \
    "/api/plan?$M&gpu=H100x2&emit=vllm"
echo "one at a time (5 x 4 requests, the baseline):"
timeout 120 "$LOAD" "$port" 1 "$@" >/dev/null
k=0
: >"$TMP/alone"
while [ $k -lt 4 ]; do
    for p in "$@"; do timeout 120 "$LOAD" "$port" 1 "$p" | sed -n 's/^latency p50 \([0-9]*\) ms.*/\1/p' >>"$TMP/alone"; done
    k=$((k + 1))
done
sort -n "$TMP/alone" | awk '{ a[NR] = $1 } END { printf "  p50 %d ms, max %d ms (%d requests, server --jobs = CPUs: %s)\n", a[int((NR + 1) / 2)], a[NR], NR, "'"$(nproc)"'" }'
echo "200 at once:"
timeout 300 "$LOAD" "$port" 200 "$@" >"$TMP/load"
rc=$?
sed 's/^/  /' "$TMP/load"
kill $pid
wait $pid 2>/dev/null
exit $rc
