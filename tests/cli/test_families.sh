# The 2025-26 families from the command line: no silent guesses (an unknown
# model_type is approximate everywhere and fit/plan refuse it without
# --approximate), Kimi-K2 counted as DeepSeek-V3, stored elements beside
# params, and recurrent state flat in context (hand-derived below).
. tests/cli/lib.sh
M=$REF/models2026

# an unknown family with the generic MoE keys (a Kimi-K2-sized MoE under a new name)
jq '.model_type = "newmoe" | .architectures = ["NewMoeForCausalLM"] | .n_routed_experts = 384 | del(.quantization_config)' \
    "$M/deepseek-ai__DeepSeek-V3.json" >"$TMP/unknown.json"
check_json "unknown family: inspect says approximate" 0 '.approximate == true' "$VF" inspect --json "$TMP/unknown.json"
check_out "unknown family: inspect table says APPROXIMATE" 0 "^APPROXIMATE .*'newmoe'" "$VF" inspect "$TMP/unknown.json"
check_json "unknown family: estimate says approximate" 0 '.approximate == true' "$VF" estimate --json "$TMP/unknown.json"
check_err "unknown family: fit refuses" 3 "'newmoe' is not a known family.*--approximate" \
    "$VF" fit "$TMP/unknown.json" --gpu H100x8
if [ "$(wc -l <"$TMP/err")" -le 2 ] && [ ! -s "$TMP/out" ]; then ok "unknown family: refusal is one line, nothing on stdout"; else
    fail "unknown family: refusal is one line, nothing on stdout" "$(cat "$TMP/err")"; fi
check_err "unknown family: plan refuses" 3 "plan will not answer from a guess" \
    "$VF" plan "$TMP/unknown.json" --emit vllm --gpu H100x8
check_json "unknown family: fit --approximate says so" 1 '.approximate == true and .fits == false' \
    "$VF" fit "$TMP/unknown.json" --gpu H100x8 --approximate --json
check_out "unknown family: fit --approximate table says so" 1 "^APPROXIMATE: model_type 'newmoe'" \
    "$VF" fit "$TMP/unknown.json" --gpu H100x8 --approximate
# the generic MoE keys are honoured: 384 experts make it a trillion-parameter model
check_json "unknown family: experts counted" 0 '.params > 1000000000000' "$VF" inspect --json "$TMP/unknown.json"

# kimi_k2 is DeepSeek-V3's architecture: the same count as that config under deepseek_v3
jq '.model_type = "kimi_k2" | .n_routed_experts = 384' "$M/deepseek-ai__DeepSeek-V3.json" >"$TMP/kimi.json"
jq '.n_routed_experts = 384' "$M/deepseek-ai__DeepSeek-V3.json" >"$TMP/ds384.json"
want=$("$VF" inspect --json "$TMP/ds384.json" 2>/dev/null | jq .stored_elements)
check_json "kimi_k2 = deepseek_v3 layout, exact" 0 ".approximate == false and .stored_elements == $want" \
    "$VF" inspect --json "$TMP/kimi.json"
# the issue's case: 8 x H100 do not hold a trillion-parameter FP8 model
check "kimi_k2 does not fit 8 x H100" 1 "$VF" fit "$TMP/kimi.json" --gpu H100x8 --runtime vllm

# stored elements: DeepSeek-V3's FP8 checkpoint stores 41,540,496 scale elements beside its weights
check_json "stored_elements = params + fp8 scales" 0 '.stored_elements - .params == 41540496' \
    "$VF" inspect --json "$M/deepseek-ai__DeepSeek-V3.json"

# Recurrent state, transformers runtime, bf16, one sequence. Qwen3-Next-80B-A3B:
# 12 full-attention layers x (2 KV heads x 256 x K,V x 2 B) = 24,576 B per token;
# 36 DeltaNet layers x (conv 3 x (2 x 16 x 128 + 32 x 128) x 2 B + state 32 x 128 x 128 x 2 B)
# = 36 x 1,097,728 = 39,518,208 B whatever the context.
Q=$M/Qwen__Qwen3-Next-80B-A3B-Instruct.json
check_json "qwen3-next kv at 4096 = attention + recurrent state" 0 '.components.kv_cache == 24576 * 4096 + 39518208' \
    "$VF" estimate --json "$Q" --context 4096
check_json "qwen3-next kv at 65536 = attention + the same state" 0 '.components.kv_cache == 24576 * 65536 + 39518208' \
    "$VF" estimate --json "$Q" --context 65536
check_json "assumptions say recurrent state" 0 '[.assumptions[] | tostring | select(test("recurrent state: 36 layers"))] | length == 1' \
    "$VF" estimate --json "$Q"
# mamba-130m (f32): 24 layers x (conv 3 x 1536 + ssm 1536 x 16) x 4 B = 2,801,664 B, flat
B=$M/state-spaces__mamba-130m-hf.json
for c in 1024 131072; do
    check_json "mamba-130m state flat at $c tokens" 0 '.components.kv_cache == 2801664' "$VF" estimate --json "$B" --context "$c"
done
check_json "mamba-130m on llama.cpp: state flat" 0 '.components.kv_cache == 2801664' \
    "$VF" estimate --json "$B" --runtime llamacpp --context 65536
# vLLM's hybrid pages: Qwen3-Next at tp 1, 2,048 B per token and attention layer; a state page
# of 1,097,728 B needs 536 tokens, rounded up to a multiple of 16: 544 (vLLM logs "Setting
# attention block size to 544 tokens" for this model); 48 layers in 4 groups of 12
check_json "vllm hybrid: attention block 544 tokens" 0 '[.assumptions[] | tostring | select(test("block raised to 544 tokens, 4 groups of 12"))] | length == 1' \
    "$VF" estimate --json "$Q" --runtime vllm --gpu 1TB

# Falcon-H1-7B-Base (bf16): every layer attends and keeps a Mamba-2 state. KV 44 layers x
# (2 KV heads x 128 x K,V x 2 B) = 45,056 B per token; state per layer conv 3 x (3072 + 2 x 256)
# + SSM 24 x 128 x 256 = 797,184 elements x 2 B = 1,594,368 B, x 44 = 70,152,192 B, flat.
F=tests/data/configs/tiiuae__Falcon-H1-7B-Base.json
for c in 4096 65536; do
    check_json "falcon-h1 kv at $c = attention + the same state" 0 ".components.kv_cache == 45056 * $c + 70152192" \
        "$VF" estimate --json "$F" --context "$c"
done
# llama.cpp (falcon-h1: filter_attn and filter_recr both true): f16 KV + f32 r/s in every layer
check_json "falcon-h1 on llama.cpp: KV + f32 state" 0 '.components.kv_cache == 45056 * 4096 + 44 * 797184 * 4' \
    "$VF" estimate --json "$F" --runtime llamacpp --context 4096
# vLLM: 1,024 B per token and attention layer; the 1,594,368 B state page needs 1,557 tokens,
# rounded up to 1,568; 44 attention + 44 Mamba layers in 2 groups of 44
check_json "falcon-h1 vllm: block 1568 tokens, attention and state groups" 0 \
    '[.assumptions[] | tostring | select(test("block raised to 1568 tokens, 2 groups of 44 layers \\(1 attention, 1 recurrent\\)"))] | length == 1' \
    "$VF" estimate --json "$F" --runtime vllm --gpu 1TB
# Zamba2-2.7B (bf16): KV only in the 9 hybrid layers, 32 heads x 160 x K,V x 2 B = 20,480 B each
# = 184,320 B per token; state per layer conv 3 x (5120 + 2 x 64) + SSM 80 x 64 x 64 = 343,424
# elements x 2 B = 686,848 B, x 54 = 37,089,792 B. vLLM: 686,848 / 20,480 = 33.5 -> 48 tokens;
# 9 attention + 54 Mamba layers in groups of 9: 1 attention group, 6 recurrent
Z=$M/Zyphra__Zamba2-2.7B.json
check_json "zamba2 kv at 4096 = 9 attention layers + 54 states" 0 '.components.kv_cache == 184320 * 4096 + 37089792' \
    "$VF" estimate --json "$Z" --context 4096
check_json "zamba2 vllm: block 48 tokens, 7 groups of 9" 0 \
    '[.assumptions[] | tostring | select(test("block raised to 48 tokens, 7 groups of 9 layers \\(1 attention, 6 recurrent\\)"))] | length == 1' \
    "$VF" estimate --json "$Z" --runtime vllm --gpu 1TB

# llama.cpp's own recurrent (r/s) and KV buffers for hybrid architectures
# ($REF/llamacpp/hybrid/results.json: llama_get_memory_breakdown's context bytes)
H=$REF/llamacpp/hybrid
for n in mamba granitehybrid qwen35 jamba nemotron_h; do
    cp "$H/heads/$n-F16.gguf.head" "$TMP/$n.gguf" && truncate -s "$(cat "$H/heads/$n-F16.gguf.head.size")" "$TMP/$n.gguf"
    want=$(jq --arg f "$n-F16.gguf" '.runs[] | select(.model_file == $f) | .exact_bytes.CPU.context' "$H/results.json")
    ctx=$(jq --arg f "$n-F16.gguf" '.runs[] | select(.model_file == $f) | .ctx' "$H/results.json")
    check_json "llama.cpp $n: KV + recurrent state = its $want B" 0 ".components.kv_cache == $want" \
        "$VF" estimate --json "$TMP/$n.gguf" --runtime llamacpp --context "$ctx"
done
# ... and with a model-based draft (--draft-tokens N, no --draft: the model's MTP head), llama.cpp's
# n_rs_seq = N rollback snapshots of each sequence's state where the architecture keeps them (qwen35),
# none where it clamps n_rs_seq to 0 (mamba, granitehybrid): measured, hybrid/results.json rollback_runs
jq -c '.rollback_runs[] | [.model_name, .ctx, .n_parallel, .n_rs_seq_requested, .exact_bytes.CPU.context]' \
    "$H/results.json" | tr -d '[]"' | while IFS=, read -r n ctx np rs want; do
    check_json "llama.cpp $n c$ctx np$np draft $rs: KV + state and snapshots = its $want B" 0 \
        ".components.kv_cache == $want" \
        "$VF" estimate --json "$TMP/$n.gguf" --runtime llamacpp --context "$ctx" --parallel "$np" --draft-tokens "$rs"
done

# serving extras
Q8=Qwen/Qwen3-8B
base=$("$VF" estimate --json $Q8 --runtime vllm --gpu H100 | jq .components.weights)
# Qwen3-0.6B as draft: its weights join the target's before vLLM sizes the pool
check_json "draft: weights grow by the draft's" 0 ".components.weights > $base + 1000000000" \
    "$VF" estimate --json $Q8 --runtime vllm --gpu H100 --draft Qwen/Qwen3-0.6B --draft-tokens 4
# LoRA slots, hand-derived: Qwen3-8B, 36 layers, h 4096, q 32 x 128, kv 8 x 128, ff 12288, tp 1, bf16;
# per layer and rank: q,k,v 3h + (4096 + 2 x 1024) + o 4096 + h; gate,up 2h + 2 x 12288; down 12288 + h
# = 12288 + 6144 + 4096 + 4096 + 8192 + 24576 + 12288 + 4096 = 75776; x 36; plus the embedding (A [V, r],
# B [h, r]) and the head (A [r, h], B [V, r]): 2 x 151936 + 2 x 4096; x rank 16 x 1 slot x 2 B
check_json "lora: one rank-16 slot (vLLM defaults)" 0 ".components.weights == $base + (75776 * 36 + 2 * 151936 + 2 * 4096) * 16 * 2" \
    "$VF" estimate --json $Q8 --runtime vllm --gpu H100 --enable-lora
check_err "draft: a missing model is one line" 3 "draft" "$VF" estimate $Q8 --draft /nonexistent/model.gguf
check_err "image-size: malformed" 2 "image-size" "$VF" estimate $Q8 --image-size 12x
# Qwen2.5-VL at 1280 x 720: cells of 28 pixels, 46 x 26 = 1,196 tokens an image (transformers: in the
# KV, 28 layers x 4 KV heads x 128 x K,V x 2 B = 57,344 B per token)
VL=$M/Qwen__Qwen2.5-VL-7B-Instruct.json
kv0=$("$VF" estimate --json "$VL" --context 4096 | jq '.components.kv_cache')
check_json "images: 2 x 1196 tokens of KV" 0 ".components.kv_cache == $kv0 + 2 * 1196 * 57344" \
    "$VF" estimate --json "$VL" --context 4096 --max-images 2 --image-size 1280x720
# image tokens at the processor's largest image, hand-derived per family:
# LLaVA-1.5 (CLIP 336 / 14)^2 = 576; Qwen3-VL 4096^2 / 32^2 = 16,384; LightOnOCR (Pixtral 1540 / 28 = 55)
# 55 x 55 + 55 row breaks = 3,080; InternVL3 12 tiles + thumbnail x 256 = 3,328; SmolVLM-256M
# 2048 / 512 = 4 x 4 tiles + global = 17 x (512 / 16)^2 / 4^2 = 1,088
for pair in llava-hf__llava-1.5-7b-hf:576 Qwen__Qwen3-VL-2B-Instruct:16384 lightonai__LightOnOCR-2-1B:3080 \
    OpenGVLab__InternVL3-1B-hf:3328 HuggingFaceTB__SmolVLM-256M-Instruct:1088; do
    f=${pair%:*} n=${pair#*:}
    check_json "image tokens: $f $n" 0 "[.assumptions[] | tostring | select(test(\"1 per request, $n context tokens\"))] | length == 1" \
        "$VF" estimate --json "$M/$f.json" --max-images 1
done

# vLLM's profile images, by hand from its MultiModalBudget: LLaVA-1.5-7B, T = 576 tokens an image,
# max_model_len 4096 (7 a prompt at the 999 default). H100: 8,192 batched tokens, 1,024 sequences:
# min(8192 / 576, 1024 x 7) = 14 images; outputs 14 x 576 x 4096 x 2 B = 66,060,288 B; transient
# (our bound) 14 x 576 x (5 x 1024 + 4096) x 2 B = 148,635,648 B. A100: 2,048 tokens: 3 images.
# --max-num-seqs 2 --max-images 1: min(14, 2 x 1) = 2. Qwen2.5-VL-7B: T = 16,384 > 8,192, so the
# budget is T and one image; its outputs 16384 x 3584 x 2 B = 117,440,512 B, with or without --max-images.
L=$M/llava-hf__llava-1.5-7b-hf.json
for pair in "H100:14 dummy images of 576 tokens.*transient 148635648 B.*outputs 66060288 B" "A100:3 dummy images of 576 tokens" \
    "H100 --max-num-seqs 2 --max-images 1:2 dummy images"; do
    a=${pair%%:*} want=${pair#*:}
    # shellcheck disable=SC2086
    check_json "vllm profile images: llava $a" 0 "[.assumptions[] | tostring | select(test(\"the tower on $want\"))] | length == 1" \
        "$VF" estimate --json "$L" --runtime vllm --gpu $a
done
check_json "vllm profile images: qwen2.5-vl one image, budget 16384" 0 \
    '[.assumptions[] | tostring | select(test("the tower on 1 dummy images of 16384 tokens .*budget 16384 tokens.*outputs 117440512 B"))] | length == 1' \
    "$VF" estimate --json "$VL" --runtime vllm --gpu H100
# profile_run keeps the tower's outputs through the decoder's pass, not through the tower's own:
# peak = max(tower + cuBLAS workspace, decoder + outputs). Qwen2.5-VL-7B at 1,024 batched tokens and
# one sequence: tower 65,536 patches x (5 x 1280 + 3420) x 2 B = 1,287,127,040 + Hopper's 32 MiB
# workspace = 1,320,681,472; the decoder (1,024 x (3 x 3584 + 3 x 18944) x 2 B = 138,412,032 +
# workspace) + outputs 117,440,512 stays below it (the old max + outputs gave 1,404,567,552).
check_json "vllm profile: max(tower, decoder + tower outputs)" 0 ".components.activations == 1320681472" \
    "$VF" estimate --json "$VL" --runtime vllm --gpu H100 --max-num-batched-tokens 1024 --max-num-seqs 1 --max-model-len 8192

# jamba from a config.json with the dimensions of llama.cpp's jamba GGUF above (4 layers,
# attention at layer 2, dense MLPs, tied): the same element count as that converted file,
# and llama.cpp's own KV + r/s bytes (its states in f32 whatever the model dtype)
jq -n '{model_type: "jamba", hidden_size: 256, num_hidden_layers: 4, num_attention_heads: 8,
    num_key_value_heads: 2, intermediate_size: 512, vocab_size: 32000, num_experts: 1, num_experts_per_tok: 1,
    attn_layer_period: 4, attn_layer_offset: 2, mamba_d_state: 16, mamba_d_conv: 4, mamba_expand: 2,
    mamba_dt_rank: 16, tie_word_embeddings: true, torch_dtype: "bfloat16"}' >"$TMP/jamba.json"
gp=$("$VF" inspect --json "$TMP/jamba.gguf" | jq .params)
check_json "jamba config = the GGUF's $gp elements" 0 ".params == $gp and .approximate == false" \
    "$VF" inspect --json "$TMP/jamba.json"
want=$(jq '.runs[] | select(.model_file == "jamba-F16.gguf") | .exact_bytes.CPU.context' "$H/results.json")
check_json "jamba config on llama.cpp: $want B of KV + state" 0 ".components.kv_cache == $want" \
    "$VF" estimate --json "$TMP/jamba.json" --runtime llamacpp --context 4096

# the vision tower counted apart: Qwen2.5-VL-7B's text model is Qwen2.5-7B's architecture
# (same dims, untied), so params - vision_params is that model's count
t=$("$VF" inspect --json Qwen/Qwen2.5-7B-Instruct | jq .params)
check_json "vision_params: Qwen2.5-VL-7B minus its tower = Qwen2.5-7B" 0 ".params - .vision_params == $t and .vision_params > 0" \
    "$VF" inspect --json "$M/Qwen__Qwen2.5-VL-7B-Instruct.json"

# RoBERTa's heads (arch_roberta.c) against Hub totals (safetensors.total, as
# tests/reference/catalog/llmfit-models.tsv records them) of repositories with
# xlm-roberta-large's and -base's sizes: the bare XLMRobertaModel keeps its
# pooler (intfloat/multilingual-e5-large-instruct 559,890,432;
# multilingual-e5-large 559,890,946 with the position_ids buffer that
# transformers before 4.31 saved; TechWolf/JobBERT-v3 278,043,648 at base
# size); the sequence classifier has none (BAAI/bge-reranker-large, one
# label: 559,891,971 with position_ids)
X=data/models/FacebookAI__xlm-roberta-large.json
jq '.architectures = ["XLMRobertaModel"] | .transformers_version = "4.39.3"' "$X" >"$TMP/xlmr-model.json"
check_json "xlm-roberta-large as XLMRobertaModel = multilingual-e5-large-instruct's 559890432" 0 \
    '.stored_elements == 559890432 and .approximate == false' "$VF" inspect --json "$TMP/xlmr-model.json"
jq '.architectures = ["XLMRobertaModel"]' "$X" >"$TMP/xlmr-model-old.json"
check_json "xlm-roberta-large as XLMRobertaModel, transformers 4.17 = multilingual-e5-large's 559890946" 0 \
    '.stored_elements == 559890946' "$VF" inspect --json "$TMP/xlmr-model-old.json"
jq '.architectures = ["XLMRobertaForSequenceClassification"] | .id2label = {"0": "LABEL_0"}' "$X" >"$TMP/xlmr-rerank.json"
check_json "xlm-roberta-large as a one-label classifier = bge-reranker-large's 559891971" 0 \
    '.stored_elements == 559891971' "$VF" inspect --json "$TMP/xlmr-rerank.json"
jq '.architectures = ["XLMRobertaModel"] | .transformers_version = "4.39.3"' data/models/FacebookAI__xlm-roberta-base.json \
    >"$TMP/xlmr-base.json"
check_json "xlm-roberta-base as XLMRobertaModel = JobBERT-v3's 278043648" 0 '.stored_elements == 278043648' \
    "$VF" inspect --json "$TMP/xlmr-base.json"

# nemotron and cohere, counted by hand from transformers' module lists
# (modeling_nemotron.py, modeling_cohere.py) with each config's sizes, no Hub
# total held: nemotron3-8b = 2 x 256000 x 4096 (untied) + 32 x (4 x 4096^2
# attention + 2 x 16384 x 4096 ReLU² MLP + 2 LayerNorms of weight and bias)
# + the final LayerNorm (2 x 4096); c4ai-command-r-plus = 256000 x 12288
# (tied) + 64 x (2 x 12288^2 + 2 x 1024 x 12288 attention + 96 x 128 and
# 8 x 128 q/k norms + 3 x 33792 x 12288 MLP + one norm of 12288) + 12288
check_json "nemotron: thhaus/nemotron3-8b = 8540135424 by hand" 0 \
    '.params == 8540135424 and .approximate == false' "$VF" inspect --json thhaus/nemotron3-8b
check_json "cohere: c4ai-command-r-plus = 103810674688 by hand" 0 \
    '.params == 103810674688 and .approximate == false' "$VF" inspect --json alpindale/c4ai-command-r-plus-GPTQ
# jais2: a Jais-2-8B fine-tune's sizes = inceptionai/Jais-2-8B-Chat's Hub
# total (llmfit hf_models.json parameters_raw, tests/reference/catalog)
check_json "jais2: Jais-2-8B's sizes = Jais-2-8B-Chat's Hub total 8090401280" 0 \
    '.params == 8090401280 and .approximate == false' "$VF" inspect --json yoriis/JAIS2-IT-0.3
# diffllama: DiffLlama-0.3B-handcut has Llama-3.2-1B's sizes (tied): that
# Hub total (1,235,814,400, catalog.tsv) + 4 lambdas of head_dim 64 in 16 layers
check_json "diffllama: DiffLlama-0.3B-handcut = Llama-3.2-1B's Hub total + 16 x 4 x 64" 0 \
    '.params == 1235818496 and .approximate == false' "$VF" inspect --json kajuma/DiffLlama-0.3B-handcut
