# vramfit models: the embedded catalog; catalog names and near-miss suggestions.
. tests/cli/lib.sh

check_out "models help" 0 "usage: vramfit models" "$VF" models --help
check_json "models json has at least 60" 0 '.models | length >= 60' "$VF" models --json
check_json "models json fields" 0 \
    '[.models[] | has("id") and has("alias") and has("family") and has("params") and has("active_params") and has("context_length")] | all' \
    "$VF" models --json
check_json "models ids unique" 0 '[.models[].id] | length == (unique | length)' "$VF" models --json
check_json "models aliases unique" 0 '[.models[].alias | select(. != "")] | length == (unique | length)' "$VF" models --json
check_json "models alias of Qwen3-8B" 0 \
    '[.models[] | select(.id == "Qwen/Qwen3-8B")] | length == 1 and .[0].alias == "qwen3-8b" and .[0].family == "qwen3" and .[0].context_length == 40960' \
    "$VF" models --json
check_json "models family filter" 0 \
    '(.models | length > 0) and ([.models[].family] | all(startswith("qwen3") and (startswith("qwen3_5") | not))) and any(.models[]; .id == "Qwen/Qwen3-30B-A3B")' \
    "$VF" models --json --family qwen3
check_out "models table" 0 "^Qwen/Qwen3-8B  *qwen3 " "$VF" models --family QWEN3
check_err "models unknown family" 2 "no catalog model of family 'nosuch'" "$VF" models --family nosuch
check_err "models stray argument" 2 "unexpected argument" "$VF" models qwen3-8b

# a near miss: exit 3, one stderr line naming the closest entries
check_err "suggest llama3-8b" 3 "llama3-8b: no such file, directory or catalog model; did you mean: meta-llama/Meta-Llama-3-8B, " \
    "$VF" inspect llama3-8b
check_err "suggest qwen-3-8b" 3 "did you mean: Qwen/Qwen3-8B" "$VF" inspect qwen-3-8b
check_err "suggest mistral7b" 3 "did you mean: mistralai/Mistral-7B" "$VF" inspect mistral7b
check_err "nothing close" 3 "zzzzzzzzzz: no such file, directory or catalog model$" "$VF" inspect zzzzzzzzzz

"$VF" models --json >"$TMP/models.json" 2>/dev/null
check_json "every catalog model counted" 0 \
    '[.models[] | .params != null and .active_params <= .params] | all' \
    cat "$TMP/models.json"
check_json "MoE models have fewer active parameters" 0 \
    '[.models[] | select(.family == "mixtral" or .family == "qwen3_moe" or .family == "deepseek_v3") | .active_params < .params] | all' \
    cat "$TMP/models.json"
# independent counts (tests/reference/param-counts.tsv): the models list, and inspect by upper-cased alias
grep -v '^#' "$REF/param-counts.tsv" | while IFS="$(printf '\t')" read -r file count _; do
    case "$count" in '' | -) continue ;; esac
    id=$(echo "${file%.json}" | sed 's/__/\//')
    alias=$(echo "${id#*/}" | tr 'A-Z' 'a-z')
    check_json "models count $id" 0 "[.models[] | select(.id == \"$id\" and .alias == \"$alias\")] | length == 1 and .[0].params == $count" \
        cat "$TMP/models.json"
    check_json "inspect count $alias" 0 ".params == $count" "$VF" inspect --json "$(echo "$alias" | tr 'a-z' 'A-Z')"
done

# issue 24: the seed's example and the most-downloaded instruct model, offline; the figures are the
# Hub's safetensors totals (tests/reference/catalog/llmfit-models.tsv, parameters_raw)
check_json "offline Qwen3.5-4B" 0 '.params == 4659865088 and .bytes == 9319730176 and .architecture == "qwen3_5"' \
    "$VF" inspect --offline --json Qwen/Qwen3.5-4B
check_err "Qwen3.5-4B says its config was assembled" 0 "assembled from code and docs" "$VF" inspect --offline Qwen/Qwen3.5-4B
check_json "offline Llama-3.1-8B-Instruct" 0 '.params == 8030261248' "$VF" inspect --offline --json meta-llama/Llama-3.1-8B-Instruct
check_err "a variant says whose config answers" 0 "its base model's config.json" "$VF" inspect --offline meta-llama/Llama-3.1-8B-Instruct
check_err "unknown id offline: nearest, cache, how to answer" 3 \
    "not in the embedded catalog; nearest: Qwen/Qwen3-8B.*nor in the Hugging Face cache (.*); offline.*config.json or weights" \
    env HF_HUB_OFFLINE=1 "$VF" inspect Qwen/Qwen9-8B
# the Hub unreachable (a closed local port): still exit 4, the same line's nearest ids and cache
check_err "unknown id, Hub unreachable: nearest, cache, how to answer" 4 \
    "cannot reach http://127.0.0.1:9.*not in the embedded catalog; nearest: Qwen/Qwen3-8B.*nor in the Hugging Face cache (.*): give a path" \
    env HF_ENDPOINT=http://127.0.0.1:9 HF_HUB_OFFLINE= "$VF" inspect Qwen/Qwen9-8B

# GGUF repositories' names offline: the base catalog model with its weights at the named type by
# llama-quantize's rules - the same figure as the base with --runtime llamacpp --weights TYPE
# (the rules' own figures: test_llamacpp against llama-quantize's files)
base_q4=$("$VF" estimate Qwen/Qwen3-8B --runtime llamacpp --weights q4_k_m --json | jq .device_bytes)
base_q8=$("$VF" estimate Qwen/Qwen3-8B --runtime llamacpp --weights q8_0 --json | jq .device_bytes)
check_json "gguf repo: bartowski Q4_K_M is the base at q4_k_m, llama.cpp" 0 \
    ".runtime == \"llamacpp\" and .device_bytes == $base_q4 and (.assumptions.priced_as | test(\"GGUF repository\"))" \
    "$VF" estimate --offline --json bartowski/Qwen3-8B-GGUF:Q4_K_M
check_json "gguf repo: bartowski's Org_Name, no type: Q4_K_M" 0 '.model == "Qwen/Qwen3-8B" and .priced_as == "q4_k_m"' \
    "$VF" inspect --offline --json bartowski/Qwen_Qwen3-8B-GGUF
check_json "gguf repo: ggml-org Q8_0" 0 ".device_bytes == $base_q8" "$VF" estimate --offline --json ggml-org/Qwen3-8B-GGUF:Q8_0
check_json "gguf repo: lmstudio-community resolves" 0 '.priced_as == "q4_k_m"' \
    "$VF" inspect --offline --json lmstudio-community/Qwen3-8B-GGUF
check_json "gguf repo: --weights still decides" 0 ".device_bytes == $base_q8" \
    "$VF" estimate --offline --json bartowski/Qwen3-8B-GGUF:Q4_K_M --weights q8_0
check_json "gguf repo: unsloth UD mix priced by Q4_K_M's rule, said so" 0 \
    ".device_bytes == $base_q4 and (.assumptions.priced_as | test(\"own mix priced by that rule\"))" \
    "$VF" estimate --offline --json unsloth/Qwen3-8B-GGUF:UD-Q4_K_XL
run "gguf repo: a UD mix warns it is not read" 0 "$VF" estimate --offline unsloth/Qwen3-8B-GGUF:UD-Q4_K_XL --json &&
    { grep -q "own mix (UD-Q4_K_XL) is not read" "$TMP/err" && ok "gguf repo: a UD mix warns it is not read" ||
        fail "gguf repo: a UD mix warns it is not read" "stderr: $(head -c 300 "$TMP/err")"; }
check_err "gguf repo: no catalog base: the unknown-id line" 3 "not in the embedded catalog.*nor in the Hugging Face cache" \
    "$VF" inspect --offline bartowski/NoSuchModel-7B-GGUF:Q4_K_M
