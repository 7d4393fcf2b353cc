# vramfit serve --hub: the page names Hugging Face Hub ids (org/name,
# hf://org/name[@rev][:QUANT]) against the stand-in Hub (tests/hub/hubserver.c,
# loopback only). Without --hub such a name is refused with a line naming
# --hub; with it the answer is byte for byte the CLI's for hf://ID, errors are
# the command's own line (not the "answered by" line before it), nothing but
# a well-formed id reaches the Hub, a folder of that name inside --models-dir
# is read first, a name the command would take for a file where the server
# runs is refused, and HF_HUB_OFFLINE=1 in the server's environment answers
# from the caches only. Expected figures: the generator's own sums
# (tests/hub/gen_repo.c), and the CLI's --json for the same id.
. tests/cli/lib.sh
GET=${BUILD:-build}/tests/http_get
HS=${BUILD:-build}/tests/hubserver
GEN=${BUILD:-build}/tests/gen_repo
for x in "$GET" "$HS" "$GEN"; do [ -x "$x" ] || { fail "serve --hub: $x" "not built"; exit 1; }; done
unset HF_HUB_OFFLINE HF_TOKEN HF_TOKEN_PATH http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy
export NO_PROXY='*' no_proxy='*' HF_HOME="$TMP/hfhome" HF_HUB_CACHE="$TMP/hfhub" XDG_CACHE_HOME="$TMP/xdg"
"$GEN" "$TMP/repos" >"$TMP/expected" || { fail "serve --hub: generate" "gen_repo failed"; exit 0; }
want() { awk -v r="$1" '$1 == r { print $2, $3 }' "$TMP/expected"; }

"$HS" --root "$TMP/repos" --port-file "$TMP/hubport" --gated gatedorg/secret --token hf_test_token --max-seconds 120 &
hspid=$!
w=0
while [ ! -s "$TMP/hubport" ] && [ $w -lt 50 ]; do sleep 0.1; w=$((w + 1)); done
read -r API _ <"$TMP/hubport"
export HF_ENDPOINT="http://127.0.0.1:$API"
hub_stat() { "$GET" "$API" /_stats | tail -n 1 | jq -r ".$1"; }
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; kill $hspid 2>/dev/null; rm -rf "$TMP"' EXIT

mkdir -p "$TMP/cwd"
SERVE_CWD="$TMP/cwd"
. tests/cli/serve.inc
stop_server() { kill $pid 2>/dev/null; wait $pid 2>/dev/null; pid=; }
# expect NAME CODE JQ_EXPR PATH — status and a jq test on the body ($TMP/body)
expect() {
    "$GET" "$port" "$4" >"$TMP/resp" || { fail "$1" "no response"; return 1; }
    code=$(head -n 1 "$TMP/resp")
    tail -n +2 "$TMP/resp" >"$TMP/body"
    if [ "$code" != "$2" ]; then
        fail "$1" "status $code, expected $2: $(head -c 300 "$TMP/body")"
        return 1
    elif [ -n "$3" ] && [ "$(jq -e "$3" <"$TMP/body" 2>&1)" != "true" ]; then
        fail "$1" "jq '$3' not true on: $(head -c 300 "$TMP/body")"
        return 1
    fi
    ok "$1"
}
# exact NAME REPO PATH — the generator's params and bytes
exact() {
    p=$(want "$2")
    expect "$1" 200 ".params == ${p% *} and .bytes == ${p#* }" "$3"
}
# same_as_cli NAME PATH CMD... — the body is what the CLI prints
same_as_cli() {
    name=$1 path=$2
    shift 2
    expect "$name" 200 "" "$path" || return 1
    "$VF" "$@" >"$TMP/cli.out" 2>/dev/null
    cmp -s "$TMP/cli.out" "$TMP/body" && ok "$name: = the CLI's --json" || fail "$name: = the CLI's --json" "$(diff "$TMP/cli.out" "$TMP/body" | head -3)"
}

# ---- without --hub: refused, the Hub never asked ----
start_server
before=$(hub_stat requests)
expect "serve: a Hub id without --hub is refused, naming --hub" 404 '.exit == 2 and (.error | test("fp8org/mixed: not a catalog model.*start it with --hub"))' \
    "/api/inspect?model=fp8org/mixed"
expect "serve: params say the server reads no Hub ids" 200 '.server.hub == false and .server.files == false' "/api/params"
[ "$(hub_stat requests)" -eq "$before" ] && ok "serve: without --hub the Hub was not asked" || fail "serve: without --hub the Hub was not asked" "$before then $(hub_stat requests) requests"
stop_server

# ---- with --hub ----
start_server --hub --jobs 2
expect "serve --hub: params say so" 200 '.server.hub == true' "/api/params"
exact "serve --hub: org/name read from the Hub, exact params and bytes" fp8org/mixed "/api/inspect?model=fp8org/mixed"
same_as_cli "serve --hub: inspect" "/api/inspect?model=fp8org/mixed" inspect --json hf://fp8org/mixed
before=$(hub_stat requests)
same_as_cli "serve --hub: estimate of a Hub id" "/api/estimate?model=fp8org/mixed&context=2048" estimate --json --context 2048 hf://fp8org/mixed
[ "$(hub_stat requests)" -eq "$before" ] && ok "serve --hub: a second request answers from vramfit's cache" ||
    fail "serve --hub: a second request answers from vramfit's cache" "$before then $(hub_stat requests) requests"
exact "serve --hub: hf://org/name (url-encoded)" fp8org/mixed "/api/inspect?model=hf%3A%2F%2Ffp8org%2Fmixed"
exact "serve --hub: a GGUF repository by :QUANT" "gguforg/tiny-GGUF:Q8_0" "/api/inspect?model=gguforg/tiny-GGUF:Q8_0"
expect "serve --hub: a repository the Hub lacks: the command's line, exit 3" 422 \
    '.exit == 3 and (.error | test("has no repository .noorg/nothing.")) and (.error | test("answered by") | not)' "/api/inspect?model=noorg/nothing"
expect "serve --hub: gated without a token: the line naming HF_TOKEN" 500 '.exit == 4 and (.error | test("HF_TOKEN"))' \
    "/api/inspect?model=gatedorg/secret"
before=$(hub_stat requests)
expect "serve --hub: not a Hub id (a path): refused before the Hub" 404 '.exit == 2 and (.error | test("nor a Hub id"))' \
    "/api/inspect?model=..%2Fetc%2Fpasswd"
expect "serve --hub: not a Hub id (two slashes)" 404 '.error | test("nor a Hub id")' "/api/inspect?model=a/b/c"
expect "serve --hub: not a Hub id (a space)" 404 '.error | test("nor a Hub id")' "/api/inspect?model=org/na%20me"
[ "$(hub_stat requests)" -eq "$before" ] && ok "serve --hub: a malformed name never reaches the Hub" || fail "serve --hub: a malformed name never reaches the Hub" "$before then $(hub_stat requests)"
mkdir -p "$TMP/cwd/hf:/localorg/here"
expect "serve --hub: a name the command would open as a file where the server runs is refused" 403 '.error | test("names a file")' \
    "/api/inspect?model=localorg/here"
expect "serve --hub: an error after the model opened: its line, not the one naming the source" 400 \
    '.exit == 2 and (.error | test("needs the device memory")) and (.error | test("answered by") | not)' "/api/estimate?model=fp8org/mixed&runtime=vllm"
expect "serve --hub: --draft takes a Hub id too" 200 '.total_bytes > 0' "/api/estimate?model=Qwen/Qwen3-8B&draft=fp8org/mixed"
expect "serve --hub: --draft is fenced as the model (no path)" 404 '.error | test("nor a Hub id")' "/api/estimate?model=Qwen/Qwen3-8B&draft=/etc/passwd"
# a fit with the catalog's GPUs and a Hub model, as the page asks
expect "serve --hub: fit of a Hub id" 200 '.needed_bytes > 0' "/api/fit?model=fp8org/mixed&gpu=RTX-4090"
[ "$(hub_stat cdn_tokens)" -eq 0 ] && ok "serve --hub: no token went to the CDN" || fail "serve --hub: no token went to the CDN" "$(hub_stat cdn_tokens)"
stop_server

# the token from the server's environment, as the CLI reads it
HF_TOKEN=hf_test_token start_server --hub
exact "serve --hub: gated with HF_TOKEN in the server's environment" gatedorg/secret "/api/inspect?model=gatedorg/secret"
[ "$(hub_stat cdn_tokens)" -eq 0 ] && ok "serve --hub: the token never went to the CDN" || fail "serve --hub: the token never went to the CDN" "$(hub_stat cdn_tokens)"
stop_server

# ---- --models-dir and --hub: a folder of that name inside is read first ----
mkdir -p "$TMP/models/fp8org/mixed"
cp fuzz/corpus/safetensors/llama_small "$TMP/models/fp8org/mixed/model.safetensors"
start_server --hub --models-dir "$TMP/models"
expect "serve --hub --models-dir: org/name as a folder inside is the folder (84 parameters)" 200 '.params == 84' "/api/inspect?model=fp8org/mixed"
exact "serve --hub --models-dir: hf:// is always the Hub" fp8org/mixed "/api/inspect?model=hf://fp8org/mixed"
exact "serve --hub --models-dir: an id with no folder goes to the Hub" "gguforg/tiny-GGUF:Q4_K_M" "/api/inspect?model=gguforg/tiny-GGUF"
stop_server

# ---- HF_HUB_OFFLINE=1: the caches only ----
HF_HUB_OFFLINE=1 start_server --hub
before=$(hub_stat requests)
exact "serve --hub offline: a repository in vramfit's cache answers" fp8org/mixed "/api/inspect?model=fp8org/mixed"
expect "serve --hub offline: one not cached: the command's line, exit 3" 422 '.exit == 3 and (.error | test("offline"))' \
    "/api/inspect?model=gguforg/tiny-GGUF:BF16"
[ "$(hub_stat requests)" -eq "$before" ] && ok "serve --hub offline: the Hub was not asked" || fail "serve --hub offline: the Hub was not asked" "$before then $(hub_stat requests)"
stop_server
exit 0
