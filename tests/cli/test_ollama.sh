# ollama:NAME[:TAG]: the local Ollama store read from disk (a store made here in
# $TMP as Ollama lays it out: manifests/registry.ollama.ai/NAMESPACE/NAME/TAG, a JSON
# manifest whose application/vnd.ollama.image.model layer names blobs/sha256-<hex>, a
# real GGUF file llama-quantize wrote, rebuilt from its saved header); the same counts
# as the file opened by its path; corrupt manifests one line, exit 3; a name the store
# lacks answered by the catalog model it stands for at the tag's type.
. tests/cli/lib.sh
S="$TMP/store"
export OLLAMA_MODELS="$S"
G=$(grow_gguf llama-tiny-Q4_K_M.gguf) || { fail "ollama: reference GGUF" "missing"; exit 0; }
hex=$(sha256sum "$G" | cut -d' ' -f1)
mkdir -p "$S/blobs" "$S/manifests/registry.ollama.ai/library/tiny" "$S/manifests/registry.ollama.ai/someone/tiny"
cp "$G" "$S/blobs/sha256-$hex"
manifest() { # manifest DIGEST [MEDIA]: Ollama's schema 2 manifest, a config layer and the model's
    printf '{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",'
    printf '"config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":"sha256:%064d","size":2},' 0
    printf '"layers":[{"mediaType":"application/vnd.ollama.image.template","digest":"sha256:%064d","size":9},' 1
    printf '{"mediaType":"%s","digest":"%s","size":1}]}\n' "${2:-application/vnd.ollama.image.model}" "$1"
}
M="$S/manifests/registry.ollama.ai/library/tiny"
manifest "sha256:$hex" >"$M/latest"
cp "$M/latest" "$M/q4"
cp "$M/latest" "$S/manifests/registry.ollama.ai/someone/tiny/latest"

counts=$("$VF" inspect "$G" --json | jq -c '[.params, .bytes, .tensor_count, .architecture]')
check_json "ollama: the store's blob, as its path gives it" 0 "[.params, .bytes, .tensor_count, .architecture] == $counts" \
    "$VF" inspect --json ollama:tiny
check_json "ollama: a tag" 0 "[.params, .bytes, .tensor_count, .architecture] == $counts" "$VF" inspect --json ollama:tiny:q4
check_json "ollama: a user's namespace" 0 ".params == ($counts | .[0])" "$VF" inspect --json ollama:someone/tiny
check_err "ollama: says the store answered" 0 "answered by the local Ollama store ($S/manifests/registry.ollama.ai/library/tiny/latest)" \
    "$VF" inspect ollama:tiny
check_json "ollama: estimated on llama.cpp as a GGUF file" 0 '.runtime == "llamacpp"' "$VF" estimate --json ollama:tiny
check_json "ollama: ~/.ollama/models without OLLAMA_MODELS" 0 ".params == ($counts | .[0])" \
    env -u OLLAMA_MODELS HOME="$TMP/home" sh -c 'mkdir -p "$HOME/.ollama" && ln -sfn "$0" "$HOME/.ollama/models" && "$1" inspect --json ollama:tiny' "$S" "$VF"

# corrupt stores: one line, exit 3
printf 'not json' >"$M/bad"
check_err "ollama: a manifest that is not JSON" 3 "registry.ollama.ai/library/tiny/bad" "$VF" inspect ollama:tiny:bad
manifest "sha256:$hex" application/vnd.ollama.image.license >"$M/nomodel"
check_err "ollama: no model layer" 3 "no layer of media type application/vnd.ollama.image.model" "$VF" inspect ollama:tiny:nomodel
manifest "sha256:../../../etc/passwd" >"$M/evil"
check_err "ollama: a digest that is not sha256 hex" 3 "not sha256:<64 hex digits>" "$VF" inspect ollama:tiny:evil
manifest "sha256:$(printf '%064d' 7)" >"$M/gone"
check_err "ollama: the blob missing" 3 "missing from the store" "$VF" inspect ollama:tiny:gone
printf '{"layers":{"mediaType":1}}' >"$M/shape"
check_err "ollama: layers not a list" 3 "without a layers list" "$VF" inspect ollama:tiny:shape
printf '{"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":7}]}' >"$M/nodigest"
check_err "ollama: a model layer without a digest" 3 "has no digest" "$VF" inspect ollama:tiny:nodigest
head -c 100 "$G" >"$S/blobs/sha256-$(printf '%064d' 8)"
manifest "sha256:$(printf '%064d' 8)" >"$M/cut"
check "ollama: a truncated GGUF blob" 3 "$VF" inspect ollama:tiny:cut
check_err "ollama: a name that would leave the store" 3 "not an Ollama name" "$VF" inspect "ollama:../tiny"
check_err "ollama: a tag that would leave the store" 3 "not an Ollama name" "$VF" inspect "ollama:tiny:../../x"

# names the store lacks: the catalog model at the tag's type (Ollama's default Q4_K_M), the
# same figure as the base with --runtime llamacpp --weights TYPE
q4=$("$VF" estimate Qwen/Qwen3-8B --runtime llamacpp --weights q4_k_m --json | jq .device_bytes)
q8=$("$VF" estimate Qwen/Qwen2.5-7B-Instruct --runtime llamacpp --weights q8_0 --json | jq .device_bytes)
check_json "ollama: qwen3:8b from the catalog at Q4_K_M" 0 \
    ".device_bytes == $q4 and (.assumptions.priced_as | test(\"Ollama\"))" "$VF" estimate --json ollama:qwen3:8b
check_json "ollama: a tag's type" 0 ".device_bytes == $q8" "$VF" estimate --json ollama:qwen2.5:7b-instruct-q8_0
check_json "ollama: llama3.1 is the instruct model" 0 '.model == "meta-llama/Llama-3.1-8B-Instruct"' \
    "$VF" inspect --json ollama:llama3.1:8b
check_err "ollama: neither store nor catalog: the store searched, how to answer" 3 \
    "not in the local Ollama store ($S), nor a catalog model.*ollama pull" "$VF" inspect ollama:qwen3
