#!/bin/sh
# Runs every test against the build in $BUILD (default build/): cmocka unit
# tests, CLI tests (tests/cli/*.sh), the corrupt-input matrix and the fuzz
# corpus replay. Test cases, corpus replays and documentation checks are
# counted apart: appends "BUILD CASES_OK CASES_FAILED REPLAYS_OK REPLAYS_FAILED
# DOCS_OK DOCS_FAILED" to build/test-counts (tests/summary.sh reads it) and
# prints what this pass ran.
#
# Every test runs under a time limit (timeout(1), which ends the test's whole
# process group): VF_UNIT_TIMEOUT seconds per unit-test binary and fuzz
# replay (default 300), VF_SUITE_TIMEOUT per shell suite (default 600; the
# sanitizer pass is the slow one). A test past its limit counts as a failure,
# with a line "FAIL NAME: timed out after N s".
B=${BUILD:-build}
UNIT_LIMIT=${VF_UNIT_TIMEOUT:-300}
SUITE_LIMIT=${VF_SUITE_TIMEOUT:-600}
command -v timeout >/dev/null 2>&1 || { echo "FAIL tests/run.sh: timeout(1) is missing (Debian: coreutils)"; exit 1; }
# limited SECONDS CMD... — CMD under the limit; exit 124 when it ran past it
# (timeout sends TERM, then KILL 10 s later if it is still there: a 137 once
# the limit has passed reads as the same). No test reads the terminal: stdin
# is /dev/null.
limited() {
    lim=$1
    shift
    t0=$(date +%s)
    timeout -k 10 "$lim" "$@" </dev/null
    lrc=$?
    [ "$lrc" -eq 137 ] && [ $(($(date +%s) - t0)) -ge "$lim" ] && lrc=124
    return "$lrc"
}
export VF="$B/vramfit" BUILD="$B"
# No test reaches the network or reads this machine's caches and token:
# test_hub.sh sets up its own stand-in Hub and caches.
mkdir -p "$B/test-home/hf" "$B/test-home/xdg"
export HF_HUB_OFFLINE=1 HF_HOME="$B/test-home/hf" HF_HUB_CACHE="$B/test-home/hf/hub" XDG_CACHE_HOME="$B/test-home/xdg"
unset HF_TOKEN HF_TOKEN_PATH HF_ENDPOINT
pass=0
fail=0
rpass=0
rfail=0
dpass=0
dfail=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

for t in "$B"/tests/test_*; do
    [ -x "$t" ] || continue
    limited "$UNIT_LIMIT" "$t" >"$log" 2>&1
    rc=$?
    if [ "$rc" -eq 124 ]; then echo "FAIL $(basename "$t"): timed out after $UNIT_LIMIT s" >>"$log"; fi
    p=$(sed -n 's/.*\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
    f=$(sed -n 's/.*\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
    p=${p:-0}
    f=${f:-0}
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    pass=$((pass + p))
    fail=$((fail + f))
    if [ "$f" -ne 0 ]; then
        echo "FAIL $(basename "$t"):"
        grep -v '^\[ \(RUN\|       OK\) ' "$log" | tail -n 40
    else
        echo "ok   $(basename "$t") ($p)"
    fi
done

# Shell suites print "ok NAME" or "FAIL NAME: why" per case.
for s in tests/cli/*.sh tests/corrupt/run.sh; do
    [ -f "$s" ] || continue
    case "$s" in */lib.sh) continue ;; esac
    limited "$SUITE_LIMIT" sh "$s" >"$log" 2>&1
    rc=$?
    if [ "$rc" -eq 124 ]; then echo "FAIL $s: timed out after $SUITE_LIMIT s" >>"$log"; fi
    p=$(grep -c '^ok ' "$log")
    f=$(grep -c '^FAIL ' "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "FAIL $s exited $rc"; fi
    case "$s" in
    */test_docs.sh | */test_examples.sh) # documentation checks, not test cases
        dpass=$((dpass + p))
        dfail=$((dfail + f))
        ;;
    *)
        pass=$((pass + p))
        fail=$((fail + f))
        ;;
    esac
    if [ "$f" -ne 0 ]; then
        echo "FAIL $s:"
        grep -v '^ok ' "$log" | tail -n 40
    else
        echo "ok   $s ($p)"
    fi
done

# Fuzz corpora replayed through each harness (one case per corpus file).
for r in "$B"/replay/fuzz_*; do
    [ -x "$r" ] || continue
    name=$(basename "$r")
    dir="fuzz/corpus/${name#fuzz_}"
    [ -d "$dir" ] || continue
    limited "$UNIT_LIMIT" "$r" "$dir" >"$log" 2>&1
    rc=$?
    if [ "$rc" -eq 124 ]; then echo "FAIL replay $name: timed out after $UNIT_LIMIT s" >>"$log"; fi
    n=$(ls "$dir" | wc -l)
    if [ "$rc" -eq 0 ]; then
        rpass=$((rpass + n))
        echo "ok   replay $name ($n inputs)"
    else
        rfail=$((rfail + 1))
        echo "FAIL replay $name:"
        tail -n 30 "$log"
    fi
done

mkdir -p build
echo "$B $pass $fail $rpass $rfail $dpass $dfail" >>build/test-counts
echo "$B: test cases $pass passed, $fail failed; corpus replays $rpass inputs, $rfail failed; documentation checks $dpass passed, $dfail failed"
[ "$fail" -eq 0 ] && [ "$rfail" -eq 0 ] && [ "$dfail" -eq 0 ]
