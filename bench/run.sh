#!/bin/sh
# Runs every benchmark against $BUILD (default build/); each prints its
# figures and its ratio against a baseline measured in the same run.
B=${BUILD:-build}
status=0
for b in "$B"/bench/bench_*; do
    [ -x "$b" ] || continue
    echo "== $(basename "$b")"
    "$b" || status=1
done
for s in bench/*.sh; do
    case "$s" in */run.sh | */gpu-check.sh) continue ;; esac
    echo "== $s"
    BUILD="$B" sh "$s" || status=1
done
exit $status
