/* trainutil.h — models for the training tests: the exact Hugging Face tensor
 * names and shapes of GPT-2 and Llama blocks, in module registration order
 * (which the optimizer's per-tensor loop follows), with the config keys HF
 * writes. Built in memory so the tests do not depend on the config.json
 * reader. */
#ifndef VF_TRAINUTIL_H
#define VF_TRAINUTIL_H

#include "results.h"
#include "testutil.h"
#include "model/model.h"

typedef struct tr_shape {
    const char *family; /* "gpt2" | "llama" */
    uint64_t hidden, inter, vocab, n_positions;
    uint32_t layers, heads, kv_heads, head_dim;
    double dropout;
    const char *act; /* HF activation_function / hidden_act */
    vf_dtype dtype;
    bool tied;
} tr_shape;

static inline void tr_add(vf_model *m, vf_dtype dt, const char *fmt, int layer, uint32_t nd, uint64_t d0, uint64_t d1,
                          uint64_t d2, uint64_t d3)
{
    char name[160];
    if (layer >= 0) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        snprintf(name, sizeof name, fmt, layer);
#pragma GCC diagnostic pop
    } else {
        snprintf(name, sizeof name, "%s", fmt);
    }
    vf_tensor t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.dtype = dt;
    t.n_dims = nd;
    uint64_t d[4] = {d0, d1, d2, d3};
    t.n_elements = 1;
    for (uint32_t i = 0; i < nd; i++) {
        t.shape[i] = d[i];
        t.n_elements *= d[i];
    }
    assert_int_equal(vf_dtype_bytes(dt, t.n_elements, &t.n_bytes), VF_OK);
    t.file = VF_NO_FILE;
    assert_non_null(vf__model_add_tensor(m, &t));
}

static inline vf_model *tr_build(const tr_shape *s)
{
    vf_model *m = vf__model_new(VF_FORMAT_CONFIG, s->family);
    assert_non_null(m);
    const uint64_t h = s->hidden, I = s->inter, V = s->vocab;
    const vf_dtype dt = s->dtype;
    json_t *cfg = json_object();
    json_object_set_new(cfg, "model_type", json_string(s->family));
    json_object_set_new(cfg, "vocab_size", json_integer((json_int_t)V));
    if (!strcmp(s->family, "gpt2")) {
        json_object_set_new(cfg, "n_embd", json_integer((json_int_t)h));
        json_object_set_new(cfg, "n_layer", json_integer(s->layers));
        json_object_set_new(cfg, "n_head", json_integer(s->heads));
        json_object_set_new(cfg, "n_inner", json_integer((json_int_t)I));
        json_object_set_new(cfg, "n_positions", json_integer((json_int_t)s->n_positions));
        json_object_set_new(cfg, "activation_function", json_string(s->act));
        json_object_set_new(cfg, "resid_pdrop", json_real(s->dropout));
        json_object_set_new(cfg, "embd_pdrop", json_real(s->dropout));
        json_object_set_new(cfg, "attn_pdrop", json_real(s->dropout));
        json_object_set_new(cfg, "tie_word_embeddings", json_true());
        tr_add(m, dt, "transformer.wte.weight", -1, 2, V, h, 0, 0);
        tr_add(m, dt, "transformer.wpe.weight", -1, 2, s->n_positions, h, 0, 0);
        for (uint32_t l = 0; l < s->layers; l++) {
            int L = (int)l;
            tr_add(m, dt, "transformer.h.%d.ln_1.weight", L, 1, h, 0, 0, 0);
            tr_add(m, dt, "transformer.h.%d.ln_1.bias", L, 1, h, 0, 0, 0);
            tr_add(m, VF_DTYPE_BOOL, "transformer.h.%d.attn.bias", L, 4, 1, 1, s->n_positions, s->n_positions);
            tr_add(m, dt, "transformer.h.%d.attn.c_attn.weight", L, 2, h, 3 * h, 0, 0);
            tr_add(m, dt, "transformer.h.%d.attn.c_attn.bias", L, 1, 3 * h, 0, 0, 0);
            tr_add(m, dt, "transformer.h.%d.attn.c_proj.weight", L, 2, h, h, 0, 0);
            tr_add(m, dt, "transformer.h.%d.attn.c_proj.bias", L, 1, h, 0, 0, 0);
            tr_add(m, dt, "transformer.h.%d.ln_2.weight", L, 1, h, 0, 0, 0);
            tr_add(m, dt, "transformer.h.%d.ln_2.bias", L, 1, h, 0, 0, 0);
            tr_add(m, dt, "transformer.h.%d.mlp.c_fc.weight", L, 2, h, I, 0, 0);
            tr_add(m, dt, "transformer.h.%d.mlp.c_fc.bias", L, 1, I, 0, 0, 0);
            tr_add(m, dt, "transformer.h.%d.mlp.c_proj.weight", L, 2, I, h, 0, 0);
            tr_add(m, dt, "transformer.h.%d.mlp.c_proj.bias", L, 1, h, 0, 0, 0);
        }
        tr_add(m, dt, "transformer.ln_f.weight", -1, 1, h, 0, 0, 0);
        tr_add(m, dt, "transformer.ln_f.bias", -1, 1, h, 0, 0, 0);
    } else {
        const uint64_t q = (uint64_t)s->heads * s->head_dim, kv = (uint64_t)s->kv_heads * s->head_dim;
        json_object_set_new(cfg, "hidden_size", json_integer((json_int_t)h));
        json_object_set_new(cfg, "num_hidden_layers", json_integer(s->layers));
        json_object_set_new(cfg, "num_attention_heads", json_integer(s->heads));
        json_object_set_new(cfg, "num_key_value_heads", json_integer(s->kv_heads));
        json_object_set_new(cfg, "head_dim", json_integer(s->head_dim));
        json_object_set_new(cfg, "intermediate_size", json_integer((json_int_t)I));
        json_object_set_new(cfg, "max_position_embeddings", json_integer((json_int_t)s->n_positions));
        json_object_set_new(cfg, "hidden_act", json_string(s->act));
        json_object_set_new(cfg, "attention_dropout", json_real(s->dropout));
        json_object_set_new(cfg, "tie_word_embeddings", s->tied ? json_true() : json_false());
        tr_add(m, dt, "model.embed_tokens.weight", -1, 2, V, h, 0, 0);
        for (uint32_t l = 0; l < s->layers; l++) {
            int L = (int)l;
            tr_add(m, dt, "model.layers.%d.self_attn.q_proj.weight", L, 2, q, h, 0, 0);
            tr_add(m, dt, "model.layers.%d.self_attn.k_proj.weight", L, 2, kv, h, 0, 0);
            tr_add(m, dt, "model.layers.%d.self_attn.v_proj.weight", L, 2, kv, h, 0, 0);
            tr_add(m, dt, "model.layers.%d.self_attn.o_proj.weight", L, 2, h, q, 0, 0);
            tr_add(m, dt, "model.layers.%d.mlp.gate_proj.weight", L, 2, I, h, 0, 0);
            tr_add(m, dt, "model.layers.%d.mlp.up_proj.weight", L, 2, I, h, 0, 0);
            tr_add(m, dt, "model.layers.%d.mlp.down_proj.weight", L, 2, h, I, 0, 0);
            tr_add(m, dt, "model.layers.%d.input_layernorm.weight", L, 1, h, 0, 0, 0);
            tr_add(m, dt, "model.layers.%d.post_attention_layernorm.weight", L, 1, h, 0, 0, 0);
        }
        tr_add(m, dt, "model.norm.weight", -1, 1, h, 0, 0, 0);
        tr_add(m, dt, "model.rotary_emb.inv_freq", -1, 1, s->head_dim / 2, 0, 0, 0); /* a buffer */
        if (!s->tied)
            tr_add(m, dt, "lm_head.weight", -1, 2, V, h, 0, 0);
    }
    m->config = cfg;
    vf__model_classify(m);
    return m;
}

/* A record's field: present and an integer (tr_ju) or a string (tr_js). */
static inline uint64_t tr_ju(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    assert_non_null(v);
    assert_true(json_is_integer(v));
    return (uint64_t)json_integer_value(v);
}

static inline const char *tr_js(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    assert_non_null(v);
    return json_string_value(v);
}

/* The model a record of tests/reference/torch/results.json measured, from
 * the record's own fields. */
static inline vf_model *tr_record_model(const json_t *r)
{
    tr_shape s;
    memset(&s, 0, sizeof s);
    s.family = tr_js(r, "family");
    s.hidden = tr_ju(r, "hidden");
    s.inter = tr_ju(r, "intermediate");
    s.vocab = tr_ju(r, "vocab");
    s.n_positions = tr_ju(r, "n_positions");
    s.layers = (uint32_t)tr_ju(r, "n_layers");
    s.heads = (uint32_t)tr_ju(r, "n_heads");
    s.kv_heads = (uint32_t)tr_ju(r, "n_kv_heads");
    s.head_dim = (uint32_t)tr_ju(r, "head_dim");
    s.dropout = json_number_value(json_object_get(r, "dropout"));
    s.act = !strcmp(tr_js(r, "family"), "llama") ? "silu"
            : !strcmp(tr_js(r, "act"), "gelu_new_py") ? "gelu_new" : "gelu_pytorch_tanh";
    s.dtype = !strcmp(tr_js(r, "dtype"), "fp32") ? VF_DTYPE_F32 : VF_DTYPE_BF16;
    s.tied = !strcmp(s.family, "gpt2");
    return tr_build(&s);
}

#endif
