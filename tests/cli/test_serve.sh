# vramfit serve: the page, the API (same JSON as the commands' --json), the
# Host check, and a clean stop on SIGINT. Uses build/tests/http_get (no curl).
. tests/cli/lib.sh
GET=${BUILD:-build}/tests/http_get
if [ ! -x "$GET" ]; then fail "serve client" "$GET not built"; exit 1; fi

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
    fail "serve starts" "no 'serving on' line: $(head -c 300 "$TMP/serve.err")"
    kill -9 $pid 2>/dev/null
    exit 1
fi
ok "serve starts on a free port"

# get NAME PATH [HOST] — status in $TMP/code, body in $TMP/body
get() {
    "$GET" "$port" "$2" ${3:+"$3"} >"$TMP/resp" || { fail "$1" "no response"; return 1; }
    head -n 1 "$TMP/resp" >"$TMP/code"
    tail -n +2 "$TMP/resp" >"$TMP/body"
}
# expect NAME CODE JQ_EXPR PATH [HOST]
expect() {
    name=$1 code=$2 expr=$3 path=$4
    get "$name" "$path" "$5" || return 1
    if [ "$(cat "$TMP/code")" != "$code" ]; then
        fail "$name" "status $(cat "$TMP/code"), expected $code: $(head -c 200 "$TMP/body")"
    elif [ -n "$expr" ] && [ "$(jq -e "$expr" <"$TMP/body" 2>&1)" != "true" ]; then
        fail "$name" "jq '$expr' not true on: $(head -c 200 "$TMP/body")"
    else
        ok "$name"
    fi
}

get "page" / && if [ "$(cat "$TMP/code")" = 200 ] && grep -q '<title>vramfit</title>' "$TMP/body" &&
    grep -q '/api/estimate' "$TMP/body"; then ok "GET / serves the page"; else fail "GET / serves the page" "$(head -c 200 "$TMP/resp")"; fi

# A small Llama-layout file written by hand (fuzz seed): 84 parameters, 176 bytes of tensors.
cp fuzz/corpus/safetensors/llama_small "$TMP/m.safetensors"
expect "inspect a file" 200 '.format == "safetensors" and .params == 84 and .bytes == 176 and .dtypes.BF16.params == 80' \
    "/api/inspect?model=$TMP/m.safetensors"
"$VF" inspect --json "$TMP/m.safetensors" >"$TMP/cli.json" 2>/dev/null
if cmp -s "$TMP/cli.json" "$TMP/body"; then ok "inspect answer = inspect --json"; else fail "inspect answer = inspect --json" "$(diff "$TMP/cli.json" "$TMP/body" | head -3)"; fi
expect "inspect a missing file" 422 '.exit == 3 and (.error | test("no such file"))' "/api/inspect?model=/nonexistent/x.safetensors"
cp fuzz/corpus/safetensors/overlap "$TMP/bad.safetensors"
expect "inspect a corrupt file (url-encoded name)" 422 '.exit == 3 and (.error | test("overlap"))' \
    "/api/inspect?model=$TMP/bad%2Esafetensors"
expect "no model" 400 '.exit == 2' "/api/inspect"
expect "unknown parameter" 400 '.error | test("bogus")' "/api/inspect?model=x&bogus=1"
expect "model that looks like an option" 422 '.exit == 3' "/api/inspect?model=--help"
expect "bad mode" 400 '.error | test("mode")' "/api/estimate?model=x&mode=fly"
expect "unknown page" 404 '.exit == 2' "/nope"
expect "foreign Host refused" 403 '.error | test("host")' "/api/inspect?model=x" "evil.example:$port"
expect "localhost Host accepted" 422 '.exit == 3' "/api/inspect?model=/nonexistent" "localhost:$port"

# estimate and fit answer exactly what the commands print (or their error line)
same_as_cli() {
    name=$1 path=$2
    shift 2
    get "$name" "$path" || return 1
    "$VF" "$@" >"$TMP/cli.out" 2>"$TMP/cli.err"
    rc=$?
    if [ $rc -eq 0 ] || { [ $rc -eq 1 ] && [ "$1" = fit ]; }; then
        if cmp -s "$TMP/cli.out" "$TMP/body"; then ok "$name"; else fail "$name" "API differs from CLI: $(diff "$TMP/cli.out" "$TMP/body" | head -3)"; fi
    else
        want=$(sed -n '1s/^vramfit: //p' "$TMP/cli.err")
        gotmsg=$(jq -r .error <"$TMP/body")
        gotrc=$(jq -r .exit <"$TMP/body")
        if [ "$gotmsg" = "$want" ] && [ "$gotrc" = "$rc" ]; then ok "$name"; else fail "$name" "API error '$gotmsg' ($gotrc), CLI '$want' ($rc)"; fi
    fi
}
same_as_cli "estimate = estimate --json" "/api/estimate?model=Qwen/Qwen3-8B&context=4096&batch=2" \
    estimate --json --context=4096 --batch=2 -- Qwen/Qwen3-8B
same_as_cli "training estimate = estimate --train --json" "/api/estimate?model=Qwen/Qwen3-8B&mode=training" \
    estimate --json --train -- Qwen/Qwen3-8B
same_as_cli "fit = fit --json" "/api/fit?model=Qwen/Qwen3-8B&gpu=RTX-4090" fit --json --gpu=RTX-4090 -- Qwen/Qwen3-8B

kill -INT $pid
i=0
while kill -0 $pid 2>/dev/null && [ $i -lt 50 ]; do
    sleep 0.1
    i=$((i + 1))
done
if kill -0 $pid 2>/dev/null; then
    kill -9 $pid
    fail "SIGINT stops the server" "still running after 5 s"
else
    wait $pid
    rc=$?
    if [ $rc -eq 0 ] && grep -q '^vramfit: stopped' "$TMP/serve.err"; then ok "SIGINT stops the server"; else fail "SIGINT stops the server" "exit $rc: $(tail -c 200 "$TMP/serve.err")"; fi
fi
check_err "serve bad --addr" 2 "not HOST:PORT" "$VF" serve --addr nonsense
check_err "serve extra argument" 2 "unexpected argument" "$VF" serve extra
