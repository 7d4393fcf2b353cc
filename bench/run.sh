#!/bin/sh
# Runs the benchmarks of bench/ against $BUILD (default build/), one line each.
B=${BUILD:-build}
status=0
"$B/bench/bench_inspect_gguf" || status=1
exit $status
