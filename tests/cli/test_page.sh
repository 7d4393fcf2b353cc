# The page of 'vramfit serve' in a real browser: Debian's chromium driven by
# playwright-core (tests/page, pinned in its package-lock.json; make deps or
# make check installs it). tests/page/page.test.mjs prints a line per case and
# writes screenshots to $BUILD/page/ for people to look at.
. tests/cli/lib.sh
if [ ! -x /usr/bin/chromium ] || ! command -v node >/dev/null 2>&1 || [ ! -f tests/page/node_modules/playwright-core/package.json ]; then
    fail "page: browser" "needs /usr/bin/chromium, node and tests/page/node_modules (run 'make deps')"
    exit 1
fi
: >"$TMP/serve.err"
"$VF" serve --addr 127.0.0.1:0 2>"$TMP/serve.err" &
pid=$!
port=""
i=0
while [ $i -lt 100 ]; do
    port=$(sed -n 's|^vramfit: serving on http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$TMP/serve.err")
    [ -n "$port" ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
    i=$((i + 1))
done
if [ -z "$port" ]; then
    fail "page: serve starts" "$(head -c 300 "$TMP/serve.err")"
    kill $pid 2>/dev/null
    exit 1
fi
timeout 300 node tests/page/page.test.mjs "$port" "$VF" "${BUILD:-build}/page"
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 1 ] || fail "page: browser run" "exit $rc"
kill $pid 2>/dev/null
wait $pid 2>/dev/null
exit 0
