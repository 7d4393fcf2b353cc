# vramfit estimate: the seeds' worked examples, the JSON contract, knobs and
# their errors. Models are sparse safetensors files written here; GGUF cases
# use real llama.cpp headers ($REF/llamacpp/heads, grown to full size).
. tests/cli/lib.sh

# mk_st FILE HEADER_JSON DATA_BYTES — a safetensors file with zero (sparse) data
mk_st() {
    n=${#2}
    b=""
    i=0
    while [ $i -lt 8 ]; do
        b="$b\\$(printf %03o $((n % 256)))"
        n=$((n / 256))
        i=$((i + 1))
    done
    printf "$b" >"$1"
    printf '%s' "$2" >>"$1"
    truncate -s $((8 + ${#2} + $3)) "$1"
}

# 1e9 parameters in fp32 (SEEDS.md: "1B in fp32 = 4 GB")
mk_st "$TMP/1b.safetensors" '{"w":{"dtype":"F32","shape":[31250,32000],"data_offsets":[0,4000000000]}}' 4000000000
check_json "1B fp32 = 4 GB of weights" 0 '.components.weights == 4000000000' "$VF" estimate "$TMP/1b.safetensors" --json
check_json "json contract" 0 '.mode == "inference" and (.total_bytes|type) == "number" and (.per_gpu_bytes|type) == "number" and .gpus == 1 and (.components|keys) == ["activations","gradients","kv_cache","optimizer","overhead","weights"] and (.assumptions|type) == "object"' "$VF" estimate "$TMP/1b.safetensors" --json
check_json "re-priced to bf16: 2 GB" 0 '.components.weights == 2000000000 and .assumptions.weight_bits == 16' "$VF" estimate "$TMP/1b.safetensors" --weights bf16 --json
check_out "table in GB" 0 "weights  *4.00 GB" "$VF" estimate "$TMP/1b.safetensors" --units gb
check_out "table in GiB" 0 "weights  *3.73 GiB" "$VF" estimate "$TMP/1b.safetensors"
check_out "stacked bar" 0 "|WWWW" "$VF" estimate "$TMP/1b.safetensors"
check_out "assumptions listed" 0 "^assumptions:" "$VF" estimate "$TMP/1b.safetensors"
check_out "explain shows formulas" 0 "weights = sum over 1 tensors" "$VF" estimate "$TMP/1b.safetensors" --explain
# 4e9 parameters stored fp32, loaded in BF16: 8 GB (SEEDS.md, a 4B model)
mk_st "$TMP/4b.safetensors" '{"w":{"dtype":"F32","shape":[62500,64000],"data_offsets":[0,16000000000]}}' 16000000000
check_json "4B in bf16 = 8 GB" 0 '.components.weights == 8000000000' "$VF" estimate "$TMP/4b.safetensors" --weights bf16 --json
check_json "tp 2 halves the matrices" 0 '.components.weights == 8000000000 and .gpus == 2 and .total_bytes == 2 * .per_gpu_bytes' "$VF" estimate "$TMP/4b.safetensors" --tp 2 --json
check_json "transformers adds the CUDA context" 0 '.components.overhead > .context_bytes and .context_bytes > 400000000 and .device_bytes == .per_gpu_bytes and .assumptions.runtime == "transformers"' "$VF" estimate "$TMP/1b.safetensors" --runtime transformers --context 16 --json

# knobs and their errors
check_err "unknown runtime" 2 "runtime" "$VF" estimate "$TMP/1b.safetensors" --runtime tgi
check_err "unknown weights" 2 "weights" "$VF" estimate "$TMP/1b.safetensors" --weights q17
check_err "bad gpu-util" 2 "gpu-util" "$VF" estimate "$TMP/1b.safetensors" --gpu-util 1.5
check_err "bad gpu" 2 "no such gpu" "$VF" estimate "$TMP/1b.safetensors" --gpu lots
check_err "bad context" 2 "context" "$VF" estimate "$TMP/1b.safetensors" --context -5
check_err "bad logits" 2 "logits" "$VF" estimate "$TMP/1b.safetensors" --logits some
check_err "bad flash-attn" 2 "flash-attn" "$VF" estimate "$TMP/1b.safetensors" --flash-attn maybe
check_err "bad tensor split" 2 "tensor-split" "$VF" estimate "$TMP/1b.safetensors" --tensor-split 1,,x
check_err "unknown option" 2 "unknown option" "$VF" estimate "$TMP/1b.safetensors" --bogus
check_err "missing model" 2 "missing MODEL" "$VF" estimate
check_err "no such model" 3 "no such file" "$VF" estimate /nonexistent/x.safetensors
check_err "vllm needs a gpu" 2 "gpu" "$VF" estimate "$TMP/1b.safetensors" --runtime vllm
check_err "vllm without heads" 3 "KV cache" "$VF" estimate "$TMP/1b.safetensors" --runtime vllm --gpu 80GB
check_out "help" 0 "max-num-batched-tokens" "$VF" estimate --help

# llama.cpp on real GGUF files (active once the GGUF reader is in)
G=$(grow_gguf llama-tiny-Q4_K_M.gguf)
if "$VF" inspect "$G" >/dev/null 2>&1; then
    # results.json llama-tiny-Q4_K_M-c4096-fa1: KV 2.00 MiB (4096 cells x 2 layers x
    # 2 x 64 f16), output 0.12 MiB (32000 x 4), compute 63.0 MiB
    check_json "llamacpp gguf kv" 0 '.runtime_buffers.context == 2097152 and .runtime_buffers.output == 128000' "$VF" estimate "$G" --runtime llamacpp --context 4096 --flash-attn on --n-gpu-layers 0 --json
    check_json "gguf defaults to llamacpp" 0 '.runtime == "llamacpp" and .runtime_buffers.context == 2097152' "$VF" estimate "$G" --context 4096 --json
    check_json "llamacpp gguf compute" 0 '(.runtime_buffers.compute / 1048576 - 63.0) | fabs < 6.3' "$VF" estimate "$G" --runtime llamacpp --context 4096 --flash-attn on --n-gpu-layers 0 --json
fi

# vLLM on a catalog model and GPU: the pool, in tokens, whole 16-token blocks
# of Llama-3.1-8B's 32 layers x 2 x 8 x 128 x 2 B = 2 MiB
L="$REF/models/meta-llama__Meta-Llama-3.1-8B.json"
check_json "vllm pool by gpu name" 0 '.starts and .kv_cache_tokens > 400000 and .kv_cache_tokens % 16 == 0 and .components.kv_cache == .kv_cache_tokens / 16 * 2097152 and .max_concurrency > 20' "$VF" estimate "$L" --runtime vllm --gpu H100 --max-model-len 16000 --json
check_json "vllm pool by size" 0 '.starts and .assumptions.kv_bytes_per_token == 131072' "$VF" estimate "$L" --runtime vllm --gpu 80GB --max-model-len 16000 --json
check_json "vllm fp8 cache doubles the tokens" 0 '.assumptions.kv_bytes_per_token == 65536' "$VF" estimate "$L" --runtime vllm --gpu 80GB --max-model-len 16000 --kv fp8 --json
check_json "vllm does not start at 128k on 24 GB" 0 '(.starts | not) and (.reason | test("max_model_len 131072"))' "$VF" estimate "$L" --runtime vllm --gpu 24GB --json
check_out "vllm does not start, said in the table" 0 "vLLM does not start" "$VF" estimate "$L" --runtime vllm --gpu 24GB
# llama.cpp on the same config: -c 8192 f16 = 1024 MiB of KV (measured.csv C12)
# Q4_K_M of Llama-3.1-8B as llama-quantize makes it: ~4.9 bits per weight
check_json "llama.cpp Q4_K_M mix" 0 '.assumptions.weight_bits > 4.8 and .assumptions.weight_bits < 5.0' "$VF" estimate "$L" --weights q4_k_m --json
check_json "llamacpp context 8192" 0 '.runtime_buffers.context == 1073741824 and .runtime_buffers.output == 513024' "$VF" estimate "$L" --runtime llamacpp --context 8192 --json
check_json "llamacpp q8_0 K and V" 0 '.runtime_buffers.context == 8192 * 32 * 2 * 34 * 32' "$VF" estimate "$L" --runtime llamacpp --context 8192 --kv q8_0 --flash-attn on --json
check_err "llamacpp quantized V needs flash attention" 2 "flash attention" "$VF" estimate "$L" --runtime llamacpp --kv f16,q8_0 --flash-attn off
check_json "llamacpp partial offload" 0 '.host_bytes > .components.weights' "$VF" estimate "$L" --runtime llamacpp --n-gpu-layers 8 --json
check_json "llamacpp two GPUs" 0 '.gpus == 2 and .total_bytes > .per_gpu_bytes' "$VF" estimate "$L" --runtime llamacpp --tensor-split 1,1 --json
check_json "transformers eager vs sdpa" 0 '.components.activations > 32 * 4096 * 4096 * 6' "$VF" estimate "$L" --runtime transformers --context 4096 --attn eager --json
check_json "train routes to the training model" 0 '.mode == "training"' "$VF" estimate "$L" --train --json

# Speed bounds beside the memory figure when the GPU is a catalog one: decode is
# bounded by bandwidth (H100 SXM datasheet: 3.35 TB/s) over the bytes read per token.
check_json "estimate: decode bound = bandwidth / bytes per token (H100 SXM 3.35 TB/s)" 0 \
    '(.speed_bounds.decode_tokens_per_s_per_sequence_max * .speed_bounds.bytes_read_per_token / 3.35e12 - 1 | fabs) < 0.001' \
    "$VF" estimate Qwen/Qwen3-8B --gpu H100 --context 8192 --json
check_out "estimate: speed bounds printed for a catalog GPU" 0 "Speed bounds (upper limits" \
    "$VF" estimate Qwen/Qwen3-8B --gpu H100 --context 8192
check_json "estimate: no speed bounds for a bare size" 0 'has("speed_bounds") | not' \
    "$VF" estimate Qwen/Qwen3-8B --gpu 80GB --context 8192 --json

# --gpu GxN without --tp/--pp (docs/design.md §2): N devices that split one model —
# vLLM tensor parallel N, llama.cpp a layer split over N, training N
# data-parallel ranks. Each must equal the same split spelled out by hand.
same_split() {
    name=$1 a=$2 b=$3
    # shellcheck disable=SC2086
    "$VF" estimate $a --json >"$TMP/a.json" 2>"$TMP/a.err"
    # shellcheck disable=SC2086
    "$VF" estimate $b --json >"$TMP/b.json" 2>"$TMP/b.err"
    ka=$(jq -c '[.gpus, .per_gpu_bytes, .total_bytes, .components, .starts]' "$TMP/a.json" 2>&1)
    kb=$(jq -c '[.gpus, .per_gpu_bytes, .total_bytes, .components, .starts]' "$TMP/b.json" 2>&1)
    if [ -n "$ka" ] && [ "$ka" = "$kb" ] && [ "$(jq .gpus "$TMP/a.json")" -gt 1 ]; then ok "$name"; else fail "$name" "'$a': $ka; '$b': $kb"; fi
}
same_split "gpu H100x2 on vllm = tensor parallel 2" \
    "meta-llama/Llama-3.1-70B --runtime vllm --gpu H100x2 --context 8192" \
    "meta-llama/Llama-3.1-70B --runtime vllm --gpu H100 --tp 2 --context 8192"
check_json "gpu H100x2 on vllm says tp 2" 0 '.gpus == 2 and (.assumptions | tostring | test("tp 2"))' \
    "$VF" estimate meta-llama/Llama-3.1-70B --runtime vllm --gpu H100x2 --context 8192 --json
same_split "gpu RTX4090x2 on llama.cpp = an equal layer split" \
    "$L --runtime llamacpp --gpu RTX4090x2 --context 8192" \
    "$L --runtime llamacpp --gpu RTX4090 --tensor-split 1,1 --context 8192"
same_split "gpu H100x4 for training = 4 data-parallel ranks" \
    "$L --train --zero 3 --gpu H100x4" "$L --train --zero 3 --gpu H100 --gpus 4"
check_json "an explicit --tp wins over GxN" 0 '(.assumptions | tostring | test("tp 2"))' \
    "$VF" estimate "$L" --runtime vllm --gpu H100x4 --tp 2 --json
