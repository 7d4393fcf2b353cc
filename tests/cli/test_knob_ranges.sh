# Property: over the knobs' full accepted ranges (the largest context, batch,
# prompt and sizes the options accept, on a model at the edge of what the
# memory model admits), every runtime either answers with figures that are
# all non-negative and finite or refuses in one line — never a negative,
# wrapped or NaN figure (issue: "per_gpu_bytes": -9223297131209523200 at
# head_dim 65536 with --context 4294967296).
#
# A refusal counts only when it is the one the tool makes for that reason:
# the model's "out of range for this model and knobs" (exit 3) for a value
# the option accepts, and the option's own range error ("vramfit: --OPT
# VALUE: expected ...", exit 2) one past either end of its range, with the
# end itself accepted. A usage error of any other kind — an unknown or
# renamed option, a value refused inside its range — is a failure.
. tests/cli/lib.sh

Q=Qwen/Qwen3-0.6B

# model_refusal — $TMP/err is one line, the memory model's refusal of a
# figure out of its range (not a usage error; the caller checks exit 3).
model_refusal() {
    [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q '^vramfit: .*out of range for this model and knobs$' "$TMP/err"
}

# range_error OPT VALUE WHY — $TMP/err is exactly the option's own range
# error: "vramfit: --OPT VALUE: WHY; see 'vramfit estimate --help'".
range_error() {
    [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -qxF -- "vramfit: --$1 $2: $3; see 'vramfit estimate --help'" "$TMP/err"
}

# The checks themselves can fail: a renamed option's usage error is not a
# range error, nor a refusal by the model.
"$VF" estimate "$Q" --contxt 4294967297 >"$TMP/out" 2>"$TMP/err"
if range_error contxt 4294967297 "expected a positive count" || range_error context 4294967297 "expected a positive count" ||
    model_refusal; then
    fail "knob ranges: an unknown option is not a range error" "$(cat "$TMP/err")"
else
    ok "knob ranges: an unknown option is not a range error"
fi

# accepted NAME ARGS... — estimate answers (exit 0), or the model refuses
# (exit 3, model_refusal); a usage error fails.
accepted() {
    name=$1
    shift
    # shellcheck disable=SC2086 # words
    "$VF" estimate "$Q" "$@" --json >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" -eq 0 ]; then
        ok "$name"
    elif [ "$rc" -eq 3 ] && model_refusal; then
        ok "$name (the model refuses: $(head -c 80 "$TMP/err"))"
    else
        fail "$name" "exit $rc, a value the option accepts: $(head -c 200 "$TMP/err")"
    fi
}

# refused NAME OPT VALUE WHY ARGS... — exit 2 with the option's range error.
refused() {
    name=$1
    opt=$2
    val=$3
    why=$4
    shift 4
    "$VF" estimate "$Q" "$@" "--$opt" "$val" --json >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" -eq 2 ] && range_error "$opt" "$val" "$why"; then
        ok "$name"
    else
        fail "$name" "exit $rc, expected 2 and \"vramfit: --$opt $val: $why; ...\"; stderr: $(head -c 200 "$TMP/err")"
    fi
}

# Each option's range, both ends: OPT LO HI WHY (empty: the stated range,
# "expected a whole number from LO to HI") [ARGS the option needs].
while read -r opt lo hi why args; do
    why=$(printf '%s' "$why" | tr _ ' ')
    [ "$why" = - ] && why="expected a whole number from $lo to $hi"
    # shellcheck disable=SC2086 # words
    accepted "knob range: --$opt $lo accepted" $args "--$opt" "$lo"
    # shellcheck disable=SC2086 # words
    accepted "knob range: --$opt $hi accepted" $args "--$opt" "$hi"
    if [ "$lo" -gt 0 ]; then
        # shellcheck disable=SC2086 # words
        refused "knob range: --$opt $((lo - 1)) refused" "$opt" "$((lo - 1))" "$why" $args
    fi
    # shellcheck disable=SC2086 # words
    refused "knob range: --$opt $((hi + 1)) refused" "$opt" "$((hi + 1))" "$why" $args
done <<'RANGES'
context 1 4294967296 expected_a_positive_count
batch 1 4294967296 expected_a_positive_count
prompt 1 4294967296 expected_a_positive_count
ubatch 1 4294967296 expected_a_positive_count --runtime llamacpp
max-model-len 1 4294967296 expected_a_positive_count --runtime vllm --gpu H100
max-num-seqs 1 4294967296 expected_a_positive_count --runtime vllm --gpu H100
max-num-batched-tokens 1 4294967296 expected_a_positive_count --runtime vllm --gpu H100
cuda-context 1 1099511627776 expected_a_size_such_as_1343MiB
draft-tokens 1 64 - --runtime vllm --gpu H100
max-loras 1 1024 - --runtime vllm --gpu H100
max-lora-rank 1 4096 - --runtime vllm --gpu H100
max-images 0 256 -
micro-batch 1 16777216 - --train
seq-len 1 1073741824 - --train
grad-accum 1 1048576 - --train
lora-rank 1 65536 - --train
zero 0 3 - --train
RANGES

# The property, on the edge model: at the largest values the knobs accept.
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
        elif [ "$rc" -eq 3 ] && model_refusal; then
            ok "$name (the model refuses: $(head -c 80 "$TMP/err"))"
        else
            fail "$name" "exit $rc (a usage error is not a refusal: every value here is in range): $(head -c 200 "$TMP/err")"
        fi
    done
done
# training at the largest batch x sequence the training model takes (2^36
# tokens), on the edge model and on a real one: figures, or the model's
# refusal (exit 3); one token more is the training model's own range error.
for model in "$M" "$Q"; do
    for knobs in "--batch 16777216 --context 4096" "--batch 1 --context 1073741824 --attn eager" \
        "--batch 65536 --context 1048576 --grads-kept --optim-impl for-loop" "--batch 4096 --context 32768 --attn eager" \
        "--batch 64 --context 40960 --grads-kept --alloc-conf expandable_segments:True"; do
        i=$((i + 1))
        # shellcheck disable=SC2086 # words
        "$VF" estimate "$model" --train $knobs --json >"$TMP/out" 2>"$TMP/err"
        rc=$?
        if [ "$rc" -eq 0 ] && [ "$(jq '[.. | numbers] | all(. >= 0 and . < 1e300)' "$TMP/out")" = "true" ]; then
            ok "knob ranges $i: --train $knobs"
        elif [ "$rc" -eq 3 ] && model_refusal; then
            ok "knob ranges $i: --train $knobs (the model refuses: $(head -c 80 "$TMP/err"))"
        else
            fail "knob ranges $i: --train $knobs" "exit $rc: $(head -c 200 "$TMP/err") $(head -c 200 "$TMP/out")"
        fi
    done
done
for knobs in "--batch 16777217 --context 1" "--batch 1 --context 1073741825" "--batch 16777216 --context 4097"; do
    # shellcheck disable=SC2086 # words
    "$VF" estimate "$Q" --train $knobs --json >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -qx 'vramfit: batch or sequence length out of range' "$TMP/err"; then
        ok "knob range: --train $knobs refused"
    else
        fail "knob range: --train $knobs refused" "exit $rc, expected 2 and 'batch or sequence length out of range': $(head -c 200 "$TMP/err")"
    fi
done
