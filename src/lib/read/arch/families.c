/* families.c — the model_types vramfit builds exactly from a config.json, the
 * builder each uses and what its config class implies where config.json says
 * nothing (docs/architectures.md describes each one's tensors). A model_type
 * not here is an unknown family: counted approximately, and said so. */
#include "read/arch/arch.h"

#include <string.h>

#define UN VF_TR_UNTIED
#define VLM VF_TR_VLM

static const vf__family families[] = {
    /* llama-like decoders (arch_decoder.c) */
    {"llama", vf__arch_decoder, UN, NULL, NULL, NULL},
    {"mistral", vf__arch_decoder, UN, NULL, NULL, NULL},
    {"mixtral", vf__arch_decoder, UN, NULL, NULL, NULL},
    {"qwen2", vf__arch_decoder, UN | VF_TR_QWEN_SWA | VF_TR_QKV_BIAS, NULL, NULL, NULL},
    {"mimo", vf__arch_decoder, UN | VF_TR_QWEN_SWA | VF_TR_QKV_BIAS, NULL, NULL, NULL}, /* Qwen2 + MTP layers */
    {"qwen2_moe", vf__arch_decoder, UN | VF_TR_QWEN_SWA | VF_TR_QKV_BIAS, NULL, NULL, NULL},
    {"qwen3", vf__arch_decoder, UN | VF_TR_QWEN_SWA, NULL, NULL, NULL},
    {"qwen3_moe", vf__arch_decoder, UN | VF_TR_QWEN_SWA, NULL, NULL, NULL},
    {"gemma", vf__arch_decoder, 0, NULL, NULL, NULL},
    {"gemma2", vf__arch_decoder, 0, NULL, NULL, NULL},
    {"gemma3", vf__arch_decoder, 0, NULL, NULL, NULL},
    {"gemma3_text", vf__arch_decoder, 0, NULL, NULL, NULL},
    {"gemma4", vf__arch_decoder, 0, NULL, NULL, NULL},
    {"gemma4_text", vf__arch_decoder, 0, NULL, NULL, NULL},
    {"phi3", vf__arch_decoder, UN, NULL, NULL, NULL},
    {"olmo", vf__arch_decoder, UN, NULL, NULL, NULL},     /* OLMo 1: weightless LayerNorms */
    {"olmo2", vf__arch_decoder, UN, NULL, NULL, NULL},
    {"gpt_oss", vf__arch_decoder, UN, NULL, NULL, NULL},
    {"smollm3", vf__arch_decoder, 0, NULL, NULL, NULL},   /* SmolLM3Config: tied */
    {"granite", vf__arch_decoder, UN, NULL, NULL, NULL},
    {"arcee", vf__arch_decoder, UN, NULL, NULL, NULL},    /* llama layout, MLP without a gate (ReLU²) */  /* llama layout + multipliers (no weights) */
    {"nemotron", vf__arch_decoder, UN, NULL, NULL, NULL}, /* Nemotron-4 / Minitron: arcee's MLP, LayerNorms with bias */
    {"jais2", vf__arch_decoder, UN | VF_TR_QKV_BIAS | VF_TR_MLP_BIAS, NULL, NULL, NULL}, /* nemotron's block, biases */
    {"afmoe", vf__arch_decoder, UN, NULL, NULL, NULL},    /* Arcee Trinity: gated attention, sigmoid-routed experts */
    {"diffllama", vf__arch_decoder, UN, NULL, NULL, NULL}, /* llama + differential-attention lambdas */
    {"cohere", vf__arch_decoder, 0, NULL, NULL, NULL},    /* Command-R: parallel block, CohereConfig tied */
    /* MLA decoders (arch_decoder.c) */
    {"deepseek_v2", vf__arch_deepseek, UN, NULL, NULL, NULL},
    {"deepseek_v3", vf__arch_deepseek, UN, NULL, NULL, NULL},
    {"deepseek_v32", vf__arch_deepseek, UN, NULL, NULL, NULL}, /* + the sparse-attention indexer */
    {"kimi_k2", vf__arch_deepseek, UN, NULL, NULL, NULL},      /* Kimi-K2 ships DeepSeek-V3's architecture */
    {"glm_moe_dsa", vf__arch_deepseek, UN, NULL, NULL, NULL},  /* GLM-5: DeepSeek-V3.2's layout (MLA + indexer) */
    {"deepseek_v4", vf__arch_deepseek4, UN, NULL, NULL, NULL}, /* mHC, compressed sparse attention (arch_deepseek4.c) */
    /* 2025-26 text decoders (arch_text.c) */
    {"granitemoe", vf__arch_text, 0, NULL, NULL, NULL},
    {"exaone4", vf__arch_text, 0, NULL, NULL, NULL},
    {"apertus", vf__arch_text, UN, NULL, NULL, NULL},
    {"hunyuan_v1_dense", vf__arch_text, 0, NULL, NULL, NULL},
    {"glm4", vf__arch_text, UN | VF_TR_QKV_BIAS, NULL, NULL, NULL},
    {"glm4_moe", vf__arch_text, UN | VF_TR_QKV_BIAS, NULL, NULL, NULL},
    {"minimax_m2", vf__arch_text, UN, NULL, NULL, NULL},
    {"dots1", vf__arch_text, UN, NULL, NULL, NULL},
    {"phimoe", vf__arch_text, UN | VF_TR_QKV_BIAS, NULL, NULL, NULL},
    {"bailing_moe", vf__arch_text, UN, NULL, NULL, NULL}, /* Ling: fused query_key_value, shared experts */
    {"llama4_text", vf__arch_text, UN, NULL, NULL, NULL},
    {"mllama_text_model", vf__arch_text, UN, NULL, NULL, NULL},
    /* state-space and linear-attention hybrids (arch_hybrid.c) */
    {"mamba", vf__arch_hybrid, VF_TR_NO_ATTN | VF_TR_FP32, NULL, NULL, NULL},
    {"falcon_mamba", vf__arch_hybrid, VF_TR_NO_ATTN, NULL, NULL, NULL},
    {"mamba2", vf__arch_hybrid, VF_TR_NO_ATTN, NULL, NULL, NULL},
    {"mamba_ssm", vf__arch_hybrid, VF_TR_NO_ATTN, NULL, NULL, NULL}, /* state-spaces' own config format (no model_type) */
    {"bamba", vf__arch_hybrid, UN, NULL, NULL, NULL},
    {"jamba", vf__arch_hybrid, UN, NULL, NULL, NULL},
    {"nemotron_h", vf__arch_hybrid, UN, NULL, NULL, NULL},
    {"granitemoehybrid", vf__arch_hybrid, 0, NULL, NULL, NULL},
    {"lfm2", vf__arch_hybrid, 0, NULL, NULL, NULL},
    {"lfm2_moe", vf__arch_hybrid, 0, NULL, NULL, NULL},
    {"qwen3_next", vf__arch_hybrid, UN, NULL, NULL, NULL},
    {"falcon_h1", vf__arch_hybrid, UN, NULL, NULL, NULL},           /* attention + Mamba-2 in every layer */
    {"zamba2", vf__arch_hybrid, VF_TR_FF_4H, NULL, NULL, NULL},     /* tied; intermediate_size None = 4 x hidden */
    {"qwen3_5_text", vf__arch_hybrid, UN, NULL, NULL, NULL},
    {"qwen3_5_moe_text", vf__arch_hybrid, UN, NULL, NULL, NULL},
    /* vision-language wrappers (arch_vlm.c): their text model's family (NULL:
     * text_config's model_type) under the prefix and head the checkpoints use */
    {"qwen2_vl", vf__arch_vlm, UN | VLM | VF_TR_QKV_BIAS, "qwen2", "model.", "lm_head"},
    {"qwen2_5_vl", vf__arch_vlm, UN | VLM | VF_TR_QKV_BIAS, "qwen2", "model.", "lm_head"},
    {"qwen3_vl", vf__arch_vlm, UN | VLM, "qwen3", "model.language_model.", "lm_head"},
    {"qwen3_vl_moe", vf__arch_vlm, UN | VLM, "qwen3_moe", "model.language_model.", "lm_head"},
    {"qwen3_5", vf__arch_vlm, UN | VLM, "qwen3_5_text", "model.language_model.", "lm_head"},
    {"qwen3_5_moe", vf__arch_vlm, UN | VLM, "qwen3_5_moe_text", "model.language_model.", "lm_head"},
    {"llama4", vf__arch_vlm, UN | VLM, "llama4_text", "language_model.model.", "language_model.lm_head"},
    {"mllama", vf__arch_vlm, UN | VLM, "mllama_text_model", "language_model.model.", "language_model.lm_head"},
    {"llava", vf__arch_vlm, UN | VLM, NULL, "language_model.model.", "language_model.lm_head"},
    {"llava_onevision", vf__arch_vlm, UN | VLM, NULL, "language_model.model.", "language_model.lm_head"},
    {"idefics3", vf__arch_vlm, UN | VLM, NULL, "model.text_model.", "lm_head"},
    {"smolvlm", vf__arch_vlm, UN | VLM, NULL, "model.text_model.", "lm_head"},
    {"internvl", vf__arch_vlm, UN | VLM, NULL, "model.language_model.", "lm_head"},
    {"lfm2_vl", vf__arch_vlm, VLM, NULL, "model.language_model.", "lm_head"},
    {"mistral3", vf__arch_vlm, UN | VLM, NULL, "language_model.model.", "language_model.lm_head"},
    /* classic families (arch_classic.c) */
    {"gpt2", vf__arch_gpt2, VF_TR_FP32 | VF_TR_BIASES | VF_TR_FF_4H, NULL, NULL, NULL},
    {"gpt_bigcode", vf__arch_bigcode, VF_TR_FP32 | VF_TR_BIASES | VF_TR_FF_4H, NULL, NULL, NULL},
    {"gpt_neox", vf__arch_neox, UN | VF_TR_FP32 | VF_TR_BIASES, NULL, NULL, NULL},
    {"bert", vf__arch_bert, VF_TR_FP32 | VF_TR_BIASES, NULL, NULL, NULL},
    {"falcon", vf__arch_falcon, VF_TR_FALCON | VF_TR_BIASES | VF_TR_FF_4H, NULL, NULL, NULL},
    {"starcoder2", vf__arch_starcoder2, 0, NULL, NULL, NULL},           /* tied by default */
    /* RoBERTa's tensors under their prefixes (arch_roberta.c): encoders */
    {"roberta", vf__arch_roberta, VF_TR_FP32 | VF_TR_BIASES, NULL, NULL, NULL},
    {"xlm-roberta", vf__arch_roberta, VF_TR_FP32 | VF_TR_BIASES, NULL, NULL, NULL},
    {"camembert", vf__arch_roberta, VF_TR_FP32 | VF_TR_BIASES, NULL, NULL, NULL},
    {"data2vec-text", vf__arch_roberta, VF_TR_FP32 | VF_TR_BIASES, NULL, NULL, NULL},
    /* encoder-decoders (arch_t5.c) */
    {"t5", vf__arch_t5, VF_TR_FP32, NULL, NULL, NULL},
    {"mt5", vf__arch_t5, VF_TR_FP32, NULL, NULL, NULL},
    {"nomic_bert", vf__arch_nomic_bert, VF_TR_FP32, NULL, NULL, NULL},  /* an encoder (embeddings) */
    {"chatglm", vf__arch_chatglm, UN, NULL, NULL, NULL},
    {"bloom", vf__arch_bloom, VF_TR_BIASES | VF_TR_FF_4H, NULL, NULL, NULL}, /* tied; ALiBi */
    {"stablelm", vf__arch_stablelm, UN, NULL, NULL, NULL},
    {"stablelm_epoch", vf__arch_stablelm, UN, NULL, NULL, NULL}, /* the remote-code StableLMEpoch configs (stable-code-3b) */
    {"RefinedWebModel", vf__arch_falcon, VF_TR_FALCON | VF_TR_BIASES | VF_TR_FF_4H, NULL, NULL, NULL}, /* falcon-7b's original format */
    {"RefinedWeb", vf__arch_falcon, VF_TR_FALCON | VF_TR_BIASES | VF_TR_FF_4H, NULL, NULL, NULL},      /* falcon-40b's original format */
};

/* text_config model_types that name a family above by another spelling */
static const struct {
    const char *alias, *type;
} aliases[] = {
    {"qwen3_vl_text", "qwen3"},         {"qwen3_vl_moe_text", "qwen3_moe"}, {"ministral3", "mistral"},
    {"ministral", "mistral"},           {"granitemoeshared", "granitemoe"},
};

const vf__family *vf__family_find(const char *model_type)
{
    if (!model_type)
        return NULL;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(aliases[i].alias, model_type) == 0)
            model_type = aliases[i].type;
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (strcmp(families[i].model_type, model_type) == 0)
            return &families[i];
    return NULL;
}

void vf__family_list(char *list, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        const char *t = families[i].model_type;
        size_t n = strlen(t);
        if (strcmp(t, "mamba_ssm") == 0 || strncmp(t, "RefinedWeb", 10) == 0 || strstr(t, "_text"))
            continue; /* spellings users never write */
        if (o + n + 3 >= cap)
            break;
        if (o) {
            memcpy(list + o, ", ", 2);
            o += 2;
        }
        memcpy(list + o, t, n);
        o += n;
    }
    if (cap)
        list[o] = '\0';
}
