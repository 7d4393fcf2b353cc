#!/bin/sh
# bench/page.sh — the page of 'vramfit serve' in chromium: first paint and the answer, from the
# browser's performance entries (bench/page.mjs). The targets are first paint under 100 ms and the
# answer under 400 ms on an idle machine; it prints the load average, so read it with that.
B=${BUILD:-build}
[ -x /usr/bin/chromium ] && [ -f tests/page/node_modules/playwright-core/package.json ] ||
    { echo "bench/page.sh: needs /usr/bin/chromium and tests/page/node_modules (make deps)"; exit 1; }
. bench/serve.inc
start_serve
timeout 300 node bench/page.mjs "$port" "${1:-10}"
rc=$?
kill $pid
wait $pid 2>/dev/null
exit $rc
