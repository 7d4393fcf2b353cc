# The page of 'vramfit serve' in a real browser: Debian's chromium driven by
# playwright-core (tests/page, pinned in its package-lock.json; make deps or
# make check installs it). tests/page/page.test.mjs prints a line per case and
# writes screenshots to $BUILD/page/ for people to look at.
. tests/cli/lib.sh
if [ ! -x /usr/bin/chromium ] || ! command -v node >/dev/null 2>&1 || [ ! -f tests/page/node_modules/playwright-core/package.json ]; then
    fail "page: browser" "needs /usr/bin/chromium, node and tests/page/node_modules (run 'make deps')"
    exit 1
fi
# port_of ERRFILE PID: the port a starting 'vramfit serve' prints on stderr
# (waits up to 10 s, less when it exits); "" when none.
port_of() {
    n=0
    while [ $n -lt 100 ]; do
        p=$(sed -n 's|^vramfit: serving on http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$1")
        [ -n "$p" ] && { echo "$p"; return; }
        kill -0 "$2" 2>/dev/null || return
        sleep 0.1
        n=$((n + 1))
    done
}
: >"$TMP/serve.err"
"$VF" serve --addr 127.0.0.1:0 2>"$TMP/serve.err" &
pid=$!
port=$(port_of "$TMP/serve.err" $pid)
if [ -z "$port" ]; then
    fail "page: serve starts" "$(head -c 300 "$TMP/serve.err")"
    kill $pid 2>/dev/null
    exit 1
fi
# A second server with --hub, against the stand-in Hub (tests/hub/hubserver.c,
# loopback): the page with a Hub id (its own caches, offline unset for it only).
B=${BUILD:-build}
hubargs=
if [ -x "$B/tests/hubserver" ] && [ -x "$B/tests/gen_repo" ] && "$B/tests/gen_repo" "$TMP/repos" >/dev/null; then
    "$B/tests/hubserver" --root "$TMP/repos" --port-file "$TMP/hubport" --max-seconds 300 &
    hspid=$!
    w=0
    while [ ! -s "$TMP/hubport" ] && [ $w -lt 50 ]; do sleep 0.1; w=$((w + 1)); done
    read -r api _ <"$TMP/hubport"
    : >"$TMP/serve2.err"
    env -u HF_HUB_OFFLINE HF_ENDPOINT="http://127.0.0.1:$api" XDG_CACHE_HOME="$TMP/xdg" HF_HUB_CACHE="$TMP/nohf" \
        NO_PROXY='*' "$VF" serve --hub --addr 127.0.0.1:0 2>"$TMP/serve2.err" &
    pid2=$!
    port2=$(port_of "$TMP/serve2.err" $pid2)
    [ -n "$port2" ] && hubargs="$port2 $api"
fi
[ -n "$hubargs" ] || fail "page: a server with --hub and the stand-in Hub" "did not start"
# A third server with --models-dir holding a PyTorch memory snapshot (tests/cli/gen_snapshot.py).
snapenv=
mkdir -p "$TMP/snapdir"
if /usr/bin/python3 tests/cli/gen_snapshot.py "$TMP/snapgen" >/dev/null 2>&1 && cp "$TMP/snapgen/leak.pickle" "$TMP/snapdir/"; then
    : >"$TMP/serve3.err"
    "$VF" serve --addr 127.0.0.1:0 --models-dir "$TMP/snapdir" 2>"$TMP/serve3.err" &
    pid3=$!
    port3=$(port_of "$TMP/serve3.err" $pid3)
    [ -n "$port3" ] && snapenv="SNAP_PORT=$port3 SNAP_FILE=$TMP/snapdir/leak.pickle"
fi
# shellcheck disable=SC2086 # two words, or none
# shellcheck disable=SC2086 # two assignments, or none
timeout 300 env HF_ENDPOINT="http://127.0.0.1:$api" NO_PROXY='*' $snapenv node tests/page/page.test.mjs "$port" "$VF" "$B/page" $hubargs >"$TMP/page.out" 2>&1
rc=$?
cat "$TMP/page.out"
grep -q '^# page: every check ran' "$TMP/page.out" || fail "page: browser run" "stopped before its last check: $(tail -c 300 "$TMP/page.out")"
[ $rc -eq 0 ] || [ $rc -eq 1 ] || fail "page: browser run" "exit $rc"
kill $pid ${pid2:-} ${pid3:-} ${hspid:-} 2>/dev/null
wait $pid 2>/dev/null
exit 0
