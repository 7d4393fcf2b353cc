#!/bin/sh
# The closing lines of make test, from the passes tests/run.sh recorded in
# build/test-counts ("BUILD CASES_OK CASES_FAILED REPLAYS_OK REPLAYS_FAILED
# DOCS_OK DOCS_FAILED" per pass). The first pass is the plain build; a later
# pass (ASan+UBSan) runs the same cases again, so it is reported beside the
# count, not added to it. The last line counts test cases: those of the first
# pass, less any a later pass failed; failures of every pass are counted.
f=${1:-build/test-counts}
if [ ! -s "$f" ]; then
    echo "0 passed, 1 failed"
    exit 1
fi
awk '
NR == 1 { cp = $2; cf = $3; rp = $4; rf = $5; dp = $6; df = $7; next }
{ printf "same cases again in %s: %d passed, %d failed\n", $1, $2, $3
  cf += $3; cp -= $3; rf += $5; df += $7 }
END {
    if (cp < 0) cp = 0
    printf "corpus replays: %d inputs, %d failed (every pass)\n", rp, rf
    printf "documentation checks: %d passed, %d failed (every pass)\n", dp, df
    printf "%d passed, %d failed\n", cp, cf + rf + df
    exit (cf + rf + df > 0)
}' "$f"
