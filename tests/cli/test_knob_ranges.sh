# Property: over the knobs' full accepted ranges (the largest context, batch,
# prompt and sizes the options accept, on a model at the edge of what the
# memory model admits), every runtime either answers with figures that are
# all non-negative and finite or refuses in one line — never a negative,
# wrapped or NaN figure (issue: "per_gpu_bytes": -9223297131209523200 at
# head_dim 65536 with --context 4294967296).
. tests/cli/lib.sh

cat >"$TMP/config.json" <<'JSON'
{"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 65536, "intermediate_size": 262144,
 "num_hidden_layers": 4, "num_attention_heads": 1, "num_key_value_heads": 1, "head_dim": 65536,
 "vocab_size": 1000000, "max_position_embeddings": 4294967296, "torch_dtype": "bfloat16"}
JSON
M="$TMP/config.json"
BIG=4294967296
i=0
for knobs in "--context $BIG" "--context $BIG --batch $BIG" "--batch $BIG --prompt $BIG" \
    "--context $BIG --attn eager" "--context $BIG --logits all --weights nf4" \
    "--context $BIG --alloc-conf expandable_segments:True" "--context $BIG --cuda-context 1TiB" \
    "--context 1 --batch 1"; do
    for rt in generic transformers litgpt llamacpp "vllm --gpu 16TiB" "vllm --gpu H100 --max-num-seqs $BIG --max-num-batched-tokens $BIG"; do
        i=$((i + 1))
        # shellcheck disable=SC2086 # words
        "$VF" estimate "$M" --runtime $rt $knobs --json >"$TMP/out" 2>"$TMP/err"
        rc=$?
        name="knob ranges $i: --runtime $rt $knobs"
        if [ "$rc" -eq 0 ]; then
            if [ "$(jq '[.. | numbers] | all(. >= 0 and . < 1e300)' "$TMP/out")" = "true" ] &&
                [ "$(jq '.per_gpu_bytes > 0 and .device_bytes > 0' "$TMP/out")" = "true" ]; then
                ok "$name"
            else
                fail "$name" "a negative or missing figure: $(jq -c '[paths(numbers) as $p | select(getpath($p) < 0) | $p]' "$TMP/out")"
            fi
        elif [ "$rc" -le 3 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q '^vramfit: ' "$TMP/err"; then
            ok "$name (refused: $(head -c 80 "$TMP/err"))"
        else
            fail "$name" "exit $rc: $(head -c 200 "$TMP/err")"
        fi
    done
done
# training at the largest batch x sequence the training model takes (2^36 tokens),
# on the edge model (refused: out of range) and on a real one
for model in "$M" Qwen/Qwen3-0.6B; do
for knobs in "--batch 16777216 --context 4096" "--batch 1 --context 1073741824 --attn eager" \
    "--batch 65536 --context 1048576 --grads-kept --optim-impl for-loop" "--batch 4096 --context 32768 --attn eager" \
    "--batch 64 --context 40960 --grads-kept --alloc-conf expandable_segments:True"; do
    i=$((i + 1))
    # shellcheck disable=SC2086 # words
    "$VF" estimate "$model" --train $knobs --json >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" -eq 0 ] && [ "$(jq '[.. | numbers] | all(. >= 0 and . < 1e300)' "$TMP/out")" = "true" ]; then
        ok "knob ranges $i: --train $knobs"
    elif [ "$rc" -ne 0 ] && [ "$rc" -le 3 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ]; then
        ok "knob ranges $i: --train $knobs (refused: $(head -c 80 "$TMP/err"))"
    else
        fail "knob ranges $i: --train $knobs" "exit $rc: $(head -c 200 "$TMP/err") $(head -c 200 "$TMP/out")"
    fi
done
done
