#!/bin/sh
# Runs every benchmark; each prints its figures and its ratio against a
# baseline measured in the same run.
B=${BUILD:-build}
set -e
"$B/bench/bench_inspect"
