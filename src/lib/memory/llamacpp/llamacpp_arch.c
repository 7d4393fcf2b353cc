/* llamacpp_arch.c — whether llama.cpp can run a model at all: the
 * architectures it implements (src/llama-arch.cpp LLM_ARCH_NAMES at
 * ggml-org/llama.cpp 00395eb285c7c6821ff372e3ca41dae9da33c2c7) and the
 * architecture convert_hf_to_gguf.py writes for each model_type vramfit
 * builds from a config.json. A family llama.cpp has no graph for is refused
 * (VF_EUNSUPPORTED, exit 3) rather than priced as if it ran. */
#include "memory/infer.h"

#include <string.h>

/* The general.architecture names llama.cpp loads (LLM_ARCH_NAMES, pinned
 * above; "clip" is its dummy for llama-quantize and loads no text model). */
static const char *const arch_names[] = {
    "llama", "llama4", "deci", "falcon", "grok", "gpt2", "gptj", "gptneox", "mpt", "baichuan", "starcoder",
    "refact", "bert", "modern-bert", "nomic-bert", "nomic-bert-moe", "neo-bert", "jina-bert-v2", "jina-bert-v3",
    "eurobert", "bloom", "stablelm", "qwen", "qwen2", "qwen2moe", "qwen2vl", "qwen3", "qwen3moe", "qwen3next",
    "qwen3vl", "qwen3vlmoe", "qwen35", "qwen35moe", "phi2", "phi3", "phimoe", "plamo", "plamo2", "plamo3",
    "codeshell", "orion", "internlm2", "minicpm", "minicpm3", "gemma", "gemma2", "gemma3", "gemma3n", "gemma4",
    "gemma4-assistant", "gemma-embedding", "starcoder2", "mamba", "mamba2", "jamba", "falcon-h1", "xverse",
    "command-r", "cohere2", "cohere2moe", "dbrx", "olmo", "olmo2", "olmoe", "openelm", "arctic", "deepseek",
    "deepseek2", "deepseek2-ocr", "deepseek32", "deepseek4", "chatglm", "glm4", "glm4moe", "glm-dsa", "bitnet",
    "t5", "t5encoder", "jais", "jais2", "nemotron", "nemotron_h", "nemotron_h_moe", "exaone", "exaone4",
    "exaone-moe", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7", "granite", "granitemoe", "granitehybrid", "chameleon",
    "wavtokenizer-dec", "plm", "bailingmoe", "bailingmoe2", "dots1", "arcee", "afmoe", "laguna", "ernie4_5",
    "ernie4_5-moe", "hunyuan-moe", "hunyuan-dense", "hunyuan_vl", "hy_v3", "smollm3", "gpt-oss", "lfm2", "lfm2moe",
    "dream", "smallthinker", "llada", "llada-moe", "seed_oss", "grovemoe", "apertus", "minimax-m2", "cogvlm",
    "rnd1", "pangu-embedded", "mistral3", "eagle3", "dflash", "mistral4", "paddleocr", "mimo2", "step35",
    "llama-embed", "maincoder", "kimi-linear", "talkie", "mellum",
};

/* model_type -> the architecture its GGUF carries; NULL: llama.cpp has
 * none; TEXT: the text model's (text_config.model_type) — a wrapper whose
 * tower runs from the --mmproj file while the text model is the GGUF. */
#define TEXT "(text)"
static const struct {
    const char *model_type, *arch;
} by_type[] = {
    {"llama", "llama"}, {"mistral", "llama"}, {"mixtral", "llama"}, {"ministral", "llama"},
    {"ministral3", "mistral3"}, {"qwen2", "qwen2"}, {"qwen2_moe", "qwen2moe"}, {"qwen3", "qwen3"},
    {"qwen3_moe", "qwen3moe"}, {"gemma", "gemma"}, {"gemma2", "gemma2"}, {"gemma3", "gemma3"},
    {"gemma3_text", "gemma3"}, {"gemma4", "gemma4"}, {"gemma4_text", "gemma4"}, {"phi3", "phi3"},
    {"olmo2", "olmo2"}, {"gpt_oss", "gpt-oss"}, {"smollm3", "smollm3"}, {"granite", "granite"},
    {"deepseek_v2", "deepseek2"}, {"deepseek_v3", "deepseek2"}, {"kimi_k2", "deepseek2"},
    {"deepseek_v32", "deepseek32"}, {"granitemoe", "granitemoe"}, {"granitemoeshared", "granitemoe"},
    {"exaone4", "exaone4"}, {"apertus", "apertus"}, {"hunyuan_v1_dense", "hunyuan-dense"}, {"glm4", "glm4"},
    {"glm4_moe", "glm4moe"}, {"minimax_m2", "minimax-m2"}, {"dots1", "dots1"}, {"phimoe", "phimoe"},
    {"mamba", "mamba"}, {"falcon_mamba", "mamba"}, {"mamba2", "mamba2"}, {"mamba_ssm", "mamba2"},
    {"bamba", "granitehybrid"}, {"granitemoehybrid", "granitehybrid"}, {"jamba", "jamba"},
    {"nemotron_h", "nemotron_h"}, {"lfm2", "lfm2"}, {"lfm2_moe", "lfm2moe"}, {"qwen3_next", "qwen3next"},
    {"falcon_h1", "falcon-h1"}, {"zamba2", NULL}, {"qwen2_vl", "qwen2vl"}, {"qwen2_5_vl", "qwen2vl"},
    {"qwen3_vl", "qwen3vl"}, {"qwen3_vl_text", "qwen3vl"}, {"qwen3_vl_moe", "qwen3vlmoe"},
    {"qwen3_vl_moe_text", "qwen3vlmoe"}, {"qwen3_5", "qwen35"}, {"qwen3_5_text", "qwen35"},
    {"qwen3_5_moe", "qwen35moe"}, {"qwen3_5_moe_text", "qwen35moe"}, {"llama4", "llama4"},
    {"llama4_text", "llama4"}, {"mllama", NULL}, {"mllama_text_model", NULL}, {"llava", TEXT},
    {"idefics3", TEXT}, {"smolvlm", TEXT}, {"internvl", TEXT}, {"lfm2_vl", TEXT}, {"mistral3", TEXT},
    {"gpt2", "gpt2"}, {"gpt_bigcode", "starcoder"}, {"gpt_neox", "gptneox"}, {"bert", "bert"},
    {"falcon", "falcon"}, {"RefinedWebModel", "falcon"}, {"RefinedWeb", "falcon"},
};

static bool known_arch(const char *a)
{
    for (size_t i = 0; i < sizeof arch_names / sizeof arch_names[0]; i++)
        if (strcmp(arch_names[i], a) == 0)
            return true;
    return false;
}

/* The row for a model_type: 1 with *arch set (NULL when llama.cpp has none),
 * 0 when the type is not in the table. */
static int lookup(const char *type, const char **arch)
{
    for (size_t i = 0; type && i < sizeof by_type / sizeof by_type[0]; i++)
        if (strcmp(by_type[i].model_type, type) == 0) {
            *arch = by_type[i].arch;
            return 1;
        }
    return 0;
}

const char *vf__llamacpp_arch(const vf_model *m, bool *known)
{
    const vf_hparams *hp = vf_model_hparams(m);
    *known = false;
    if (m->format == VF_FORMAT_GGUF) { /* the file names llama.cpp's architecture itself */
        *known = true;
        return known_arch(hp->architecture) ? hp->architecture : NULL;
    }
    const char *arch = NULL;
    if (!lookup(hp->architecture, &arch))
        return NULL; /* a family vramfit does not know: approximate, and said so elsewhere */
    if (arch && strcmp(arch, TEXT) == 0) {
        const char *tt = vf__cfg_str(json_object_get(m->config, "text_config"), "model_type");
        if (!lookup(tt ? tt : "llama", &arch))
            return NULL;
    }
    *known = true;
    return arch;
}

/* llm_arch_supports_rs_rollback (src/llama-arch.cpp, the tree node-llama-cpp
 * 3.22.1 bundles, ggml-org/llama.cpp de3ff815ea7d): the architectures whose
 * recurrent state keeps n_rs_seq snapshots for a draft's rollback; every
 * other one has n_rs_seq clamped to 0 (llama-context.cpp). That list also
 * names kimi-k3, qwen4exp and bailingmoe3, which arch_names above (the
 * pinned tree) does not load. */
static const char *const rs_rollback_archs[] = {
    "qwen35", "qwen35moe", "deepseek4", "nemotron_h", "nemotron_h_moe", "lfm2", "lfm2moe",
};

bool vf__llamacpp_rs_rollback(const vf_model *m)
{
    bool known;
    const char *arch = vf__llamacpp_arch(m, &known);
    for (size_t i = 0; arch && i < sizeof rs_rollback_archs / sizeof rs_rollback_archs[0]; i++)
        if (strcmp(rs_rollback_archs[i], arch) == 0)
            return true;
    return false;
}

vf_status vf__llamacpp_arch_check(const vf_model *m, vf_error *err)
{
    bool known;
    const char *arch = vf__llamacpp_arch(m, &known);
    if (!known || arch)
        return VF_OK;
    const char *t = vf_model_hparams(m)->architecture;
    return vf__err(err, VF_EUNSUPPORTED, m->source,
                   "llama.cpp does not implement %.64s (no such architecture in its src/llama-arch.cpp); "
                   "try --runtime vllm or transformers", t[0] ? t : "this architecture");
}
