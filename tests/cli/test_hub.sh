# Hub ids against a stand-in Hub (tests/hub/hubserver.c, loopback only):
# exact params/bytes over HTTP for a sharded fp8 checkpoint with mixed dtypes,
# a GGUF repository and a gated one; only headers transferred; the token never
# sent to the CDN; vramfit's cache answering a second run; the local HF cache
# with symlinked blobs; every hostile-server fault one line, exit 3/4, nothing
# cached; the corrupt-input matrix replayed over HTTP. Expected figures: the
# generator's own sums over the tensors it wrote (tests/hub/gen_repo.c).
. tests/cli/lib.sh
HS="$BUILD/tests/hubserver"
GEN="$BUILD/tests/gen_repo"
GET="$BUILD/tests/http_get"
unset HF_HUB_OFFLINE HF_TOKEN HF_TOKEN_PATH http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy
export NO_PROXY='*' no_proxy='*' HF_HOME="$TMP/hfhome" HF_HUB_CACHE="$TMP/hfhub"
REPOS="$TMP/repos"
"$GEN" "$REPOS" >"$TMP/expected" || { fail "hub: generate" "gen_repo failed"; exit 0; }
want() { awk -v r="$1" '$1 == r { print $2, $3 }' "$TMP/expected"; }
HSPID=

start_hub() {
    rm -f "$TMP/port"
    "$HS" --root "$REPOS" --port-file "$TMP/port" --gated gatedorg/secret --token hf_test_token --max-seconds 90 "$@" &
    HSPID=$!
    w=0
    while [ ! -s "$TMP/port" ] && [ $w -lt 50 ]; do sleep 0.1; w=$((w + 1)); done
    read -r API CDN <"$TMP/port"
    export HF_ENDPOINT="http://127.0.0.1:$API"
}
stop_hub() { [ -n "$HSPID" ] && kill "$HSPID" 2>/dev/null && wait "$HSPID" 2>/dev/null; HSPID=; }
trap 'stop_hub; rm -rf "$TMP"' EXIT
cache() { export XDG_CACHE_HOME="$TMP/xdg-$1"; }
stat_of() { "$GET" "$API" /_stats | tail -n 1 | jq -r ".$1"; }
# exact NAME EXPECTED_REPO CMD...: params and bytes as the generator counted them
exact() {
    name=$1 repo=$2
    shift 2
    run "$name" 0 "$@" || return 1
    got=$(jq -r '"\(.params) \(.bytes)"' "$TMP/out")
    [ "$got" = "$(want "$repo")" ] && ok "$name" || fail "$name" "params bytes $got, expected $(want "$repo")"
}
one_line() { # one_line NAME PATTERN: one stderr line says which source answered, and matches
    [ "$(grep -c 'answered by' "$TMP/err")" -eq 1 ] && grep -q -- "$2" "$TMP/err" && ok "$1" || fail "$1" "stderr: $(head -c 300 "$TMP/err")"
}

start_hub
cache a
exact "hub: sharded fp8 checkpoint, mixed dtypes: exact params and bytes" fp8org/mixed "$VF" inspect hf://fp8org/mixed --json
one_line "hub: one stderr line names the Hub as the source" "hf://fp8org/mixed: answered by the Hub (http://127.0.0.1:$API), commit "
# headers only: each shard's header is 8 + its length word; the first read is
# 64 KiB, so bytes sent <= header + 64 KiB per weight file, and < the files
hdr=0 files=0 size=0
for f in "$REPOS"/fp8org/mixed/*.safetensors; do
    n=$(od -An -tu8 -N8 "$f" | tr -d ' ')
    hdr=$((hdr + 8 + n)) files=$((files + 1)) size=$((size + $(wc -c <"$f")))
done
sent=$(stat_of cdn_bytes)
[ "$sent" -le $((hdr + 65536 * files)) ] && [ "$sent" -lt "$size" ] && ok "hub: only headers transferred ($sent bytes for $hdr header bytes, files $size)" ||
    fail "hub: only headers transferred" "$sent bytes sent, headers $hdr, files $size"
[ "$(stat_of cdn_requests)" -eq "$files" ] && ok "hub: one range request per shard (headers under 64 KiB)" ||
    fail "hub: one range request per shard" "$(stat_of cdn_requests) CDN requests for $files shards"
before=$(stat_of requests)
exact "hub: a second run answers from vramfit's cache" fp8org/mixed "$VF" inspect hf://fp8org/mixed --json
[ "$(stat_of requests)" -eq "$before" ] && ok "hub: the second run made no request" || fail "hub: the second run made no request" "$before then $(stat_of requests)"
one_line "hub: the cache says it answered" "answered by vramfit's cache of the Hub"
# a cache entry that does not check out is ignored and fetched again, never trusted
entry=$(find "$XDG_CACHE_HOME" -name 'model-00002-of-00003.safetensors' | head -n 1)
printf 'X' | dd of="$entry" bs=1 seek=200 conv=notrunc 2>/dev/null
before=$(stat_of cdn_requests)
exact "hub: a corrupted cache entry is refetched, the answer still exact" fp8org/mixed "$VF" inspect hf://fp8org/mixed --json
[ "$(stat_of cdn_requests)" -eq $((before + 1)) ] && ok "hub: just that file was fetched again" ||
    fail "hub: just that file was fetched again" "$before then $(stat_of cdn_requests) CDN requests"
exact "hub: estimate/fit take Hub ids too (inspect after --refresh)" fp8org/mixed "$VF" inspect --refresh hf://fp8org/mixed --json
check "hub: estimate of a Hub id" 0 "$VF" estimate hf://fp8org/mixed --context 1024 --json
cache gguf
exact "hub: gguf repository, Q4_K_M by default (as llama.cpp -hf)" "gguforg/tiny-GGUF:Q4_K_M" "$VF" inspect hf://gguforg/tiny-GGUF --json
sent0=$(stat_of cdn_bytes)
exact "hub: gguf repository, :Q8_0 picks by quantization" "gguforg/tiny-GGUF:Q8_0" "$VF" inspect hf://gguforg/tiny-GGUF:Q8_0 --json
# its header (a 30,000-token list) is over 64 KiB: read in steps, never past header + 64 KiB
ghdr=$(awk '$1 == "gguforg/tiny-GGUF:Q8_0" { print $4 }' "$TMP/expected")
gsent=$(($(stat_of cdn_bytes) - sent0))
[ "$ghdr" -gt 65536 ] && [ "$gsent" -ge "$ghdr" ] && [ "$gsent" -le $((ghdr + 65536)) ] &&
    ok "hub: a gguf header of $ghdr bytes read incrementally ($gsent bytes sent)" ||
    fail "hub: a gguf header read incrementally" "header $ghdr bytes, $gsent sent"
exact "hub: a split gguf in a folder, by its first part (:BF16)" "gguforg/tiny-GGUF:BF16" "$VF" inspect hf://gguforg/tiny-GGUF:BF16 --json
exact "hub: --file names the file" "gguforg/tiny-GGUF:Q8_0" "$VF" inspect hf://gguforg/tiny-GGUF --file tiny-Q8_0.gguf --json
check_err "hub: a quantization no file has: one line, exit 2" 2 "no gguf file matches ':Q5_K'" "$VF" inspect hf://gguforg/tiny-GGUF:Q5_K &&
    for g in tiny-Q4_K_M.gguf tiny-Q8_0.gguf BF16/tiny-BF16-00001-of-00002.gguf; do
        grep -q "$g" "$TMP/err" || fail "hub: the candidates listed" "$g missing: $(cat "$TMP/err")"
    done && ! grep -q -e mmproj -e 00002-of "$TMP/err" && ok "hub: the candidates listed (no projector, no later split part)"
cache gated
check_err "hub: gated without a token: one line naming HF_TOKEN" 4 "hf://gatedorg/secret.*HF_TOKEN" "$VF" inspect hf://gatedorg/secret
exact "hub: gated with HF_TOKEN: exact" gatedorg/secret env HF_TOKEN=hf_test_token "$VF" inspect hf://gatedorg/secret --json
echo hf_test_token >"$TMP/tok"
exact "hub: the token file (HF_TOKEN_PATH) as well" gatedorg/secret env HF_TOKEN_PATH="$TMP/tok" "$VF" inspect hf://gatedorg/secret --refresh --json
[ "$(stat_of cdn_tokens)" -eq 0 ] && ok "hub: the token never went to the CDN host" || fail "hub: the token never went to the CDN host" "$(stat_of cdn_tokens) requests"
check_err "hub: a wrong token: one line" 4 "has no access" env HF_TOKEN=hf_wrong "$VF" inspect hf://gatedorg/secret --refresh
cache plain
exact "hub: a plain org/name not in the catalog goes to the Hub" fp8org/mixed "$VF" inspect fp8org/mixed --json
check_err "hub: a repository the Hub lacks, plain id: one line" 3 "nor a Hub repository" "$VF" inspect noorg/nothing
check_err "hub: hf:// a repository the Hub lacks" 3 "has no repository 'noorg/nothing'" "$VF" inspect hf://noorg/nothing
run "hub: load says a Hub-only model cannot be streamed" 3 "$VF" load hf://fp8org/mixed --device host &&
    { grep -q '^vramfit: hf://fp8org/mixed: load streams local files.*on the Hub only' "$TMP/err" && ok "hub: load says a Hub-only model cannot be streamed" ||
        fail "hub: load says a Hub-only model cannot be streamed" "$(head -c 300 "$TMP/err")"; }
# models --update: ids fetched into vramfit's cache, then answered offline by their plain id
cache update
check_err "hub: a plain id not fetched yet, offline: the unknown-id line" 3 "not in the embedded catalog" \
    env HF_HUB_OFFLINE=1 "$VF" inspect fp8org/mixed
check_json "hub: models --update fetches each id" 0 \
    '[.updated[] | .updated] == [true, true] and (.updated[0].origin | test("the Hub"))' \
    "$VF" models --update fp8org/mixed gguforg/tiny-GGUF --json
exact "hub: after --update a plain id answers offline, exact" fp8org/mixed env HF_HUB_OFFLINE=1 "$VF" inspect fp8org/mixed --json
exact "hub: a GGUF repository too" "gguforg/tiny-GGUF:Q4_K_M" env HF_HUB_OFFLINE=1 "$VF" inspect gguforg/tiny-GGUF --json
before=$(stat_of requests)
check_out "hub: --update fetches again (never the cache)" 0 "fp8org/mixed: .* parameters from the Hub" \
    "$VF" models --update fp8org/mixed
[ "$(stat_of requests)" -gt "$before" ] && ok "hub: --update asked the Hub" || fail "hub: --update asked the Hub" "no request"
check_err "hub: --update of a repository the Hub lacks: one line, exit 3" 3 "has no repository 'noorg/nothing'" \
    "$VF" models --update noorg/nothing
check "hub: --update and --offline exclude each other" 2 "$VF" models --update fp8org/mixed --offline
check "hub: --update needs ids" 2 "$VF" models --update
cache off
check_err "hub: --offline with nothing cached: one line, the Hub not asked" 3 "offline" "$VF" inspect hf://fp8org/mixed --offline
check_err "hub: HF_HUB_OFFLINE=1 likewise" 3 "offline" env HF_HUB_OFFLINE=1 "$VF" inspect hf://fp8org/mixed
check_err "hub: --hub-timeout takes whole seconds" 2 "hub-timeout" "$VF" inspect hf://fp8org/mixed --hub-timeout 0
stop_hub
check_err "hub: an unreachable Hub: one line, exit 4" 4 "cannot reach" "$VF" inspect hf://fp8org/mixed --refresh

# ---- the local Hugging Face cache ----
sha=0123456789abcdef0123456789abcdef01234567
hc="$HF_HUB_CACHE/models--cacheorg--m"
mkdir -p "$hc/blobs" "$hc/snapshots/$sha" "$hc/refs"
cp "$REPOS/gatedorg/secret/model.safetensors" "$hc/blobs/b1"
ln -s ../../blobs/b1 "$hc/snapshots/$sha/model.safetensors"
printf '%s' "$sha" >"$hc/refs/main"
exact "hf cache: symlinked blobs answer offline" gatedorg/secret env HF_HUB_OFFLINE=1 "$VF" inspect cacheorg/m --json
one_line "hf cache: one stderr line names the local cache" "answered by the local Hugging Face cache"
exact "hf cache: hf:// also reads the local cache first" gatedorg/secret env HF_HUB_OFFLINE=1 "$VF" inspect hf://cacheorg/m@main --json
exact "hf cache: by commit" gatedorg/secret env HF_HUB_OFFLINE=1 "$VF" inspect "hf://cacheorg/m@$sha" --json
check "hf cache: load streams it" 0 env HF_HUB_OFFLINE=1 "$VF" load cacheorg/m --device host
mv "$hc/blobs/b1" "$hc/blobs/b1.gone"
check_err "hf cache: a missing blob: one line" 3 "model.safetensors" env HF_HUB_OFFLINE=1 "$VF" inspect cacheorg/m
mv "$hc/blobs/b1.gone" "$hc/blobs/b1"
printf 'fedcba9876543210fedcba9876543210fedcba98\n' >"$hc/refs/main"
check_err "hf cache: refs naming a missing snapshot: one line" 3 "names snapshot fedcba987654" env HF_HUB_OFFLINE=1 "$VF" inspect cacheorg/m
rm -rf "$HF_HUB_CACHE"

# ---- hostile servers: one line, exit 3 or 4, nothing cached ----
for f in lying-range truncated html 416 redirect-loop header-cap ignore-range api-html api-json slow; do
    start_hub --fault "$f"
    cache "fault-$f"
    "$VF" inspect hf://fp8org/mixed --hub-timeout 2 >"$TMP/out" 2>"$TMP/err"
    rc=$?
    kept=$(find "$XDG_CACHE_HOME" -type f 2>/dev/null | wc -l)
    if { [ $rc -eq 3 ] || [ $rc -eq 4 ]; } && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q '^vramfit: hf://fp8org/mixed' "$TMP/err" && [ "$kept" -eq 0 ]; then
        ok "hub fault $f: exit $rc, one line ($(cut -c1-90 "$TMP/err")), nothing cached"
    else
        fail "hub fault $f" "exit $rc, $kept cached files, stderr: $(head -c 300 "$TMP/err")"
    fi
    stop_hub
done

# ---- many shards: each header's rest asked for as its first 64 KiB arrive ----
# DeepSeek-V3's layout (163 shards, all headers but one over 64 KiB): totals exact,
# two ranges per shard, bytes sent = sum of max(header, 64 KiB), the rest of a
# header asked for before the last shards' first ranges (no round waits on the
# slowest shard), never more than 16 connections to one host (the Hub's
# API and its CDN: 32 at most), each opened once and kept alive
"$GEN" --deepseek data/models/deepseek-ai__DeepSeek-V3.json "$REPOS" >>"$TMP/expected" || fail "hub: generate deepseek" "gen_repo failed"
start_hub --latency-ms 2
cache deepseek
exact "hub: 163 shards of DeepSeek-V3's layout: exact params and bytes" deepseek-ai/DeepSeek-V3 "$VF" inspect hf://deepseek-ai/DeepSeek-V3 --json
"$GET" "$API" /_stats | tail -n 1 >"$TMP/ds.stats" # one request: the counts are the run's alone
ds() { jq -r ".$1" "$TMP/ds.stats"; }
shards=0 bound=0
for f in "$REPOS"/deepseek-ai/DeepSeek-V3/*.safetensors; do
    n=$(($(od -An -tu8 -N8 "$f" | tr -d ' ') + 8))
    [ $n -lt 65536 ] && n=65536
    bound=$((bound + n)) shards=$((shards + 1))
done
long=$(for f in "$REPOS"/deepseek-ai/DeepSeek-V3/*.safetensors; do od -An -tu8 -N8 "$f"; done | awk '$1 + 8 > 65536' | wc -l)
[ "$(ds cdn_requests)" -eq $((shards + long)) ] && [ "$(ds cdn_bytes)" -eq "$bound" ] &&
    ok "hub: $shards shards, $long headers over 64 KiB: $((shards + long)) ranges, $bound bytes (each max(header, 64 KiB))" ||
    fail "hub: two ranges per long header" "$(ds cdn_requests) CDN requests, $(ds cdn_bytes) bytes; want $((shards + long)), $bound"
[ "$(ds heads_after_rest)" -gt 0 ] && ok "hub: a header's rest is asked for as its first bytes arrive ($(ds heads_after_rest) first ranges came after one)" ||
    fail "hub: the rest asked for at once" "every first range came before any rest (rounds)"
conns=$(($(ds connections) - 1)) # less the stats request's own
[ "$conns" -le 32 ] && [ "$conns" -ge 8 ] && ok "hub: $conns connections for $(ds requests) requests (16 at most per host, kept alive)" ||
    fail "hub: at most 16 connections per host, kept alive" "$conns connections opened for $(ds requests) requests"
stop_hub

# ---- the corrupt-input matrix over HTTP: the same verdict as from the file ----
C="$TMP/corrupt"
mkdir -p "$C" && "$BUILD/tests/gen_corrupt" "$C" >/dev/null 2>&1
i=0
for f in "$C"/*.safetensors "$C"/*/model.safetensors.index.json; do
    [ -f "$f" ] || continue
    i=$((i + 1))
    mkdir -p "$REPOS/corrupt/c$i"
    case "$f" in
    *.index.json) cp -R "$(dirname "$f")"/. "$REPOS/corrupt/c$i/" && echo "$REPOS/corrupt/c$i/model.safetensors.index.json" ;;
    *) cp "$f" "$REPOS/corrupt/c$i/model.safetensors" && echo "$REPOS/corrupt/c$i/model.safetensors" ;;
    esac >>"$TMP/corrupt.list"
done
start_hub
cache corrupt
bad=0
j=0
while read -r local; do
    j=$((j + 1))
    "$VF" inspect "$local" >/dev/null 2>"$TMP/e1"
    r1=$?
    "$VF" inspect "hf://corrupt/c$j" >/dev/null 2>"$TMP/e2"
    r2=$?
    m1=$(sed "s|^vramfit: $REPOS/corrupt/c$j/||" "$TMP/e1")
    m2=$(sed "s|^vramfit: hf://corrupt/c$j/||" "$TMP/e2")
    if [ $r1 -ne $r2 ] || [ "$m1" != "$m2" ]; then
        bad=$((bad + 1))
        echo "  c$j: file exit $r1 '$m1', http exit $r2 '$m2'"
    fi
done <"$TMP/corrupt.list"
[ $i -gt 10 ] && [ $bad -eq 0 ] && ok "hub: $i corrupt safetensors files: the same exit and message over HTTP as from the file" ||
    fail "hub: corrupt matrix over HTTP" "$bad of $i differ"
[ -z "$(find "$XDG_CACHE_HOME" -path '*corrupt*' -name 'model.safetensors*' 2>/dev/null)" ] && ok "hub: nothing cached for a corrupt model" ||
    fail "hub: nothing cached for a corrupt model" "$(find "$XDG_CACHE_HOME" -type f | head -3)"
stop_hub
