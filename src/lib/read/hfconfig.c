/* hfconfig.c — Hugging Face config.json: hyper-parameters, and the model's
 * exact tensor list built by its architecture family (arch_*.c).
 *
 * Every number read from the file is range-checked before it sizes anything,
 * and the tensor count a config implies is bounded before building, so a
 * hostile config cannot make us allocate without limit. */
#include "read/arch/arch.h"
#include "read/pyfloats.h"
#include "read/readers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Hard caps on config values (far above any real model). */
#define CAP_LAYERS 4096u
#define CAP_HIDDEN ((uint64_t)1 << 20)
#define CAP_HEADS 16384u
#define CAP_HEAD_DIM 65536u
#define CAP_FF ((uint64_t)1 << 24)
#define CAP_VOCAB ((uint64_t)1 << 24)
#define CAP_EXPERTS 16384u
#define CAP_CONTEXT ((uint64_t)1 << 40)
#define CAP_BUILD_TENSORS ((uint64_t)1 << 20) /* tensors a config may imply (real: < 600k) */

/* ---- families (arch/families.c) ---- */

/* mamba_ssm's own config format (state-spaces/mamba2-*): no model_type, d_model + ssm_cfg */
static const char *config_type(const json_t *root)
{
    const char *type = vf__cfg_str(root, "model_type");
    if (!type && json_is_object(json_object_get(root, "ssm_cfg")) && json_object_get(root, "d_model"))
        return "mamba_ssm";
    return type;
}

/* The traits of a model_type; none when it is not a known family. */
static unsigned traits(const char *model_type)
{
    const vf__family *f = vf__family_find(model_type);
    return f ? f->traits : 0;
}

/* ---- hyper-parameters ---- */

static vf_dtype dtype_from_torch(const char *s)
{
    if (!s)
        return VF_DTYPE_UNKNOWN;
    if (strncmp(s, "torch.", 6) == 0)
        s += 6;
    if (strcmp(s, "bfloat16") == 0)
        return VF_DTYPE_BF16;
    if (strcmp(s, "float16") == 0 || strcmp(s, "half") == 0)
        return VF_DTYPE_F16;
    if (strcmp(s, "float32") == 0 || strcmp(s, "float") == 0)
        return VF_DTYPE_F32;
    if (strcmp(s, "float64") == 0)
        return VF_DTYPE_F64;
    return VF_DTYPE_UNKNOWN;
}

/* The language model's own config: text_config for multimodal wrappers. */
static const json_t *text_cfg(const json_t *root)
{
    const json_t *t = json_object_get(root, "text_config");
    return json_is_object(t) ? t : root;
}

/* save_pretrained writes a nested sub-config as its difference from the
 * sub-config class's defaults (recursive_diff_dict), so text_config may omit
 * them; these are the class defaults (transformers configuration_<family>.py). */
static const struct {
    const char *type;
    const char *json;
} text_defaults[] = {
    {"gemma3_text", "{\"vocab_size\":262208,\"hidden_size\":2304,\"intermediate_size\":9216,"
                    "\"num_hidden_layers\":26,\"num_attention_heads\":8,\"num_key_value_heads\":4,"
                    "\"head_dim\":256,\"max_position_embeddings\":131072,\"sliding_window\":4096,"
                    "\"sliding_window_pattern\":6,\"tie_word_embeddings\":true}"},
    /* LlamaConfig (llava's text_config keeps only what differs from it) */
    {"llama", "{\"vocab_size\":32000,\"hidden_size\":4096,\"intermediate_size\":11008,"
              "\"num_hidden_layers\":32,\"num_attention_heads\":32,\"max_position_embeddings\":2048}"},
};

/* Class defaults of top-level configs whose classes differ from what the
 * generic reader assumes for an absent key (transformers
 * configuration_falcon_h1.py, configuration_zamba2.py: FalconH1Config's
 * num_key_value_heads is 8, not the attention heads). */
static const struct {
    const char *type;
    const char *json;
} root_defaults[] = {
    {"falcon_h1", "{\"vocab_size\":128000,\"hidden_size\":4096,\"intermediate_size\":14336,"
                  "\"num_hidden_layers\":32,\"num_attention_heads\":32,\"num_key_value_heads\":8,"
                  "\"max_position_embeddings\":8192}"},
    {"zamba2", "{\"vocab_size\":32000,\"hidden_size\":2560,\"num_hidden_layers\":54,"
               "\"num_attention_heads\":32,\"max_position_embeddings\":4096}"},
};

static void fill_root_defaults(json_t *root)
{
    const char *type = vf__cfg_str(root, "model_type");
    for (size_t i = 0; type && i < sizeof root_defaults / sizeof root_defaults[0]; i++) {
        if (strcmp(root_defaults[i].type, type) != 0)
            continue;
        json_t *d = json_loads(root_defaults[i].json, 0, NULL);
        if (d)
            json_object_update_missing(root, d);
        json_decref(d);
    }
}

static void fill_text_defaults(json_t *root)
{
    fill_root_defaults(root);
    json_t *t = json_object_get(root, "text_config");
    if (!json_is_object(t))
        return;
    const char *type = vf__cfg_str(t, "model_type");
    const char *rtype = vf__cfg_str(root, "model_type");
    if (!type && rtype && strcmp(rtype, "gemma3") == 0)
        type = "gemma3_text";
    for (size_t i = 0; type && i < sizeof text_defaults / sizeof text_defaults[0]; i++) {
        if (strcmp(text_defaults[i].type, type) != 0)
            continue;
        json_t *d = json_loads(text_defaults[i].json, 0, NULL);
        if (d)
            json_object_update_missing(t, d);
        json_decref(d);
    }
}

typedef struct rd {
    const json_t *o;
    const char *path;
    vf_error *err;
    vf_status st;
} rd;

/* Reads the first present key into *out (when present) with a cap. */
static bool get(rd *r, uint64_t *out, uint64_t cap, const char *k1, const char *k2, const char *k3)
{
    if (r->st != VF_OK)
        return false;
    uint64_t v = 0;
    int got = vf__cfg_u64(r->o, &v, k1, k2, k3, NULL);
    if (got < 0) {
        r->st = vf__err(r->err, VF_EFORMAT, r->path, "%s must be a non-negative integer", k1);
        return false;
    }
    if (got == 0)
        return false;
    if (v > cap) {
        r->st = vf__err(r->err, VF_ERANGE, r->path, "%s = %llu is out of range (at most %llu)", k1,
                        (unsigned long long)v, (unsigned long long)cap);
        return false;
    }
    *out = v;
    return true;
}

static bool streq(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

/* Per-layer attention kinds from layer_types or the family's fixed pattern. */
static vf_status layer_kinds(vf_hparams *hp, const json_t *t, const char *type, const char *path, vf_error *err)
{
    uint32_t L = hp->n_layers;
    const json_t *lt = json_object_get(t, "layer_types");
    if (L == 0)
        return VF_OK;
    uint8_t *swa = calloc(L, 1);
    if (!swa)
        return vf__err(err, VF_ENOMEM, path, "out of memory");
    size_t n_swa = 0;
    if (json_is_array(lt)) {
        if (json_array_size(lt) != L) {
            free(swa);
            return vf__err(err, VF_EFORMAT, path, "layer_types has %zu entries for %u layers", json_array_size(lt),
                           L);
        }
        for (uint32_t i = 0; i < L; i++) {
            const char *k = json_string_value(json_array_get(lt, i));
            if (!k) {
                free(swa);
                return vf__err(err, VF_EFORMAT, path, "layer_types[%u] is not a string", i);
            }
            swa[i] = strcmp(k, "sliding_attention") == 0 || strcmp(k, "chunked_attention") == 0;
        }
    } else if (streq(type, "gemma2")) {
        for (uint32_t i = 0; i < L; i++)
            swa[i] = i % 2 == 0; /* Gemma2: even layers slide */
    } else if (streq(type, "gemma3") || streq(type, "gemma3_text")) {
        uint64_t pat = 6;
        vf__cfg_u64(t, &pat, "sliding_window_pattern", NULL);
        for (uint32_t i = 0; i < L; i++)
            swa[i] = pat > 0 && (i + 1) % pat != 0;
    } else if (hp->sliding_window && (traits(type) & VF_TR_QWEN_SWA)) {
        uint64_t mwl = 0;
        vf__cfg_u64(t, &mwl, "max_window_layers", NULL);
        for (uint32_t i = 0; i < L; i++)
            swa[i] = i >= mwl;
    } else {
        for (uint32_t i = 0; i < L; i++)
            swa[i] = hp->sliding_window > 0;
    }
    for (uint32_t i = 0; i < L; i++)
        n_swa += swa[i];
    if (n_swa == 0)
        hp->sliding_window = 0;
    if (n_swa == 0 || n_swa == L) {
        free(swa); /* uniform: sliding_window alone says it */
        return VF_OK;
    }
    free(hp->layer_is_swa);
    hp->layer_is_swa = swa;
    return VF_OK;
}

/* Gemma 4: full-attention layers have their own head size and KV heads, and
 * the last num_kv_shared_layers reuse earlier layers' KV. */
static vf_status gemma4_layers(vf_hparams *hp, const json_t *t, const char *path, vf_error *err)
{
    uint32_t L = hp->n_layers;
    uint64_t ghd = 0, gkv = 0, shared = 0;
    vf__cfg_u64(t, &ghd, "global_head_dim", NULL);
    vf__cfg_u64(t, &gkv, "num_global_key_value_heads", NULL);
    vf__cfg_u64(t, &shared, "num_kv_shared_layers", NULL);
    bool k_eq_v = vf__cfg_bool(t, "attention_k_eq_v", false);
    if (ghd > CAP_HEAD_DIM || gkv > CAP_HEADS)
        return vf__err(err, VF_ERANGE, path, "global_head_dim or num_global_key_value_heads out of range");
    hp->layer_head_dim = calloc(L, sizeof *hp->layer_head_dim);
    hp->layer_n_kv_heads = calloc(L, sizeof *hp->layer_n_kv_heads);
    if (!hp->layer_head_dim || !hp->layer_n_kv_heads)
        return vf__err(err, VF_ENOMEM, path, "out of memory");
    for (uint32_t i = 0; i < L; i++) {
        bool sliding = hp->layer_is_swa ? hp->layer_is_swa[i] : hp->sliding_window > 0;
        hp->layer_head_dim[i] = !sliding && ghd ? (uint32_t)ghd : hp->head_dim;
        hp->layer_n_kv_heads[i] = !sliding && k_eq_v && gkv ? (uint32_t)gkv : hp->n_kv_heads;
    }
    if (shared > 0 && shared <= L) {
        hp->layer_no_kv = calloc(L, 1);
        if (!hp->layer_no_kv)
            return vf__err(err, VF_ENOMEM, path, "out of memory");
        for (uint32_t i = L - (uint32_t)shared; i < L; i++)
            hp->layer_no_kv[i] = 1;
    }
    return VF_OK;
}

static vf_status parse_hparams(vf_hparams *hp, json_t *root, const char *path, vf_error *err)
{
    fill_text_defaults(root);
    const json_t *t = text_cfg(root);
    const char *type = config_type(root);
    const char *ttype = vf__cfg_str(t, "model_type");
    snprintf(hp->architecture, sizeof hp->architecture, "%s", type ? type : ttype ? ttype : "");
    const char *nm = vf__cfg_str(root, "_name_or_path");
    if (nm && nm[0] && nm[0] != '/' && nm[0] != '.' && !hp->name[0]) /* a hub id, not a local path */
        snprintf(hp->name, sizeof hp->name, "%s", nm);
    if (!type)
        type = ttype;
    unsigned tr = traits(type);
    unsigned ttr = t != root && vf__family_find(ttype) ? traits(ttype) : tr; /* the text model's class */
    bool falcon = tr & VF_TR_FALCON;

    rd r = {t, path, err, VF_OK};
    uint64_t v;
    if (get(&r, &v, CAP_LAYERS, "num_hidden_layers", "n_layer", "num_layers"))
        hp->n_layers = (uint32_t)v;
    get(&r, &hp->hidden_size, CAP_HIDDEN, "hidden_size", "n_embd", "d_model");
    if (!hp->hidden_size && streq(type, "bloom")) /* BloomConfig.__init__ pops n_embed into hidden_size */
        get(&r, &hp->hidden_size, CAP_HIDDEN, "n_embed", NULL, NULL);
    if (get(&r, &v, CAP_HEADS, "num_attention_heads", "n_head", "num_heads"))
        hp->n_heads = (uint32_t)v;
    hp->n_kv_heads = hp->n_heads;
    if (get(&r, &v, CAP_HEADS, "num_key_value_heads", "num_kv_heads", "n_head_kv"))
        hp->n_kv_heads = (uint32_t)v;
    bool new_arch = vf__cfg_bool(t, "new_decoder_architecture", false) || streq(type, "RefinedWeb");
    if ((falcon && !new_arch && vf__cfg_bool(t, "multi_query", true)) ||
        (streq(type, "gpt_bigcode") && vf__cfg_bool(t, "multi_query", true)))
        hp->n_kv_heads = 1;
    if (get(&r, &hp->intermediate_size, CAP_FF, "intermediate_size", "n_inner", "ffn_hidden_size") == false &&
        r.st == VF_OK && (tr & VF_TR_FF_4H))
        hp->intermediate_size = 4 * hp->hidden_size;
    get(&r, &hp->vocab_size, CAP_VOCAB, "vocab_size", "padded_vocab_size", NULL);
    get(&r, &hp->context_length, CAP_CONTEXT, "max_position_embeddings", "n_positions", "max_sequence_length");
    if (r.st != VF_OK)
        return r.st;
    if (hp->n_heads && hp->hidden_size)
        hp->head_dim = (uint32_t)(hp->hidden_size / hp->n_heads);
    if (get(&r, &v, CAP_HEAD_DIM, "head_dim", NULL, NULL))
        hp->head_dim = (uint32_t)v;
    hp->v_head_dim = hp->head_dim;
    if (r.st != VF_OK)
        return r.st;
    if (hp->n_kv_heads > hp->n_heads && hp->n_heads)
        return vf__err(err, VF_EFORMAT, path, "more key/value heads (%u) than attention heads (%u)", hp->n_kv_heads,
                       hp->n_heads);

    /* tied embeddings: transformers' PretrainedConfig default is true; the
     * VF_TR_UNTIED families set false in their config classes */
    bool tie_default = !(ttr & VF_TR_UNTIED);
    const json_t *tie = json_object_get(t, "tie_word_embeddings");
    if (!json_is_boolean(tie))
        tie = json_object_get(root, "tie_word_embeddings");
    hp->tie_word_embeddings = json_is_boolean(tie) ? json_is_true(tie) : tie_default;
    if (streq(type, "gemma") || streq(type, "gemma2"))
        hp->tie_word_embeddings = true; /* GemmaForCausalLM has no separate head */

    /* mixture of experts */
    if (get(&r, &v, CAP_EXPERTS, "num_local_experts", "num_experts", "n_routed_experts"))
        hp->n_experts = (uint32_t)v;
    if (get(&r, &v, CAP_EXPERTS, "num_experts_per_tok", "experts_per_token", "top_k_experts"))
        hp->n_experts_active = (uint32_t)v;
    if (get(&r, &v, CAP_EXPERTS, "n_shared_experts", "num_shared_experts", NULL))
        hp->n_shared_experts = (uint32_t)v;
    get(&r, &hp->moe_intermediate_size, CAP_FF, "moe_intermediate_size", "expert_intermediate_size", NULL);
    /* the shared expert's width under each family's spelling */
    if ((get(&r, &hp->shared_expert_intermediate_size, CAP_FF, "shared_expert_intermediate_size",
             "moe_shared_expert_intermediate_size", "shared_intermediate_size") ||
         get(&r, &hp->shared_expert_intermediate_size, CAP_FF, "shared_expert_ffn_size", NULL, NULL)) &&
        hp->shared_expert_intermediate_size && !hp->n_shared_experts)
        hp->n_shared_experts = 1;
    if (get(&r, &v, CAP_LAYERS, "first_k_dense_replace", "num_dense_layers", "first_k_dense"))
        hp->first_k_dense = (uint32_t)v;
    hp->moe_layer_freq = hp->n_experts ? 1 : 0;
    if (get(&r, &v, CAP_LAYERS, "moe_layer_freq", "decoder_sparse_step", "interleave_moe_layer_step"))
        hp->moe_layer_freq = (uint32_t)v;
    if (get(&r, &v, 64, "num_nextn_predict_layers", NULL, NULL))
        hp->n_mtp_layers = (uint32_t)v;
    if (hp->n_experts_active > hp->n_experts)
        return r.st != VF_OK ? r.st
                             : vf__err(err, VF_EFORMAT, path, "%u experts per token but only %u experts",
                                       hp->n_experts_active, hp->n_experts);
    if (hp->n_experts && !hp->moe_intermediate_size)
        hp->moe_intermediate_size = hp->intermediate_size;
    if (hp->n_shared_experts && !hp->shared_expert_intermediate_size)
        hp->shared_expert_intermediate_size = hp->moe_intermediate_size * hp->n_shared_experts;

    /* multi-head latent attention */
    if (get(&r, &v, CAP_HIDDEN, "q_lora_rank", NULL, NULL))
        hp->q_lora_rank = (uint32_t)v;
    if (get(&r, &v, CAP_HIDDEN, "kv_lora_rank", NULL, NULL))
        hp->kv_lora_rank = (uint32_t)v;
    if (get(&r, &v, CAP_HEAD_DIM, "qk_rope_head_dim", NULL, NULL))
        hp->qk_rope_head_dim = (uint32_t)v;
    if (get(&r, &v, CAP_HEAD_DIM, "qk_nope_head_dim", NULL, NULL))
        hp->qk_nope_head_dim = (uint32_t)v;
    if (get(&r, &v, CAP_HEAD_DIM, "v_head_dim", NULL, NULL))
        hp->v_head_dim = (uint32_t)v;
    if (hp->kv_lora_rank && (hp->qk_rope_head_dim || hp->qk_nope_head_dim))
        hp->head_dim = hp->qk_rope_head_dim + hp->qk_nope_head_dim;

    /* sliding window */
    if (get(&r, &v, CAP_CONTEXT, "sliding_window", NULL, NULL) && vf__cfg_bool(t, "use_sliding_window", true))
        hp->sliding_window = (uint32_t)(v > UINT32_MAX ? UINT32_MAX : v);
    if (r.st != VF_OK)
        return r.st;

    /* attention / MLP biases as the families define them */
    hp->attention_bias = vf__cfg_bool(t, "attention_bias", ttr & VF_TR_QKV_BIAS);
    hp->mlp_bias = vf__cfg_bool(t, "mlp_bias", ttr & VF_TR_MLP_BIAS);
    if (tr & VF_TR_BIASES) {
        hp->attention_bias = hp->mlp_bias = falcon ? vf__cfg_bool(t, "bias", false) : true;
    }

    /* precision */
    const char *dt = vf__cfg_str(root, "torch_dtype");
    if (!dt)
        dt = vf__cfg_str(root, "dtype");
    if (!dt)
        dt = vf__cfg_str(t, "torch_dtype");
    if (!dt)
        dt = vf__cfg_str(t, "dtype");
    hp->torch_dtype = dtype_from_torch(dt);
    const json_t *qc = json_object_get(root, "quantization_config");
    if (!json_is_object(qc))
        qc = json_object_get(root, "compression_config");
    if (json_is_object(qc)) {
        const char *qm = vf__cfg_str(qc, "quant_method");
        snprintf(hp->quant_method, sizeof hp->quant_method, "%s", qm ? qm : "bitsandbytes");
        uint64_t bits = 0, gs = 0;
        if (vf__cfg_u64(qc, &bits, "bits", "w_bit", NULL) > 0 && bits <= 64)
            hp->quant_bits = (uint32_t)bits;
        if (vf__cfg_u64(qc, &gs, "group_size", "q_group_size", NULL) > 0 && gs <= UINT32_MAX)
            hp->quant_group_size = (uint32_t)gs;
    }

    vf_status st = layer_kinds(hp, t, type, path, err);
    if (st == VF_OK) /* a wrapper's hybrid text model (qwen3_5, lfm2_vl) by its own model_type */
        st = vf__hybrid_hparams(hp, root, t, (tr & VF_TR_VLM) && ttype ? ttype : type, path, err);
    if (st == VF_OK && (streq(type, "gemma4") || streq(type, "gemma4_text")))
        st = gemma4_layers(hp, t, path, err);
    if (st == VF_OK && streq(type, "chatglm"))
        st = vf__chatglm_hparams(hp, t, path, err);
    if (st == VF_OK && streq(type, "deepseek_v4"))
        st = vf__deepseek4_hparams(hp, t, path, err);
    return st;
}

vf_status vf__hfconfig_parse_hparams(vf_hparams *hp, json_t *cfg, const char *path, vf_error *err)
{
    if (!json_is_object(cfg))
        return vf__err(err, VF_EFORMAT, path, "config.json is not a json object");
    return parse_hparams(hp, cfg, path, err);
}

/* ---- the tensor list ---- */

/* Dtype checkpoints of a family carry when the config does not say: the old
 * families were saved from float32 models; newer ones ship bfloat16. */
static vf_dtype default_dtype(const char *type)
{
    return traits(type) & VF_TR_FP32 ? VF_DTYPE_F32 : VF_DTYPE_BF16;
}

/* Tensors per layer a config implies, bounded before anything is built. */
static vf_status check_budget(const vf_hparams *hp, const char *path, vf_error *err)
{
    uint64_t per_layer = 64 + (uint64_t)hp->n_experts * 3 * 7 + (uint64_t)hp->n_shared_experts * 3 * 7;
    uint64_t layers = (uint64_t)hp->n_layers + hp->n_mtp_layers;
    if (layers * per_layer > CAP_BUILD_TENSORS)
        return vf__err(err, VF_ERANGE, path, "config implies too many tensors (%u layers x %u experts)", hp->n_layers,
                       hp->n_experts);
    return VF_OK;
}

static bool has_decoder_keys(const json_t *t)
{
    const char *keys[] = {"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                          "vocab_size"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!json_is_integer(json_object_get(t, keys[i])))
            return false;
    return true;
}

/* A vision-language wrapper's text model: its family (as the wrapper names
 * it, else text_config's model_type) and the checkpoint's names for it. */
static vf_status wrapped_text(vf__ab *b, const vf__family *w)
{
    const char *tt = w->text ? w->text : vf__cfg_str(b->cfg, "model_type");
    const vf__family *tf = vf__family_find(tt ? tt : "llama");
    if (!tf || (tf->traits & VF_TR_VLM))
        return vf__err(b->err, VF_EUNSUPPORTED, b->path, "text model '%.64s' of '%s' is not a known family",
                       tt ? tt : "", w->model_type);
    b->text_build = tf->build;
    b->text_type = tf->model_type;
    b->pre = w->pre;
    b->head = w->head;
    return VF_OK;
}

/* An unknown model_type: never a silent guess. With the keys every decoder
 * writes, its tensors are estimated as a llama-like decoder (with the MoE keys
 * it states) and the model is marked approximate; without them, an error. */
static vf_status unknown_family(vf_model *m, const json_t *t, const char *type, const char *path, vf_error *err)
{
    char list[1536];
    if (!has_decoder_keys(t)) {
        vf__family_list(list, sizeof list);
        if (!type)
            return vf__err(err, VF_EUNSUPPORTED, path, "no model_type; supported: %s", list);
        return vf__err(err, VF_EUNSUPPORTED, path, "model_type '%.64s' is not supported; supported: %s", type, list);
    }
    snprintf(m->approximate, sizeof m->approximate,
             "model_type '%.64s' is not a known family: its tensors are estimated as a llama-like decoder%s",
             type ? type : "", m->hp.n_experts ? " with the experts its config states" : "");
    vf__model_warn(m, "%s: %s (approximate)", path, m->approximate);
    return VF_OK;
}

json_t *vf__config_json_parse(const char *text, size_t len, const char *path, vf_error *err)
{
    char *fixed = vf__python_floats(text, len);
    json_t *j = vf__json_parse(fixed ? fixed : text, len, path, err);
    free(fixed);
    return j;
}

vf_status vf__hfconfig_read_text(vf_model *m, const char *text, size_t len, const char *path, vf_error *err)
{
    json_t *root = vf__config_json_parse(text, len, path, err);
    if (!root)
        return err ? err->status : VF_EFORMAT;
    if (!json_is_object(root)) {
        json_decref(root);
        return vf__err(err, VF_EFORMAT, path, "config.json is not a json object");
    }
    json_decref(m->config);
    m->config = root;
    vf__hparams_free(&m->hp);
    memset(&m->hp, 0, sizeof m->hp);
    m->approximate[0] = '\0';
    m->hp.torch_dtype = VF_DTYPE_UNKNOWN;
    vf_status st = parse_hparams(&m->hp, root, path, err);
    if (st != VF_OK)
        return st;

    const json_t *t = text_cfg(root);
    const char *type = config_type(root);
    const vf__family *fam = vf__family_find(type);
    if (!fam && vf__cfg_str(t, "model_type"))
        fam = vf__family_find(type = vf__cfg_str(t, "model_type"));
    vf__arch_fn build = fam ? fam->build : NULL;
    if (!fam && (st = unknown_family(m, t, type, path, err)) != VF_OK)
        return st;
    if (!fam)
        build = vf__arch_text; /* "generic": a llama-like decoder with the MoE keys it states */
    if (m->hp.n_layers == 0 || m->hp.hidden_size == 0 || m->hp.vocab_size == 0)
        return vf__err(err, VF_EFORMAT, path, "config lacks the layer count, hidden size or vocabulary size");
    if ((m->hp.n_heads == 0 || m->hp.head_dim == 0) && !(traits(type) & VF_TR_NO_ATTN))
        return vf__err(err, VF_EFORMAT, path, "config lacks the number of attention heads");
    if ((st = check_budget(&m->hp, path, err)) != VF_OK)
        return st;

    vf__ab b = {.m = m, .root = root, .cfg = t, .path = path, .err = err, .st = VF_OK};
    b.type = fam ? fam->model_type : "generic";
    if (fam && (fam->traits & VF_TR_VLM) && (st = wrapped_text(&b, fam)) != VF_OK)
        return st;
    b.dt = m->hp.torch_dtype;
    if (b.dt == VF_DTYPE_UNKNOWN) {
        b.dt = default_dtype(type);
        if (b.dt != VF_DTYPE_F32 && !streq(type, "gpt_oss"))
            vf__model_warn(m, "%s: torch_dtype not stated; assuming %s", path, vf_dtype_get(b.dt)->name);
    }
    const json_t *qc = json_object_get(root, "quantization_config");
    if (!json_is_object(qc))
        qc = json_object_get(root, "compression_config");
    if ((st = vf__quant_parse(&b, qc)) != VF_OK)
        return st;
    st = build(&b);
    if (st == VF_OK)
        st = b.st;
    vf__ab_done(&b);
    return st;
}
