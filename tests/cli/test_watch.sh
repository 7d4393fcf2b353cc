# vramfit watch against the fake NVML (tests/fake/fake_nvml.c) with a real
# child process. The fake's timeline is scripted by step (the memory queries
# of GPU 0), and waits at a row until the processes it names exist, so the
# figures below are exact however slow the machine; times are only ordered.
# The child waits for the fake's "done" file, so it sees the whole timeline.
. tests/cli/lib.sh
MIB=1048576
FAKE=${BUILD:-build}/fake
[ -f "$FAKE/libnvidia-ml.so.1" ] || { fail "watch: fake NVML" "no $FAKE/libnvidia-ml.so.1"; exit 0; }
case "$FAKE" in /*) ;; *) FAKE="$PWD/$FAKE" ;; esac
export VF_NVML_LIBRARY="$FAKE/libnvidia-ml.so.1" FAKE_CUDA_TOTAL_MB=24576 FAKE_NVML_DONE="$TMP/done"
T="timeout 60"

# C (the command, sh) and G (its background job) run until the timeline is done.
CHILD="while [ ! -e $TMP/done ]; do sleep 0.01; done & wait; echo child-out >&2; exit 3"
cat >"$TMP/script" <<'S'
0 0 used=1024
3 0 used=1536 C=512
5 0 used=2816 C=1024 G=512 O=256
7 0 used=2048 C=256 G=512
9 0 used=1280
S
export FAKE_NVML_SCRIPT="$TMP/script"

# baseline 1024 MiB; device peak 2816 MiB; the tree's own peak C + G = 1024 + 512
# MiB (O is another process: not counted); after 1280 MiB; exit 3 passed through.
rm -f "$TMP/done"
check_json "watch: baseline, peaks, after, exit status" 3 \
    ".exit_status == 3 and .interval_ms == 5 and (.gpus | length) == 1 and .gpus[0].baseline_bytes == 1024 * $MIB
     and .gpus[0].peak_bytes == 2816 * $MIB and .gpus[0].process_peak_bytes == 1536 * $MIB
     and .gpus[0].after_bytes == 1280 * $MIB and .gpus[0].total_bytes == 24576 * $MIB
     and .gpus[0].peak_at_s > 0 and .gpus[0].peak_at_s <= .seconds and .samples >= 5
     and .gpus[0].nvml_errors == [] and .estimate_bytes == null and .command[0] == \"sh\"" \
    $T "$VF" watch --interval 5 --json -- sh -c "$CHILD"
grep -q '^child-out$' "$TMP/err" && ok "watch: the command's stderr untouched" || fail "watch: stderr" "no child-out"
# stdout too: the command's lines first, then the report; --output puts the report in a file
rm -f "$TMP/done"
check_out "watch: the command's stdout untouched" 3 "^child-out$" \
    $T "$VF" watch --interval 5 --json --output "$TMP/w.json" -- sh -c "${CHILD%%>&2*} ; exit 3"
jq -e '.exit_status == 3 and .gpus[0].peak_bytes == 2816 * 1048576' "$TMP/w.json" >/dev/null &&
    ok "watch --output: the report in a file" || fail "watch --output" "$(head -c 200 "$TMP/w.json")"

rm -f "$TMP/done"
check_out "watch: the table" 3 "peak  *2.75 GiB at .* (the device; +1.75 GiB over before)" \
    $T "$VF" watch --interval 5 --csv "$TMP/s.csv" --svg "$TMP/s.svg" -- sh -c "$CHILD"
grep -q "command  *1.50 GiB" "$TMP/out" && ok "watch: table: the command's own peak" || fail "watch: table" "$(cat "$TMP/out")"
grep -q "after  *1.25 GiB" "$TMP/out" && ok "watch: table: after" || fail "watch: table after" "$(cat "$TMP/out")"
# the CSV: one row per sample, the scripted levels in order, the tree's as well
if head -n 1 "$TMP/s.csv" | grep -q '^t_s,gpu,used_bytes,process_bytes$' &&
    awk -F, 'NR > 1 { print $3 }' "$TMP/s.csv" | uniq | tr '\n' ' ' | grep -q "^1073741824 1610612736 2952790016 2147483648 1342177280 $" &&
    awk -F, 'NR > 1 && $3 == 2952790016 && $4 != 1610612736 { bad = 1 } END { exit bad }' "$TMP/s.csv"; then
    ok "watch: csv holds the timeline"
else
    fail "watch: csv" "$(head -c 400 "$TMP/s.csv")"
fi
grep -q '<svg' "$TMP/s.svg" && grep -q '<polyline' "$TMP/s.svg" && grep -q 'peak 2.75 GiB' "$TMP/s.svg" &&
    ok "watch: svg plot" || fail "watch: svg" "$(head -c 300 "$TMP/s.svg")"

# --estimate: the estimate's device memory beside the measured 1536 MiB, in percent
EST=$("$VF" estimate Qwen/Qwen3-0.6B --context 2048 --json | jq '.device_bytes // .per_gpu_bytes')
WANT=$(awk -v e="$EST" -v m=$((1536 * MIB)) 'BEGIN { printf "%.6f", 100 * (e - m) / m }')
rm -f "$TMP/done"
check_json "watch --estimate: the difference in percent" 3 \
    ".estimate_bytes == $EST and ((.estimate_diff_percent - $WANT) | fabs) < 1e-6" \
    $T "$VF" watch --interval 5 --json --estimate "Qwen/Qwen3-0.6B --context 2048" -- sh -c "$CHILD"
check_err "watch --estimate: a bad model stops before running" 3 "" \
    "$VF" watch --estimate "no/such-model-xyz" -- sh -c "touch $TMP/ran"
[ ! -e "$TMP/ran" ] && ok "watch --estimate: nothing ran" || fail "watch --estimate" "the command ran"

# errors during the run are reported, not fatal; a GPU lost on the way; two GPUs
cat >"$TMP/script2" <<'S'
0 0 used=1000
0 1 used=2000
2 0 used=1000 err=mem
2 1 used=2000 err=procs
4 0 used=3000 C=700
4 1 used=2500 err=lost
6 0 used=1100
S
rm -f "$TMP/done"
check_json "watch: NVML errors and a lost GPU, not fatal" 3 \
    '(.gpus | length) == 2 and .gpus[0].peak_bytes == 3000 * 1048576 and .gpus[0].process_peak_bytes == 700 * 1048576
     and .gpus[0].after_bytes == 1100 * 1048576 and .gpus[1].baseline_bytes == 2000 * 1048576
     and .gpus[1].peak_bytes == 2000 * 1048576 and .gpus[1].after_bytes == null
     and any(.gpus[0].nvml_errors[]; .query == "memory" and .count >= 1 and (.message | test("Unknown")))
     and any(.gpus[1].nvml_errors[]; .query == "processes" and (.message | test("Permissions")))
     and any(.gpus[1].nvml_errors[]; .query == "memory" and (.message | test("GPU is lost")))' \
    env FAKE_NVML_SCRIPT="$TMP/script2" FAKE_NVML_DEVICES=2 $T "$VF" watch --interval 5 --json -- sh -c "$CHILD"
grep -q "GPU 1: the memory query failed .* GPU is lost" "$TMP/err" && ok "watch: the lost GPU said on stderr" ||
    fail "watch: lost GPU on stderr" "$(cat "$TMP/err")"
rm -f "$TMP/done"
check_json "watch --gpu 1: that device only" 3 '(.gpus | length) == 1 and .gpus[0].index == 1' \
    env FAKE_NVML_SCRIPT="$TMP/script2" FAKE_NVML_DEVICES=2 $T "$VF" watch --gpu 1 --interval 5 --json -- sh -c "$CHILD"

# an old driver: the unversioned memory and process queries give the same figures
# (v1 used counts the driver's reserved memory: 100 MiB more everywhere)
rm -f "$TMP/done"
check_json "watch: an old driver's calls" 3 \
    ".gpus[0].baseline_bytes == 1124 * $MIB and .gpus[0].peak_bytes == 2916 * $MIB and .gpus[0].process_peak_bytes == 1536 * $MIB" \
    env VF_NVML_LIBRARY="$FAKE/old/libnvidia-ml.so.1" FAKE_NVML_RESERVED_MB=100 $T "$VF" watch --interval 5 --json -- sh -c "$CHILD"
rm -f "$TMP/done"
check_json "watch: the v2 query leaves the reserved memory out" 3 ".gpus[0].baseline_bytes == 1024 * $MIB" \
    env FAKE_NVML_RESERVED_MB=100 $T "$VF" watch --interval 5 --json -- sh -c "$CHILD"

# no driver: one line, exit 5, nothing run
check_err "watch: no driver" 5 "no NVIDIA driver" env VF_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 \
    "$VF" watch -- sh -c "touch $TMP/ran2"
[ ! -e "$TMP/ran2" ] && ok "watch: no driver, nothing ran" || fail "watch: no driver" "the command ran"
check_err "watch: a driver that does not start" 5 "Driver Not Loaded" env FAKE_NVML_FAIL_INIT=1 "$VF" watch -- true
check_err "watch: no device" 5 "no NVIDIA device" env FAKE_NVML_DEVICES=0 "$VF" watch -- true

# the command's own failures
unset FAKE_NVML_SCRIPT
check_err "watch: a command not found is 127" 127 "no-such-command-xyz" "$VF" watch -- no-such-command-xyz
check "watch: exit status 0" 0 "$VF" watch --interval 5 -- true
check "watch: killed by a signal is 128 + signal" 137 "$VF" watch --interval 5 -- sh -c 'kill -9 $$'

# SIGTERM to vramfit reaches the command (143 = 128 + SIGTERM); nothing is left behind
"$VF" watch --interval 5 -- sh -c "echo \$\$ > $TMP/pid; exec sleep 30" >/dev/null 2>&1 &
W=$!
for i in $(seq 1 300); do [ -s "$TMP/pid" ] && break; sleep 0.02; done
sleep 0.1
kill -TERM $W
wait $W
rc=$?
C=$(cat "$TMP/pid" 2>/dev/null)
[ "$rc" -eq 143 ] && ok "watch: SIGTERM forwarded, status passed through" || fail "watch: SIGTERM" "exit $rc"
[ -n "$C" ] && ! kill -0 "$C" 2>/dev/null && ok "watch: the child is gone" || fail "watch: child after SIGTERM" "pid $C alive"
# vramfit killed outright: the child goes with it (PR_SET_PDEATHSIG)
rm -f "$TMP/pid"
"$VF" watch --interval 5 -- sh -c "echo \$\$ > $TMP/pid; exec sleep 30" >/dev/null 2>&1 &
W=$!
for i in $(seq 1 300); do [ -s "$TMP/pid" ] && break; sleep 0.02; done
kill -KILL $W
wait $W 2>/dev/null
C=$(cat "$TMP/pid" 2>/dev/null)
for i in $(seq 1 100); do kill -0 "$C" 2>/dev/null || break; sleep 0.05; done
[ -n "$C" ] && ! kill -0 "$C" 2>/dev/null && ok "watch: killed, no child left behind" || fail "watch: SIGKILL" "pid $C alive"
# a daemon the command leaves running is stopped when the command ends
rm -f "$TMP/pid"
check "watch: the command's orphan" 0 "$VF" watch --interval 5 -- sh -c "(sleep 30 & echo \$! > $TMP/pid) ; exit 0"
C=$(cat "$TMP/pid" 2>/dev/null)
[ -n "$C" ] && ! kill -0 "$C" 2>/dev/null && ok "watch: the orphan is stopped" || fail "watch: orphan" "pid $C alive"

# --pid: a running process, until it exits; exit_status unknown
sleep 0.5 &
P=$!
check_json "watch --pid: until it exits" 0 ".exit_status == null and .pid == $P and .seconds > 0" \
    $T "$VF" watch --pid $P --interval 10 --json
check_err "watch --pid: no such process" 2 "no such process" "$VF" watch --pid 4000000
check_err "watch: no command" 2 "missing COMMAND" "$VF" watch
check_err "watch: --pid and a command" 2 "exclude" "$VF" watch --pid 1 -- true
check_err "watch: bad interval" 2 "interval" "$VF" watch --interval 0 -- true
check_err "watch: no such GPU" 2 "no such device" "$VF" watch --gpu 7 -- true
check_err "watch: unknown option" 2 "unknown option" "$VF" watch --bogus -- true
check_out "watch --help" 0 "usage: vramfit watch" "$VF" watch --help
