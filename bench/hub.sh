#!/bin/sh
# bench/hub.sh — a Hub id of DeepSeek-V3's size over HTTP, headers only.
# Generates deepseek-ai/DeepSeek-V3 (163 sparse shards in its layout: 61 layers
# + MTP, 256 experts, FP8 with block scales; tests/hub/gen_repo.c), serves it
# from the stand-in Hub (tests/hub/hubserver.c) with 20 ms added to every
# request, runs `vramfit inspect hf://deepseek-ai/DeepSeek-V3 --json` once with
# an empty cache (best of 3), and prints in this one run: wall time against the
# serial sum of the request latencies (requests x 20 ms), and the same inspect
# from the local files (what is not the network), requests per shard, the bytes
# the CDN sent against the shards' header bytes (8 + each length word), and
# whether params/bytes equal the generator's sums.
B=${BUILD:-build}
VF="$B/vramfit" HS="$B/tests/hubserver" GEN="$B/tests/gen_repo" GET="$B/tests/http_get"
LAT=${LATENCY_MS:-20}
for x in "$VF" "$HS" "$GEN" "$GET"; do
    [ -x "$x" ] || { echo "bench/hub.sh: $x missing (make all $HS $GEN $GET)" >&2; exit 1; }
done
D=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null; rm -rf "$D"' EXIT
"$GEN" --deepseek data/models/deepseek-ai__DeepSeek-V3.json "$D/repos" >"$D/expected" || exit 1
read -r _ want_params want_bytes n_tensors <"$D/expected"
"$HS" --root "$D/repos" --port-file "$D/port" --latency-ms "$LAT" --max-seconds 300 &
pid=$!
w=0
while [ ! -s "$D/port" ] && [ $w -lt 100 ]; do sleep 0.1; w=$((w + 1)); done
read -r API _ <"$D/port"
unset HF_HUB_OFFLINE HF_TOKEN http_proxy https_proxy HTTP_PROXY HTTPS_PROXY
export NO_PROXY='*' HF_ENDPOINT="http://127.0.0.1:$API" XDG_CACHE_HOME="$D/xdg" HF_HUB_CACHE="$D/nohf"
# best of 3, each with an empty cache; the server's counts are for the first run
best() { awk 'NR == 1 || $1 < m { m = $1 } END { print m }'; }
for r in 1 2 3; do
    rm -rf "$D/xdg"
    t0=$(date +%s.%N)
    "$VF" inspect hf://deepseek-ai/DeepSeek-V3 --json >"$D/out" 2>"$D/err"
    rc=$?
    t1=$(date +%s.%N)
    echo "$t1 $t0" | awk '{ print $1 - $2 }' >>"$D/hub.t"
    [ $r -eq 1 ] && "$GET" "$API" /_stats | tail -n 1 >"$D/stats"
done
# the same headers read from the local files: what is not the network
for r in 1 2 3; do
    t0=$(date +%s.%N)
    "$VF" inspect "$D/repos/deepseek-ai/DeepSeek-V3" --json >/dev/null 2>&1
    t1=$(date +%s.%N)
    echo "$t1 $t0" | awk '{ print $1 - $2 }' >>"$D/local.t"
done
wall=$(best <"$D/hub.t") loc=$(best <"$D/local.t")
hdr=0 shards=0
for f in "$D"/repos/deepseek-ai/DeepSeek-V3/*.safetensors; do
    n=$(od -An -tu8 -N8 "$f" | tr -d ' ')
    hdr=$((hdr + 8 + n)) shards=$((shards + 1))
done
req=$(jq -r .requests "$D/stats") cdn=$(jq -r .cdn_requests "$D/stats") sent=$(jq -r .cdn_bytes "$D/stats")
got=$(jq -r '"\(.params) \(.bytes)"' "$D/out" 2>/dev/null)
awk -v wall="$wall" -v loc="$loc" -v req="$req" -v lat="$LAT" -v cdn="$cdn" -v shards="$shards" -v sent="$sent" \
    -v hdr="$hdr" -v tensors="$n_tensors" -v got="$got" -v want="$want_params $want_bytes" -v rc="$rc" 'BEGIN {
    serial = req * lat / 1000; net = wall - loc
    printf "hub: DeepSeek-V3 layout, %d shards, %d tensors, %d ms per request (exit %d)\n", shards, tensors, lat, rc
    printf "  wall %.3f s (best of 3, empty cache); serial sum of request latencies %.3f s (%d requests): %.1fx faster\n", wall, serial, req, serial / wall
    printf "  the same inspect from the local files %.3f s; the network part %.3f s: %.1fx faster than the serial sum\n", loc, net, (net > 0 ? serial / net : 0)
    printf "  requests per shard: %.2f (CDN range requests %d; with resolve redirects and API/config/index: %.2f)\n", cdn / shards, cdn, req / shards
    printf "  weight-file bytes sent %d, header bytes %d (%.4fx; bound: header + 64 KiB per shard = %d)\n", sent, hdr, sent / hdr, hdr + 65536 * shards
    printf "  params bytes %s, expected %s: %s\n", got, want, got == want ? "exact" : "DIFFERENT"
}'
[ "$rc" -eq 0 ] && [ "$got" = "$want_params $want_bytes" ]
