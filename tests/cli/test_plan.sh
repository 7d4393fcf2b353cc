# vramfit plan: usage, and emitted configurations
# whose flags are the engines' documented ones (tests/data/plan/*.txt, with sources).
. tests/cli/lib.sh

check_err "plan: missing --emit" 2 "missing --emit" "$VF" plan x
check_err "plan: unknown engine" 2 "is not vllm" "$VF" plan x --emit tgi
check_err "plan: --train with vllm" 2 "deepspeed" "$VF" plan x --emit vllm --train
check_err "plan: missing model" 2 "missing MODEL" "$VF" plan --emit vllm

# flags_ok NAME LIST FILE: every -flag in FILE is in LIST, with an allowed value where LIST names them
flags_ok() {
    name=$1
    list=$2
    bad=$(tr ' ' '\n' <"$3" | awk -v list="$list" '
        BEGIN { while ((getline l < list) > 0) { if (l ~ /^#/ || l == "") continue
                n = split(l, f, " "); doc[f[1]] = 1; if (n > 1) vals[f[1]] = "|" f[2] "|" } }
        prev != "" { if (index(vals[prev], "|" $0 "|") == 0) print prev " " $0; prev = ""; next }
        /^-/ { if (!($0 in doc)) print $0; else if ($0 in vals) prev = $0 }')
    if [ -z "$bad" ]; then ok "$name"; else fail "$name" "undocumented: $bad"; fi
}

run "plan: vllm for 70B on H100" 0 "$VF" plan meta-llama/Llama-3.1-70B --emit vllm --gpu H100 --context 8192 --max-num-seqs 256 &&
    if grep -q '^vllm serve meta-llama/Llama-3.1-70B .*--tensor-parallel-size 2 ' "$TMP/out"; then ok "plan: vllm tp 2"; else fail "plan: vllm tp 2" "$(cat "$TMP/out")"; fi
cp "$TMP/out" "$TMP/vllm.txt"
flags_ok "plan: vllm flags documented" tests/data/plan/vllm-flags.txt "$TMP/vllm.txt"
check_out "plan: vllm max-model-len" 0 "--max-model-len 8192" "$VF" plan Qwen/Qwen3-8B --emit vllm --gpu H100 --context 8192

run "plan: llama.cpp" 0 "$VF" plan Qwen/Qwen3-8B --emit llamacpp --gpu RTX4090 --context 8192 --kv q8_0 &&
    cp "$TMP/out" "$TMP/llama.txt" && flags_ok "plan: llama.cpp flags documented" tests/data/plan/llamacpp-flags.txt "$TMP/llama.txt"
check_out "plan: llama.cpp kv" 0 "-ctk q8_0 -ctv q8_0" "$VF" plan Qwen/Qwen3-8B --emit llamacpp --gpu RTX4090 --context 8192 --kv q8_0

run "plan: deepspeed" 0 "$VF" plan meta-llama/Llama-3.1-8B --emit deepspeed --gpu H100x4 --zero 3 --seq-len 2048 &&
    if jq -e '.zero_optimization.stage == 3 and .train_micro_batch_size_per_gpu >= 1' "$TMP/out" >/dev/null; then
        ok "plan: deepspeed JSON"
    else
        fail "plan: deepspeed JSON" "$(head -c 300 "$TMP/out")"
    fi
bad=$(jq -r '[paths | map(tostring) | join(".")] | .[]' "$TMP/out" | grep -vxF -f tests/data/plan/deepspeed-keys.txt)
if [ -z "$bad" ]; then ok "plan: deepspeed keys documented"; else fail "plan: deepspeed keys documented" "$bad"; fi

check_out "plan: accelerate max_memory" 0 'max_memory={0: "[0-9]*MiB"' "$VF" plan Qwen/Qwen3-8B --emit accelerate --gpu RTX4090 --context 4096
check_json "plan: json" 0 '.engine == "vllm" and (.config | startswith("vllm serve"))' "$VF" plan Qwen/Qwen3-8B --emit vllm --gpu H100 --json

# DeepSpeed for full fine-tuning of an 8B model on 8 x A100 80GB: plain data
# parallel does not fit (16 bytes of states per parameter on every GPU), so the
# plan shards with ZeRO-3 over the GPUs given, and the model agrees it fits.
check_json "plan: deepspeed shards over the GPUs given" 0 \
    '.gpus == 8 and (.config | test("\"stage\": 3"))' \
    "$VF" plan Qwen/Qwen3-8B --emit deepspeed --gpu A100-80GBx8 --json
check "plan: the zero-3 plan fits by the model" 0 "$VF" fit Qwen/Qwen3-8B --train --zero 3 --gpu A100-80GBx8
check "plan: plain data parallel does not" 1 "$VF" fit Qwen/Qwen3-8B --train --gpu A100-80GBx8
