#!/bin/sh
# bench/oom.sh — vramfit oom over a generated log of OOM_BENCH_MIB MiB (default
# 256: training-loop lines and tracebacks, one DeepSpeed OOM at the very end),
# against `wc -l` reading the same bytes in the same run: CPU seconds, the
# ratio, peak RSS (the scanner's window is 64 KiB whatever the log's size).
B=${BUILD:-build}
MIB=${OOM_BENCH_MIB:-256}
VF=$B/vramfit
LOG=$B/bench/oom-bench.log
mkdir -p "$B/bench"
[ -x "$VF" ] || { echo "bench/oom.sh: no $VF"; exit 1; }
line="INFO 06-26 09:27:15 [core.py:519] step 1234: loss=2.3456 lr=1e-4 tokens/s=12345.6 forward backward"
awk -v mib="$MIB" -v l="$line" 'BEGIN {
    tb = "Traceback (most recent call last):\n  File \"/x/site-packages/torch/nn/modules/module.py\", line 1786, in _call_impl\n    return forward_call(*args, **kwargs)"
    n = 0; while (n < mib * 1048576) { for (i = 0; i < 200; i++) { print l; n += length(l) + 1 } print tb; n += length(tb) + 1 } }' >"$LOG"
cat tests/data/oom/torch2_deepspeed_zero3_step.log >>"$LOG"
cat "$LOG" >/dev/null # page cache
cpu() { /usr/bin/time -f "%U %S %M" "$@" 2>&1 >/dev/null | tail -n 1; }
if [ ! -x /usr/bin/time ]; then echo "bench/oom.sh: no /usr/bin/time"; rm -f "$LOG"; exit 0; fi
set -- $(cpu "$VF" oom "$LOG" --json)
T_OOM=$(awk -v u="$1" -v s="$2" 'BEGIN { print u + s }'); RSS=$3
set -- $(cpu wc -l "$LOG")
T_WC=$(awk -v u="$1" -v s="$2" 'BEGIN { print u + s }')
R=$("$VF" oom "$LOG" --json | jq -c '{engine, phase, errors, line}' 2>/dev/null)
echo "oom over $MIB MiB: ${T_OOM} s CPU, peak RSS ${RSS} KiB; wc -l: ${T_WC} s; ratio $(awk -v a="$T_OOM" -v b="$T_WC" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "n/a" }'); found $R"
rm -f "$LOG"
