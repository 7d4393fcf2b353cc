/* vllm_layout.c — the parallel layouts vLLM refuses at start-up, with the
 * message it stops with, checked in the order vLLM meets them: its config
 * check first, then the layers as the model is built (docs/memory-model.md,
 * "vLLM", start-up rules). A refused layout is never estimated, planned or
 * offered by fit. */
#include "memory/infer.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static bool refuse(char *why, size_t n, const char *fmt, ...) VF_PRINTF(3, 4);
static bool refuse(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return false;
}

/* vllm/distributed/utils.py divide -> ensure_divisibility: an assert whose
 * message is "{numerator} is not divisible by {denominator}". */
static bool divides(uint64_t num, uint32_t den, const char *what, char *why, size_t n)
{
    if (den <= 1 || num % den == 0)
        return true;
    return refuse(why, n, "%s: AssertionError: %llu is not divisible by %u", what, (unsigned long long)num, den);
}

/* FP8 block-quantized checkpoints (quantization_config.weight_block_size
 * [block_n, block_k]): a rank's slice of every matrix must hold whole blocks
 * (quantization/fp8.py: Fp8LinearMethod via validate_fp8_block_shape for the
 * dense layers, Fp8MoEMethod.create_weights for the experts; vLLM 0.7.2+,
 * when block-wise FP8 arrived). */
static bool fp8_blocks(const vf_hparams *hp, uint32_t tp, bool ep, char *why, size_t n)
{
    uint32_t bn = hp->quant_block_n, bk = hp->quant_block_k;
    if (tp <= 1 || !bn || !bk || strcmp(hp->quant_method, "fp8") != 0)
        return true;
    if (hp->n_experts >= 2 && hp->moe_intermediate_size && !ep) { /* with EP every expert is whole on its rank */
        uint64_t part = hp->moe_intermediate_size / tp;
        if (part % bn)
            return refuse(why, n,
                          "ValueError: The output_size of gate's and up's weight = %llu is not divisible by weight "
                          "quantization block_n = %u.",
                          (unsigned long long)part, bn);
        if (part % bk)
            return refuse(why, n,
                          "ValueError: The input_size of down's weight = %llu is not divisible by weight "
                          "quantization block_k = %u.",
                          (unsigned long long)part, bk);
    }
    uint64_t ff = hp->n_experts >= 2 ? hp->shared_expert_intermediate_size : hp->intermediate_size;
    if (ff && (ff / tp) % bn)
        return refuse(why, n,
                      "ValueError: Weight output_partition_size = %llu is not divisible by weight quantization "
                      "block_n = %u.",
                      (unsigned long long)(ff / tp), bn);
    if (ff && (ff / tp) % bk)
        return refuse(why, n,
                      "ValueError: Weight input_size_per_partition = %llu is not divisible by weight quantization "
                      "block_k = %u.",
                      (unsigned long long)(ff / tp), bk);
    return true;
}

bool vf__vllm_layout_ok(const vf_hparams *hp, uint32_t tp, bool ep, char *why, size_t n)
{
    if (tp < 1)
        tp = 1;
    /* config.py ModelConfig.verify_with_parallel_config (every version) */
    if (hp->n_heads && hp->n_heads % tp)
        return refuse(why, n,
                      "ValueError: Total number of attention heads (%u) must be divisible by tensor parallel size "
                      "(%u).",
                      hp->n_heads, tp);
    /* ... and _verify_with_expert_parallelism under --enable-expert-parallel (0.8+) */
    if (ep && hp->n_experts < 2)
        return refuse(why, n,
                      "ValueError: Number of experts in the model must be greater than 0 when expert parallelism "
                      "is enabled.");
    /* VocabParallelEmbedding / ParallelLMHead (layers/vocab_parallel_embedding.py): the vocabulary padded
     * to a multiple of 64 (DEFAULT_VOCAB_PADDING_SIZE), then divide(num_embeddings_padded, tp_size) */
    uint64_t vp = (hp->vocab_size + 63) / 64 * 64;
    if (hp->vocab_size && !divides(vp, tp, "VocabParallelEmbedding", why, n))
        return false;
    /* the attention layers (models/llama.py LlamaAttention and its kin): KV heads split when there are at
     * least tp of them, else replicated, which needs tp a multiple of them; MLA's latent is one head */
    if (!vf__is_mla(hp))
        for (uint32_t il = 0; il < hp->n_layers; il++) {
            uint32_t kvh = vf__layer_kv_heads(hp, il);
            if (!kvh || (kvh >= tp ? kvh % tp == 0 : tp % kvh == 0))
                continue;
            return refuse(why, n,
                          "AssertionError in the attention layer: %u KV heads %s tensor parallel size %u (%s)", kvh,
                          kvh >= tp ? "are not divisible by" : "do not divide", tp,
                          kvh >= tp ? "total_num_kv_heads % tp_size == 0" : "tp_size % total_num_kv_heads == 0");
        }
    /* a dense MLP's MergedColumnParallelLinear: divide(intermediate_size, tp_size) */
    if (hp->n_experts < 2 && !divides(hp->intermediate_size, tp, "MergedColumnParallelLinear (the MLP)", why, n))
        return false;
    return fp8_blocks(hp, tp, ep, why, n);
}
