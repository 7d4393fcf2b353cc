# vramfit models --fits: the reverse question. Every row, fitting or not,
# against `vramfit fit` on the same model and knobs (the row's --weights and
# --n-gpu-layers): the verdict, the memory per GPU, the headroom and the
# longest context; a row not estimated (the weights alone at its smallest
# format exceed the devices) must not fit by fit either. Three setups: llama.cpp
# on an RTX 4090 with host memory (layer splits), vLLM on two H100s, training
# with transformers on 24 GiB.
. tests/cli/lib.sh

# agree NAME FITS_ARGS FIT_ARGS: every row of models --fits against fit
agree() {
    name=$1 fits=$2 fitargs=$3
    # shellcheck disable=SC2086
    if ! "$VF" models $fits --json >"$TMP/rows.json" 2>"$TMP/err"; then
        [ $? -eq 1 ] || { fail "$name" "models --fits: exit $?: $(head -c 300 "$TMP/err")"; return; }
    fi
    n=$(jq '.models | length' "$TMP/rows.json")
    [ "$n" -gt 0 ] || { fail "$name" "no rows"; return; }
    jq -r '.models[] | [.id, .weights, .n_gpu_layers, .fits, .estimated, .needed_bytes, .headroom_bytes, .max_context] | @tsv' \
        "$TMP/rows.json" >"$TMP/rows.tsv"
    bad=0 fitting=0 est=0
    while IFS="$(printf '\t')" read -r id w ngl f e need head ctx; do
        set -- --json
        [ "$w" = stored ] || set -- "$@" --weights "$w"
        [ "$ngl" = -1 ] || set -- "$@" --n-gpu-layers "$ngl"
        # shellcheck disable=SC2086
        "$VF" fit "$id" $fitargs "$@" >"$TMP/fit.json" 2>/dev/null
        got=$(jq -r '[.fits, .needed_bytes, .headroom_bytes, .max_context] | @tsv' "$TMP/fit.json" 2>/dev/null)
        [ "$f" = true ] && fitting=$((fitting + 1))
        if [ "$e" = true ]; then
            est=$((est + 1))
            [ "$f" = true ] || ctx=0
            want=$(printf '%s\t%s\t%s\t%s' "$f" "$need" "$head" "$ctx")
            [ "$f" = true ] || got=$(echo "$got" | awk -F'\t' -v OFS='\t' '{ $4 = 0; print }')
        else
            want=false
            got=$(echo "$got" | cut -f1)
        fi
        if [ "$got" != "$want" ]; then
            bad=$((bad + 1))
            [ "$bad" -le 3 ] && echo "# $id ($w, ngl $ngl): models --fits '$want', fit '$got'"
        fi
    done <"$TMP/rows.tsv"
    [ "$bad" -eq 0 ] && ok "$name: all $n rows agree with fit ($fitting fit, $est estimated)" ||
        fail "$name" "$bad of $n rows differ from fit"
}

agree "fits llama.cpp RTX 4090 + 64 GiB host" '--fits RTX-4090 --runtime llamacpp --context 8192 --host-memory 64GiB' \
    '--gpu RTX-4090 --runtime llamacpp --context 8192'
agree "fits vLLM 2 x H100" '--fits H100x2 --runtime vllm --context 32768' '--gpu H100x2 --runtime vllm --context 32768'
agree "fits training 24 GiB" '--fits 24GiB --train --seq-len 2048 --lora-rank 16 --max-params 9B' \
    '--gpu 24GiB --train --seq-len 2048 --lora-rank 16'

# the contract the page's GPU view reads
check_json "fits json contract" 0 \
    'has("gpu") and (.models | length > 100) and ([.models[] | has("id") and has("fits") and has("weights") and has("needed_bytes") and has("headroom_bytes") and has("max_context")] | all)' \
    "$VF" models --fits "RTX 4090" --json
# fitting rows first, each group largest first
check_json "fits order" 0 \
    '[.models[] | [(if .fits then 0 else 1 end), -.params]] as $k | $k == ($k | sort)' "$VF" models --fits "RTX 4090" --json
check_json "fits filters" 0 \
    '(.models | length > 0) and ([.models[] | .task == "embed" and .params <= 1000000000] | all)' \
    "$VF" models --fits "RTX 3060" --task embed --max-params 1B --json
check_json "fits family" 0 '[.models[].family] | all(startswith("qwen3"))' "$VF" models --fits H100 --family qwen3 --json
# a 4 GiB device and llama.cpp: Llama-3.1-8B only with layers in host memory (its best
# quality that way: as stored), and not at all without host memory
check_json "fits 8B on 4 GiB split with host memory" 0 \
    '[.models[] | select(.id == "meta-llama/Meta-Llama-3.1-8B")][0] | .fits and .weights == "stored" and .n_gpu_layers > 0' \
    "$VF" models --fits 4GiB --runtime llamacpp --context 4096 --host-memory 32GiB --json
check_json "fits 8B on 4 GiB without host memory" 0 \
    '[.models[] | select(.id == "meta-llama/Meta-Llama-3.1-8B")][0] | (.fits | not) and .n_gpu_layers == -1' \
    "$VF" models --fits 4GiB --runtime llamacpp --context 4096 --json
check_out "fits text" 0 "models fit; largest first" "$VF" models --fits "RTX 4090" --context 8192
check "fits none (1 MiB)" 1 "$VF" models --fits 1MiB
check "fits --gpu refused" 2 "$VF" models --fits H100 --gpu H100
check "knobs need --fits" 2 "$VF" models --context 8192
check "bad --task" 2 "$VF" models --task code
check "bad --max-params" 2 "$VF" models --max-params lots
check "bad --host-memory" 2 "$VF" models --fits H100 --host-memory much
