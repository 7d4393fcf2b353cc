#!/bin/sh
# test_train.sh — 'vramfit estimate --train': knobs, JSON, errors. Figures
# from tests/reference/torch (PyTorch's own byte counts) and from DeepSpeed's
# estimate_zero3_model_states_mem_needs formula.
. tests/cli/lib.sh
CFG="$REF/torch/configs"

check_out "help lists training knobs" 0 "--optimizer" "$VF" estimate --help
check_out "help lists zero" 0 "--zero" "$VF" estimate --help

# g01 (GPT-2, 2,098,176 params) fp32: gradients 8,392,704 bytes, AdamW state 16,785,520 (results.json)
check_json "fp32 gradients exact" 0 '.mode == "training" and .components.gradients == 8392704' \
    "$VF" estimate --train --json --precision fp32 --batch 1 --context 128 "$CFG/g01/config.json"
check_json "fp32 adamw state exact" 0 '.components.optimizer == 16785520' \
    "$VF" estimate --train --json --precision fp32 --batch 1 --context 128 "$CFG/g01/config.json"
check_json "sgd-momentum state exact" 0 '.components.optimizer == 8392704' \
    "$VF" estimate --train --json --precision fp32 --optimizer sgd-momentum "$CFG/g01/config.json"
# g03 bf16, batch 2, 256 tokens: 35,954,700 bytes saved for backward (within 3 %)
check_json "activations within 3%" 0 \
    '(.components.activations - 35954700 | fabs) <= 0.03 * 35954700' \
    "$VF" estimate --train --json --precision bf16 --attn eager --batch 2 --context 256 "$CFG/g03/config.json"
check_json "peak phase named" 0 '.peak_phase | length > 0' \
    "$VF" estimate --train --json --precision bf16 --batch 2 --context 256 "$CFG/g03/config.json"
check_json "checkpointing shrinks activations" 0 '.components.activations < 12000000' \
    "$VF" estimate --train --json --precision bf16 --attn eager --grad-checkpoint full --batch 2 --context 256 \
    "$CFG/g03/config.json"

# l02: 1,897,728 params, largest module 256,000 (embedding, head): DeepSpeed ZeRO-3, 1 GPU:
# gpu 4*256000 + int(18*1897728/1) = 35,183,104; cpu 256000*4*1*1.5 = 1,536,000
check_json "deepspeed zero3 states" 0 '.per_gpu_bytes == 35183104 and .host_bytes == 1536000' \
    "$VF" estimate --train --json --states-only --zero 3 --gpus 1 "$CFG/l02/config.json"
# offload both: gpu 4*256000 = 1,024,000; cpu 1897728*18*1.5 = 51,238,656
check_json "deepspeed zero3 offload" 0 '.per_gpu_bytes == 1024000 and .host_bytes == 51238656' \
    "$VF" estimate --train --json --states-only --zero 3 --offload both --gpus 1 "$CFG/l02/config.json"
check_json "lora trains adapters only" 0 '.components.gradients < 1000000' \
    "$VF" estimate --train --json --lora-rank 8 --lora-targets q,k,v,o "$CFG/l02/config.json"
check_json "qlora" 0 '.components.weights < 3795456' \
    "$VF" estimate --train --json --lora-rank 8 --qlora nf4-dq --optimizer paged-adamw-8bit "$CFG/l02/config.json"
check_json "fsdp full shards" 0 '.gpus == 4' \
    "$VF" estimate --train --json --fsdp full --gpus 4 "$CFG/l02/config.json"
# l02 has 4 query heads over 1 kv head (GQA), head_dim 64; 2048 tokens, bf16 autocast. FlashAttention-2's
# mha_bwd (flash_api.cpp): dq_accum fp32 [1,2048,4,64] + softmax_d fp32 [1,4,2048] = 2,129,920 B, a
# 1-10 MiB request: a 20 MiB segment (CUDACachingAllocator kLargeBuffer); num_heads_k != num_heads, so
# dk_expanded and dv_expanded [1,2048,4,64] bf16 = 1,048,576 B each, <= kSmallSize: a 2 MiB segment each.
# --attn flash keeps 20 + 2 + 2 MiB = 25,165,824 B free; SDPA gets k, v repeated (repeat_kv): 20,971,520
check_json "flash gqa backward keeps expanded dk dv free" 0 '.margin_bytes == 25165824' \
    "$VF" estimate --train --json --attn flash --context 2048 "$CFG/l02/config.json"
check_json "sdpa backward: dq accumulator only" 0 '.margin_bytes == 20971520' \
    "$VF" estimate --train --json --attn sdpa --context 2048 "$CFG/l02/config.json"
check_out "table names the peak" 0 "per GPU" "$VF" estimate --train "$CFG/l02/config.json"

check_err "bad optimizer" 2 "optimizer" "$VF" estimate --train --optimizer adamz "$CFG/l02/config.json"
check_err "bad zero" 2 "zero" "$VF" estimate --train --zero 5 "$CFG/l02/config.json"
check_err "bad qlora" 2 "qlora" "$VF" estimate --train --qlora nf5 --lora-rank 8 "$CFG/l02/config.json"
check_err "param offload needs zero 3" 2 "zero 3" "$VF" estimate --train --zero 2 --offload params "$CFG/l02/config.json"
check_err "qlora needs a rank" 2 "lora rank" "$VF" estimate --train --qlora nf4 "$CFG/l02/config.json"
check_err "bad bnb version" 2 "bnb-version" "$VF" estimate --train --qlora nf4 --lora-rank 8 --bnb-version latest "$CFG/l02/config.json"
check_err "bad torch version" 2 "torch-version" "$VF" estimate --train --torch-version latest "$CFG/l02/config.json"
check_err "tp must divide gpus" 2 "multiple" "$VF" estimate --train --tp 3 --gpus 8 "$CFG/l02/config.json"

# --loss (hand derivation; l02: b 2 x 256 tokens = T 512, vocab V 1000, hidden 256, bf16):
# torchtune CEWithChunkedOutputLoss in 8: the forward's end holds 2TV + 4TV/8 = 1,280,000 B of
# logits and fp32 chunk (full: 2TV + 4TV = 3,072,000), backward starts with 8TV/8 = 512,000
# (full: 8TV = 4,096,000); Liger's fused loss keeps no fp32 log-probabilities (4TV = 2,048,000)
# but the input's gradient, 2*T*h = 262,144 B
L02="$CFG/l02/config.json"
full_out=$("$VF" estimate --train --explain --precision bf16 --batch 2 --context 256 "$L02")
chunk_out=$("$VF" estimate --train --explain --precision bf16 --batch 2 --context 256 --loss chunked:8 "$L02")
fused_out=$("$VF" estimate --train --json --precision bf16 --batch 2 --context 256 --loss fused "$L02")
full_json=$("$VF" estimate --train --json --precision bf16 --batch 2 --context 256 "$L02")
moment() { printf '%s\n' "$1" | sed -n "s/.*$2 \([0-9]*\).*/\1/p"; }
fwd_d=$(( $(moment "$full_out" "forward") - $(moment "$chunk_out" "forward") ))
bs_d=$(( $(moment "$full_out" "backward start") - $(moment "$chunk_out" "backward start") ))
[ "$fwd_d" = 1792000 ] && ok "chunked loss: forward end 1,792,000 B below full" || fail "chunked loss forward: $fwd_d"
[ "$bs_d" = 3584000 ] && ok "chunked loss: backward start 3,584,000 B below full" || fail "chunked loss backward: $bs_d"
act_d=$(( $(printf '%s' "$full_json" | jq .components.activations) - $(printf '%s' "$fused_out" | jq .components.activations) ))
[ "$act_d" = $((2048000 - 262144)) ] && ok "fused loss: no log-probabilities, the input's gradient saved" || fail "fused loss: $act_d"
check_out "loss assumption named" 0 "CEWithChunkedOutputLoss" "$VF" estimate --train --loss chunked "$L02"
check_err "bad loss" 2 "expected full, chunked" "$VF" estimate --train --loss chunky "$L02"
check_err "bad loss chunks" 2 "loss" "$VF" estimate --train --loss chunked:0 "$L02"
check_err "loss with litgpt refused" 2 "litgpt runs its own" "$VF" estimate --train --runtime litgpt --loss fused "$L02"

# --eval-batch (Trainer.evaluate -> prediction_step under torch.no_grad(), hand derivation; l02, bf16, SDPA,
# s 256, hidden 256, vocab 1000): nothing is saved, so the eval's peak is at its loss: the input ids and labels
# (2 x 8 B x Te), the final norm's output (2 B x Te x 256), the logits (2 B x Te x 1000), their fp32 copy and
# log_softmax's output (4 B x Te x 1000 each). Two more sequences (Te + 512 tokens) add 8,192 + 262,144 +
# 1,024,000 + 2 x 2,048,000 = 5,390,336 B (all 512-byte multiples: no rounding); every block's no_grad tensors
# (at most three 2 B x Te x ff 688 ones and the residual) stay below that
ev2=$("$VF" estimate --train --json --precision bf16 --batch 2 --context 256 --eval-batch 2 "$L02")
ev4=$("$VF" estimate --train --json --precision bf16 --batch 2 --context 256 --eval-batch 4 "$L02")
ev_d=$(( $(printf '%s' "$ev4" | jq .eval_bytes) - $(printf '%s' "$ev2" | jq .eval_bytes) ))
[ "$ev_d" = 5390336 ] && ok "eval step: two more sequences add 5,390,336 B at its loss" || fail "eval step delta: $ev_d"
# at the train batch it is below the step (no saved activations, no gradients): the verdict stays the step's
[ "$(printf '%s' "$ev2" | jq .per_gpu_bytes)" = "$(printf '%s' "$full_json" | jq .per_gpu_bytes)" ] &&
    [ "$(printf '%s' "$ev2" | jq '.eval_bytes < .per_gpu_bytes')" = true ] &&
    ok "eval step below the training step: verdict unchanged" || fail "eval step at the train batch"
# 32 sequences (Te 8,192): the loss alone holds 8,192 x (16 + 512 + 2,000 + 8,000) = 86,245,376 B, above the
# step's whole allocated peak: the verdict takes the eval
check_json "eval step above the step decides" 0 \
    '.peak_phase == "evaluation step" and .allocated_bytes > 86245376 and .per_gpu_bytes >= .eval_bytes' \
    "$VF" estimate --train --json --precision bf16 --batch 2 --context 256 --eval-batch 32 "$L02"
check_out "eval step named" 0 "per_device_eval_batch_size" \
    "$VF" estimate --train --precision bf16 --eval-batch 4 "$L02"
check_err "eval step with litgpt refused" 2 "Trainer.evaluate" \
    "$VF" estimate --train --runtime litgpt --eval-batch 4 "$L02"
check_err "bad eval batch" 2 "eval-batch" "$VF" estimate --train --eval-batch 0 "$L02"

# --optimizer-in-backward (torchtune optimizer_in_bwd: each parameter's gradient freed by its own step in its
# post-accumulate-grad hook): one gradient alive, the largest tensor's: l02's embedding (and head) 1000 x 256
# = 256,000 elements x 2 B (bf16) = 512,000 B, against 1,897,728 x 2 = 3,795,456 B for all
check_json "optimizer in backward: one gradient alive (512,000 B)" 0 '.components.gradients == 512000' \
    "$VF" estimate --train --json --precision bf16 --batch 2 --context 256 --optimizer-in-backward "$L02"
check_json "without it: every gradient (3,795,456 B)" 0 '.components.gradients == 3795456' \
    "$VF" estimate --train --json --precision bf16 --batch 2 --context 256 "$L02"
check_out "optimizer in backward named" 0 "register_post_accumulate_grad_hook" \
    "$VF" estimate --train --precision bf16 --optimizer-in-backward "$L02"
check_err "optimizer in backward refuses accumulation" 2 "gradient accumulation is not possible" \
    "$VF" estimate --train --optimizer-in-backward --grad-accum 4 "$L02"
check_err "optimizer in backward under ZeRO refused" 2 "not modelled under ZeRO" \
    "$VF" estimate --train --optimizer-in-backward --zero 2 --gpus 2 "$L02"
# --activation-offload (torchtune OffloadActivations): l02 deepened to 24 blocks, full checkpointing: each
# block keeps its input, 2 x T 512 x h 256 = 262,144 B, all 24 copied to pinned host memory = 6,291,456 B;
# the forward stash keeps the last 5 on the GPU, priced as 5 tensors of the widest kind (2 x T x ff 688 =
# 704,512 B each: 3,522,560 B), so the device's activations drop by 6,291,456 - 3,522,560 = 2,768,896 B
mkdir -p "$TMP/l24"
sed 's/"num_hidden_layers": 2,/"num_hidden_layers": 24,/' "$L02" >"$TMP/l24/config.json"
off_plain=$("$VF" estimate --train --json --precision bf16 --batch 2 --context 256 --grad-checkpoint full \
    "$TMP/l24/config.json")
off_json=$("$VF" estimate --train --json --precision bf16 --batch 2 --context 256 --grad-checkpoint full \
    --activation-offload "$TMP/l24/config.json")
off_d=$(( $(printf '%s' "$off_plain" | jq .components.activations) - $(printf '%s' "$off_json" | jq .components.activations) ))
[ "$off_d" = 2768896 ] && ok "activation offload: device activations 2,768,896 B lower" || fail "activation offload delta: $off_d"
[ "$(printf '%s' "$off_json" | jq .host_bytes)" = 6291456 ] && ok "activation offload: 6,291,456 B in host memory" ||
    fail "activation offload host" "$(printf '%s' "$off_json" | jq .host_bytes)"
check_err "activation offload with litgpt refused" 2 "torchtune's" \
    "$VF" estimate --train --runtime litgpt --activation-offload "$L02"
# --grad-checkpoint unsloth (unsloth_zoo Unsloth_Offloaded_Gradient_Checkpointer): the same 24 blocks' inputs,
# 262,144 B each, copied to host memory (6,291,456 B); the GPU keeps the one being copied, so the device's
# activations drop by 23 x 262,144 = 6,029,312 B from full checkpointing's, and Unsloth's final norm
# (Fast_RMS_Layernorm: X and the fp32 rstd, 2 x 512 x 256 + 4 x 512) keeps 1,048,576 B less than HF's
# (fp32 x and x^2, the bf16 output, the rstd: 10 x 512 x 256 + 4 x 512): 7,077,888 B
uns_json=$("$VF" estimate --train --json --precision bf16 --batch 2 --context 256 --grad-checkpoint unsloth \
    "$TMP/l24/config.json")
uns_d=$(( $(printf '%s' "$off_plain" | jq .components.activations) - $(printf '%s' "$uns_json" | jq .components.activations) ))
[ "$uns_d" = 7077888 ] && ok "unsloth checkpoints: device activations 7,077,888 B lower" || fail "unsloth checkpoints delta: $uns_d"
[ "$(printf '%s' "$uns_json" | jq .host_bytes)" = 6291456 ] && ok "unsloth checkpoints: 6,291,456 B in host memory" ||
    fail "unsloth checkpoints host" "$(printf '%s' "$uns_json" | jq .host_bytes)"
check_out "unsloth checkpoints named" 0 "Unsloth_Offloaded_Gradient_Checkpointer" \
    "$VF" estimate --train --grad-checkpoint unsloth "$L02"
check_err "unsloth checkpoints with activation offload refused" 2 "one of them" \
    "$VF" estimate --train --grad-checkpoint unsloth --activation-offload "$L02"
check_err "unsloth checkpoints with litgpt refused" 2 "not litgpt's" \
    "$VF" estimate --train --runtime litgpt --grad-checkpoint unsloth "$L02"
# Unsloth's patched blocks under --grad-checkpoint unsloth (hand derivation from unsloth/kernels/fast_lora.py and
# rms_layernorm.py; l02: T 512, h 256, ff 688, 4 heads x 64, 1 kv head, bf16, flash, LoRA all-linear, dropout 0):
# each Fast_RMS_Layernorm keeps X (2 x 512 x 256 = 262,144) and the fp32 rstd (4 x 512 = 2,048): 2 x 264,192;
# LoRA_QKV's X 262,144; flash's q, k, v, out and lse 2 x 512 x (2 x 256 + 2 x 64) + 4 x 2 x 4 x 256 = 663,552;
# LoRA_MLP's X, e, g 262,144 + 2 x 2 x 512 x 688 = 1,671,168; one block 3,125,248 B (no adapter saves anything);
# the final norm keeps 264,192 instead of HF's fp32 x, x^2 and output (1,312,768): outside 1,048,576 B lower
uns_l="$("$VF" estimate --train --explain --precision bf16 --batch 2 --context 256 --grad-checkpoint unsloth --attn flash \
    --lora-rank 8 --lora-targets all-linear "$L02")"
hf_l="$("$VF" estimate --train --explain --precision bf16 --batch 2 --context 256 --grad-checkpoint full --attn flash \
    --lora-rank 8 --lora-targets all-linear "$L02")"
per_block() { printf '%s\n' "$1" | sed -n 's/.*activations per block \([0-9]*\).*/\1/p'; }
outside() { printf '%s\n' "$1" | sed -n 's/.*activations per block.* + outside \([0-9]*\) .*/\1/p'; }
[ "$(per_block "$uns_l")" = 3125248 ] && ok "unsloth fused LoRA block: 3,125,248 B saved" ||
    fail "unsloth fused LoRA block" "$(per_block "$uns_l")"
[ $(( $(outside "$hf_l") - $(outside "$uns_l") )) = 1048576 ] && ok "unsloth final norm: 1,048,576 B below HF's" ||
    fail "unsloth final norm" "$(outside "$hf_l") $(outside "$uns_l")"
# with lora_dropout > 0 Unsloth leaves PEFT's modules in place: each adapter's dropped copy and mask come back
uns_drop="$("$VF" estimate --train --explain --precision bf16 --batch 2 --context 256 --grad-checkpoint unsloth \
    --attn flash --lora-rank 8 --lora-targets all-linear --lora-dropout 0.05 "$L02")"
[ "$(per_block "$uns_drop")" -gt 3125248 ] && printf '%s' "$uns_drop" | grep -q "lora kernels = PEFT's modules" &&
    ok "unsloth with lora dropout: PEFT's modules priced" || fail "unsloth with lora dropout"
# QLoRA under ZeRO-3 with bitsandbytes before 0.43.0 (no bnb_4bit_quant_storage: PEFT's DeepSpeed guide)
check_err "qlora with zero 3 on bitsandbytes 0.42 refused" 2 "needs bitsandbytes >= 0.43.0" \
    "$VF" estimate --train --lora-rank 8 --qlora nf4 --zero 3 --gpus 2 --bnb-version 0.42.0 "$L02"
check_err "qlora with fsdp full on bitsandbytes 0.42 refused" 2 "needs bitsandbytes >= 0.43.0" \
    "$VF" estimate --train --lora-rank 8 --qlora nf4 --fsdp full --gpus 2 --bnb-version 0.42.0 "$L02"
check "qlora with zero 3 on bitsandbytes 0.43.3 runs" 0 \
    "$VF" estimate --train --lora-rank 8 --qlora nf4 --zero 3 --gpus 2 --bnb-version 0.43.3 "$L02"
check "qlora with zero 2 on bitsandbytes 0.42 runs" 0 \
    "$VF" estimate --train --lora-rank 8 --qlora nf4 --zero 2 --gpus 2 --bnb-version 0.42.0 "$L02"
# issue 22: Llama-3.1-8B full fine-tuning, pure bf16, full recomputation, 2 x 8,192 on an H100 80GB ran
# at about 78 GiB; with expandable segments the replay on the device frees the split segments' pages
check "fit: the 8B bf16 2 x 8192 run fits an H100 with expandable segments" 0 \
    "$VF" fit meta-llama/Llama-3.1-8B --train --precision bf16 --grad-checkpoint full --batch 2 --context 8192 \
    --gpu H100 --alloc-conf expandable_segments:True
# --kbit-prepare (PEFT prepare_model_for_kbit_training): l02's unquantized parameters, embed 1000 x 256, the
# untied head 1000 x 256 and 5 RMSNorm weights of 256, go from 2 to 4 bytes: +(512,000 + 1,280) x 2 = 1,026,560 B;
# the residual stream fp32 at 2,048 tokens: 5 norms' saved outputs 2048 x 256 x 2 B more each (5,242,880 B) and
# RoPE's cos and sin 2 x 2048 x 64 x 2 B (524,288 B): +5,767,168 B of activations
kb_plain=$("$VF" estimate --train --json --lora-rank 8 --qlora nf4 "$L02")
kb_prep=$("$VF" estimate --train --json --lora-rank 8 --qlora nf4 --kbit-prepare --grad-checkpoint none "$L02")
kb_w=$(( $(printf '%s' "$kb_prep" | jq .components.weights) - $(printf '%s' "$kb_plain" | jq .components.weights) ))
kb_a=$(( $(printf '%s' "$kb_prep" | jq .components.activations) - $(printf '%s' "$kb_plain" | jq .components.activations) ))
[ "$kb_w" = 1026560 ] && ok "kbit prepare: unquantized parameters in fp32 (+1,026,560 B)" || fail "kbit prepare weights: $kb_w"
[ "$kb_a" = 5767168 ] && ok "kbit prepare: fp32 residual stream (+5,767,168 B)" || fail "kbit prepare activations: $kb_a"
check_out "kbit prepare named in the assumptions" 0 "prepare_model_for_kbit_training" \
    "$VF" estimate --train --lora-rank 8 --qlora nf4 --kbit-prepare "$L02"
# prepare_model_for_kbit_training's default use_gradient_checkpointing=True: the same step as full checkpointing
kb_def=$("$VF" estimate --train --json --lora-rank 8 --qlora nf4 --kbit-prepare "$L02" | jq .device_bytes)
kb_full=$("$VF" estimate --train --json --lora-rank 8 --qlora nf4 --kbit-prepare --grad-checkpoint full "$L02" | jq .device_bytes)
kb_none=$("$VF" estimate --train --json --lora-rank 8 --qlora nf4 --kbit-prepare --grad-checkpoint none "$L02" | jq .device_bytes)
[ "$kb_def" = "$kb_full" ] && [ "$kb_def" != "$kb_none" ] && ok "kbit prepare checkpoints by default" ||
    fail "kbit prepare default checkpointing" "$kb_def $kb_full $kb_none"
check_out "kbit prepare's checkpointing named" 0 "use_gradient_checkpointing=True" \
    "$VF" estimate --train --lora-rank 8 --qlora nf4 --kbit-prepare "$L02"
check_err "kbit prepare needs qlora" 2 "needs --qlora" "$VF" estimate --train --lora-rank 8 --kbit-prepare "$L02"
check_err "kbit prepare is a training knob" 2 "training knob" "$VF" estimate --kbit-prepare "$L02"
# fp32 adapters (PEFT autocast_adapter_dtype) against torch 1.13 traces of PEFT's forward with fp32 adapters on a
# bf16 base (tests/reference/train-runs/traces; calibration cases by the README's hash rule on "traces#CASE"):
# parameters on the device, gradients and AdamW states as the trace's summary measured them, to the byte
TRS=tests/reference/train-runs/traces/summary.json
mkdir -p "$TMP/trl"
jq '.["llama_lora_r16_all_b2s256"].config | {architectures: ["LlamaForCausalLM"], model_type: "llama",
    hidden_size: .hidden, num_hidden_layers: .layers, num_attention_heads: .heads, num_key_value_heads: .kv_heads,
    head_dim: .head_dim, intermediate_size: .inter, vocab_size: .vocab, max_position_embeddings: 2048,
    hidden_act: "silu", rms_norm_eps: 1e-05, tie_word_embeddings: .tie, rope_theta: .rope_theta,
    attention_bias: false, mlp_bias: false, torch_dtype: "bfloat16"}' "$TRS" >"$TMP/trl/config.json"
for tc in "llama_lora_r16_all_b2s256|all-linear|16" "llama_lora_r8_qv_b2s256|q,v|8"; do
    IFS='|' read -r case tg rk <<EOT
$tc
EOT
    want=$(jq -c --arg c "$case" '.[$c] | [.param_bytes_device, .grad_bytes, .optimizer_state_bytes]' "$TRS")
    got=$("$VF" estimate --train --json --precision bf16 --batch 2 --context 256 --attn eager --lora-rank "$rk" \
        --lora-targets "$tg" "$TMP/trl/config.json" | jq -c '[.components.weights, .components.gradients, .components.optimizer]')
    [ "$got" = "$want" ] && ok "fp32 adapters: $case states as measured $want" || fail "fp32 adapters $case" "$got vs $want"
done
check_err "adapter dtype: fp32 or base" 2 "adapter-dtype" "$VF" estimate --train --lora-rank 8 --adapter-dtype bf16 "$L02"
# --load-dtype fp32 (from_pretrained without torch_dtype) under LoRA: l02's 1,897,728 frozen parameters (embed and
# head 2 x 256,000, blocks 2 x 692,224, norms 1,280) at 4 bytes: +3,795,456 B; activations at 2,048 tokens: autocast's
# bf16 weight copies 2 x 1,384,448 + the head's 2 x 256,000 + five fp32 norm outputs 5 x 2048 x 256 x 2 + cos/sin
# 2 x 2048 x 64 x 2 = +9,048,064 B
ld_plain=$("$VF" estimate --train --json --lora-rank 8 "$L02")
ld_32=$("$VF" estimate --train --json --lora-rank 8 --load-dtype fp32 "$L02")
ld_w=$(( $(printf '%s' "$ld_32" | jq .components.weights) - $(printf '%s' "$ld_plain" | jq .components.weights) ))
ld_a=$(( $(printf '%s' "$ld_32" | jq .components.activations) - $(printf '%s' "$ld_plain" | jq .components.activations) ))
[ "$ld_w" = 3795456 ] && ok "load dtype fp32: frozen base at 4 bytes (+3,795,456 B)" || fail "load dtype weights: $ld_w"
[ "$ld_a" = 9048064 ] && ok "load dtype fp32: autocast copies, fp32 residual (+9,048,064 B)" || fail "load dtype acts: $ld_a"
check_err "load dtype fp32 needs LoRA" 2 "load-dtype fp32" "$VF" estimate --train --load-dtype fp32 "$L02"
check_err "load dtype fp32 not with pure bf16" 2 "load-dtype fp32" \
    "$VF" estimate --train --lora-rank 8 --precision bf16 --load-dtype fp32 "$L02"
check_err "load dtype: 16 or fp32" 2 "load-dtype" "$VF" estimate --train --lora-rank 8 --load-dtype fp8 "$L02"
# --optimizer paged-adamw (bitsandbytes PagedAdamW, optim_bits=32): 8 bytes of fp32 state per parameter; tensors of
# 1e5 elements or more paged (managed memory: host). l02: embed and head 256,000 each and the 6 MLP matrices of
# 176,128 are paged, 1,568,768 x 8 = 12,550,144 B host; q, k, v, o (2 x 163,840) and the norms (1,280) stay:
# 328,960 x 8 = 2,631,680 B on the device
pa=$("$VF" estimate --train --json --precision bf16 --optimizer paged-adamw "$L02")
[ "$(printf '%s' "$pa" | jq -c '[.components.optimizer, .host_bytes]')" = "[2631680,12550144]" ] &&
    ok "paged adamw: fp32 states, large tensors' paged to the host" || fail "paged adamw" "$(printf '%s' "$pa" | jq -c '[.components.optimizer, .host_bytes]')"
