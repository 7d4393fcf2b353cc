/* test_arch.c — tensor lists built from config.json: exact parameter counts
 * against independent published figures (tests/reference/param-counts.tsv
 * and tests/data/configs/SOURCES.md), MoE active counts, multi-token
 * prediction layers, quantized storage layouts, errors. */
#include "../../src/cli/exit_code.h" /* the CLI's exit statuses */
#include "testutil.h"

#include <math.h>

#define REF "tests/reference/"
#define CFG "tests/data/configs/"

static vf_model *open_ok(const char *path)
{
    vf_model *m = NULL;
    vf_error e = {0};
    vf_status st = vf_model_open(path, &m, &e);
    if (st != VF_OK)
        fail_msg("%s: %s", path, e.msg);
    return m;
}

static vf_model_totals totals(const vf_model *m)
{
    vf_model_totals t;
    vf_model_totals_get(m, &t);
    return t;
}

static const vf_tensor *find(const vf_model *m, const char *name)
{
    for (size_t i = 0; i < vf_model_tensor_count(m); i++)
        if (strcmp(vf_model_tensor(m, i)->name, name) == 0)
            return vf_model_tensor(m, i);
    return NULL;
}

/* Writes text as DIR/config.json and opens it. */
static vf_status open_text(const char *text, vf_model **m, vf_error *e, char **dir_out)
{
    char *dir = tu_tmpdir(), *p = tu_path(dir, "config.json");
    tu_write(p, text, strlen(text));
    vf_status st = vf_model_open(p, m, e);
    free(p);
    *dir_out = dir;
    return st;
}

static void done_dir(char *dir)
{
    tu_rm_rf(dir);
    free(dir);
}

/* Every model of the reference table with an exact count, from its config. */
static void test_reference_table(void **state)
{
    (void)state;
    FILE *f = fopen(REF "param-counts.tsv", "r");
    assert_non_null(f);
    char line[2048];
    int checked = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        char *file = strtok(line, "\t"), *count = strtok(NULL, "\t");
        if (!file || !count || count[0] < '0' || count[0] > '9')
            continue;
        char path[512];
        snprintf(path, sizeof path, REF "models/%s", file);
        vf_model *m = open_ok(path);
        vf_model_totals t = totals(m);
        uint64_t want = strtoull(count, NULL, 10);
        if (t.params != want)
            fail_msg("%s: %llu parameters, want %llu", file, (unsigned long long)t.params, (unsigned long long)want);
        vf_model_free(m);
        checked++;
    }
    fclose(f);
    assert_true(checked >= 24);
}

/* Published exact counts for models outside the table (SOURCES.md there). */
static void test_published_counts(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        uint64_t params;
    } cases[] = {
        {"Qwen__Qwen3-32B.json", 32762123264ull},
        {"meta-llama__Llama-3.1-70B.json", 70553706496ull},
        {"mistralai__Mistral-7B-v0.3.json", 7248023552ull},
        {"mistralai__Mistral-Nemo-Instruct-2407.json", 12247782400ull},
        {"google__gemma-2-2b.json", 2614341888ull},
        {"google__gemma-2-27b.json", 27227128320ull},
        {"google__gemma-3-1b-it.json", 999885952ull},
        {"google__gemma-3-4b-it.json", 4300079472ull},
        {"google__gemma-3-4b-it.hub.json", 4300079472ull}, /* text_config without class defaults */
        {"openai__gpt-oss-120b.json", 116829156672ull},
        {"openai-community__gpt2-medium.json", 354823168ull},
        {"openai-community__gpt2-large.json", 774030080ull},
        {"openai-community__gpt2-xl.json", 1557611200ull},
        {"EleutherAI__pythia-70m.json", 70426624ull},
        {"EleutherAI__pythia-160m.json", 162322944ull},
        {"EleutherAI__pythia-410m.json", 405334016ull},
        {"EleutherAI__pythia-1b.json", 1011781632ull},
        {"EleutherAI__pythia-1.4b.json", 1414647808ull},
        {"EleutherAI__pythia-2.8b.json", 2775208960ull},
        {"EleutherAI__pythia-6.9b.json", 6857302016ull},
        {"EleutherAI__pythia-12b.json", 11846072320ull},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, CFG "%s", cases[i].file);
        vf_model *m = open_ok(path);
        vf_model_totals t = totals(m);
        if (t.params != cases[i].params)
            fail_msg("%s: %llu parameters, want %llu", cases[i].file, (unsigned long long)t.params,
                     (unsigned long long)cases[i].params);
        vf_model_free(m);
    }
}

static uint64_t prefix_params(const vf_model *m, const char *prefix)
{
    uint64_t n = 0;
    for (size_t i = 0; i < vf_model_tensor_count(m); i++)
        if (strncmp(vf_model_tensor(m, i)->name, prefix, strlen(prefix)) == 0 &&
            !(vf_model_tensor(m, i)->flags & VF_TENSOR_NOT_PARAM)) /* parameters, not stored buffers */
            n += vf_model_tensor(m, i)->n_params;
    return n;
}

/* BertModel (embeddings + encoder + pooler) inside the pre-training checkpoint. */
static void test_bert(void **state)
{
    (void)state;
    vf_model *m = open_ok(REF "models/google-bert__bert-base-uncased.json");
    assert_int_equal(prefix_params(m, "bert."), 109482240ull); /* keras-hub bert_base_en_uncased */
    assert_non_null(find(m, "cls.predictions.bias"));
    assert_null(find(m, "cls.predictions.decoder.weight")); /* tied to the word embeddings */
    assert_int_equal(vf_model_hparams(m)->torch_dtype, VF_DTYPE_UNKNOWN);
    assert_int_equal(find(m, "bert.pooler.dense.weight")->dtype, VF_DTYPE_F32);
    vf_model_free(m);
    m = open_ok(CFG "google-bert__bert-large-uncased.json");
    assert_int_equal(prefix_params(m, "bert."), 335141888ull);
    vf_model_free(m);
}

/* GPT-2: the published file stores 12 causal masks [1,1,1024,1024] beside
 * its parameters (param-counts.tsv caveat); they are buffers, not parameters. */
static void test_gpt2_buffers(void **state)
{
    (void)state;
    vf_model *m = open_ok(REF "models/openai-community__gpt2.json");
    vf_model_totals t = totals(m);
    assert_int_equal(t.params, 124439808ull);
    assert_int_equal(t.buffer_elements, 12ull * 1024 * 1024);
    const vf_tensor *w = find(m, "h.0.attn.c_attn.weight");
    assert_non_null(w);
    assert_int_equal(w->shape[0], 768); /* Conv1D: [in, out] */
    assert_int_equal(w->shape[1], 2304);
    assert_int_equal(find(m, "h.0.attn.c_attn.bias")->flags & VF_TENSOR_NOT_PARAM, 0);
    assert_true(find(m, "h.11.attn.bias")->flags & VF_TENSOR_NOT_PARAM);
    assert_null(find(m, "lm_head.weight"));
    vf_model_free(m);
}

static double billions(uint64_t n) { return (double)n / 1e9; }

/* MoE active parameters per token against the published rounded figures. */
static void test_moe_active(void **state)
{
    (void)state;
    vf_model *m = open_ok(REF "models/mistralai__Mixtral-8x7B-v0.1.json");
    vf_model_totals t = totals(m);
    assert_true(fabs(billions(t.active_params) - 12.9) < 0.05); /* Mistral: 12.9B active */
    assert_int_equal(vf_model_hparams(m)->n_experts, 8);
    assert_int_equal(vf_model_hparams(m)->n_experts_active, 2);
    assert_int_equal(find(m, "model.layers.0.block_sparse_moe.experts.7.w2.weight")->role, VF_ROLE_EXPERT);
    vf_model_free(m);

    /* qwen2_moe: 60 routed experts (4 active) + an always-on shared expert with its gate */
    m = open_ok(CFG "Qwen__Qwen1.5-MoE-A2.7B-Chat.json");
    t = totals(m);
    assert_true(fabs(billions(t.params) - 14.3) < 0.05);
    assert_true(fabs(billions(t.active_params) - 2.7) < 0.05);
    assert_int_equal(find(m, "model.layers.0.mlp.shared_expert.up_proj.weight")->role, VF_ROLE_SHARED_EXPERT);
    assert_int_equal(find(m, "model.layers.0.mlp.shared_expert_gate.weight")->shape[0], 1);
    assert_int_equal(find(m, "model.layers.0.mlp.experts.59.down_proj.weight")->role, VF_ROLE_EXPERT);
    vf_model_free(m);

    /* gpt-oss model card: 3.61B / 5.13B active, counting the output head but
     * not the input embedding (a row lookup) */
    const char *oss[2] = {REF "models/openai__gpt-oss-20b.json", CFG "openai__gpt-oss-120b.json"};
    const double want[2] = {3.61, 5.13};
    for (int k = 0; k < 2; k++) {
        m = open_ok(oss[k]);
        t = totals(m);
        uint64_t embed = find(m, "model.embed_tokens.weight")->n_params;
        assert_true(fabs(billions(t.active_params - embed) - want[k]) < 0.005);
        vf_model_free(m);
    }
}

/* gpt-oss experts as the checkpoint stores them: MXFP4 blocks + scales. */
static void test_gpt_oss_mxfp4(void **state)
{
    (void)state;
    vf_model *m = open_ok(REF "models/openai__gpt-oss-20b.json");
    const vf_tensor *b = find(m, "model.layers.0.mlp.experts.gate_up_proj_blocks");
    assert_non_null(b);
    assert_int_equal(b->dtype, VF_DTYPE_U8);
    assert_int_equal(b->n_dims, 4);
    assert_int_equal(b->shape[0], 32);
    assert_int_equal(b->shape[1], 5760);
    assert_int_equal(b->shape[2], 90);
    assert_int_equal(b->shape[3], 16);
    assert_true(b->flags & VF_TENSOR_PACKED);
    assert_int_equal(b->n_params, 32ull * 5760 * 2880);
    assert_int_equal(b->role, VF_ROLE_EXPERT);
    const vf_tensor *s = find(m, "model.layers.0.mlp.experts.down_proj_scales");
    assert_int_equal(s->n_params, 0);
    assert_int_equal(s->shape[2], 90);
    assert_int_equal(find(m, "model.layers.0.self_attn.q_proj.weight")->dtype, VF_DTYPE_BF16);
    assert_int_equal(find(m, "model.layers.0.self_attn.sinks")->shape[0], 64);
    assert_int_equal(find(m, "model.layers.0.mlp.router.weight")->role, VF_ROLE_ROUTER);
    /* model card: the checkpoint is 12.8 GiB */
    vf_model_totals t = totals(m);
    assert_true(fabs((double)t.bytes / 1073741824.0 - 12.8) < 0.05);
    const vf_hparams *hp = vf_model_hparams(m);
    assert_non_null(hp->layer_is_swa);
    assert_int_equal(hp->layer_is_swa[0], 1);
    assert_int_equal(hp->layer_is_swa[1], 0);
    assert_int_equal(hp->sliding_window, 128);
    vf_model_free(m);
}

/* DeepSeek-V3: MLA shapes, fp8 blocks, MTP layer 61 counted apart. */
static void test_deepseek_v3(void **state)
{
    (void)state;
    vf_model *m = open_ok(REF "models/deepseek-ai__DeepSeek-V3.json");
    const vf_hparams *hp = vf_model_hparams(m);
    assert_int_equal(hp->head_dim, 192);
    assert_int_equal(hp->v_head_dim, 128);
    assert_int_equal(hp->n_mtp_layers, 1);
    vf_model_totals t = totals(m);
    uint64_t main_params = t.params - t.mtp_params;
    /* model card: 671B main model + 14B MTP module = 685B on the Hub (whose
     * count includes the fp8 scale tensors) */
    assert_true(fabs(billions(main_params) - 671.0) < 0.5);
    assert_true(fabs(billions(t.elements) - 685.0) < 0.5);
    /* README_WEIGHTS: the MTP module has 11.5B unique parameters besides its
     * copies of the 0.9B embedding and 0.9B head */
    assert_true(fabs(billions(t.mtp_params - 2ull * 129280 * 7168) - 11.5) < 0.15);
    /* llama.cpp reports 672.050 B for the same architecture without the MTP
     * layer: it stores kv_b_proj and also its k_b / v_b split (61 x 128 x 512 x 256) */
    assert_true(fabs(billions(main_params + 61ull * 128 * 512 * 256) - 672.050) < 0.0005);
    /* the checkpoint's 163 safetensors files hold 688,586,727,753 bytes, their
     * JSON headers (some tens of KB each, < 100 KB) included */
    assert_true(t.bytes < 688586727753ull && t.bytes > 688586727753ull - 163ull * 100000);
    /* 37B activated per token (DeepSeek-V3 report) */
    assert_true(t.active_params > 36500000000ull && t.active_params < 37600000000ull);

    const vf_tensor *q = find(m, "model.layers.0.self_attn.q_b_proj.weight");
    assert_int_equal(q->dtype, VF_DTYPE_F8_E4M3);
    assert_int_equal(q->shape[0], 128 * 192);
    assert_int_equal(q->shape[1], 1536);
    const vf_tensor *s = find(m, "model.layers.0.self_attn.q_b_proj.weight_scale_inv");
    assert_int_equal(s->dtype, VF_DTYPE_F32);
    assert_int_equal(s->shape[0], 192);
    assert_int_equal(s->shape[1], 12);
    assert_int_equal(s->role, VF_ROLE_QUANT_AUX);
    assert_int_equal(find(m, "model.layers.0.self_attn.kv_a_proj_with_mqa.weight")->shape[0], 576);
    assert_non_null(find(m, "model.layers.2.mlp.down_proj.weight")); /* first_k_dense_replace = 3 */
    assert_null(find(m, "model.layers.2.mlp.gate.weight"));
    const vf_tensor *g = find(m, "model.layers.3.mlp.gate.weight");
    assert_int_equal(g->dtype, VF_DTYPE_BF16);
    assert_int_equal(g->role, VF_ROLE_ROUTER);
    assert_int_equal(find(m, "model.layers.3.mlp.gate.e_score_correction_bias")->dtype, VF_DTYPE_F32);
    assert_int_equal(find(m, "model.layers.3.mlp.experts.255.up_proj.weight")->role, VF_ROLE_EXPERT);
    assert_int_equal(find(m, "model.layers.3.mlp.shared_experts.up_proj.weight")->role, VF_ROLE_SHARED_EXPERT);
    assert_int_equal(find(m, "lm_head.weight")->dtype, VF_DTYPE_BF16);
    /* the MTP layer as the checkpoint stores it */
    const char *mtp[] = {"model.layers.61.embed_tokens.weight", "model.layers.61.enorm.weight",
                         "model.layers.61.hnorm.weight", "model.layers.61.eh_proj.weight",
                         "model.layers.61.self_attn.kv_b_proj.weight", "model.layers.61.mlp.experts.0.gate_proj.weight",
                         "model.layers.61.shared_head.norm.weight", "model.layers.61.shared_head.head.weight"};
    for (size_t i = 0; i < sizeof mtp / sizeof mtp[0]; i++) {
        const vf_tensor *x = find(m, mtp[i]);
        if (!x)
            fail_msg("missing %s", mtp[i]);
        assert_true(x->flags & VF_TENSOR_MTP);
    }
    assert_int_equal(find(m, "model.layers.61.eh_proj.weight")->shape[1], 2 * 7168);
    assert_int_equal(find(m, "model.layers.61.eh_proj.weight")->dtype, VF_DTYPE_BF16);
    assert_int_equal(find(m, "model.layers.60.mlp.gate.weight")->flags & VF_TENSOR_MTP, 0);
    vf_model_free(m);
}

/* DeepSeek-V2-Lite style: no q LoRA (q_lora_rank null), no router bias. */
static void test_deepseek_v2_lite(void **state)
{
    (void)state;
    const char *cfg = "{\"model_type\":\"deepseek_v2\",\"hidden_size\":2048,\"intermediate_size\":10944,"
                      "\"moe_intermediate_size\":1408,\"num_hidden_layers\":27,\"num_attention_heads\":16,"
                      "\"num_key_value_heads\":16,\"n_routed_experts\":64,\"n_shared_experts\":2,"
                      "\"num_experts_per_tok\":6,\"first_k_dense_replace\":1,\"moe_layer_freq\":1,"
                      "\"q_lora_rank\":null,\"kv_lora_rank\":512,\"qk_nope_head_dim\":128,\"qk_rope_head_dim\":64,"
                      "\"v_head_dim\":128,\"vocab_size\":102400,\"topk_method\":\"greedy\","
                      "\"tie_word_embeddings\":false,\"torch_dtype\":\"bfloat16\"}";
    vf_model *m = NULL;
    vf_error e = {0};
    char *dir;
    assert_int_equal(open_text(cfg, &m, &e, &dir), VF_OK);
    assert_int_equal(find(m, "model.layers.0.self_attn.q_proj.weight")->shape[0], 16 * 192);
    assert_null(find(m, "model.layers.0.self_attn.q_a_proj.weight"));
    assert_null(find(m, "model.layers.1.mlp.gate.e_score_correction_bias"));
    assert_int_equal(find(m, "model.layers.1.mlp.shared_experts.gate_proj.weight")->shape[0], 2 * 1408);
    /* DeepSeek-V2-Lite model card: 15.7B total */
    vf_model_totals t = totals(m);
    assert_true(fabs(billions(t.params) - 15.7) < 0.05);
    assert_true(t.active_params < t.params / 5);
    vf_model_free(m);
    done_dir(dir);
}

/* Gemma 4 style MoE: dense MLP beside 128 experts, k=v full layers with a
 * larger head, tied head, text model inside model.language_model. */
static void test_gemma4(void **state)
{
    (void)state;
    vf_model *m = open_ok(REF "models/google__gemma-4-26B-A4B.json");
    const vf_hparams *hp = vf_model_hparams(m);
    assert_int_equal(hp->n_experts, 128);
    assert_int_equal(hp->n_experts_active, 8);
    assert_int_equal(hp->layer_head_dim[0], 256);
    assert_int_equal(hp->layer_head_dim[5], 512);
    assert_int_equal(hp->layer_n_kv_heads[5], 2);
    assert_int_equal(hp->layer_is_swa[5], 0);
    assert_int_equal(find(m, "model.language_model.layers.5.self_attn.k_proj.weight")->shape[0], 2 * 512);
    assert_null(find(m, "model.language_model.layers.5.self_attn.v_proj.weight"));
    assert_non_null(find(m, "model.language_model.layers.4.self_attn.v_proj.weight"));
    const vf_tensor *x = find(m, "model.language_model.layers.0.experts.gate_up_proj");
    assert_int_equal(x->shape[0], 128);
    assert_int_equal(x->shape[1], 2 * 704);
    assert_int_equal(x->role, VF_ROLE_EXPERT);
    assert_non_null(find(m, "model.language_model.layers.0.mlp.down_proj.weight"));
    assert_null(find(m, "lm_head.weight"));
    /* model card: 25.2B total (text), 3.8B active; the vision encoder apart */
    vf_model_totals t = totals(m);
    uint64_t vis = prefix_params(m, "model.vision_tower.") + prefix_params(m, "model.embed_vision.");
    assert_true(fabs(billions(t.params - vis) - 25.2) < 0.05);
    assert_true(fabs(billions(t.active_params - vis) - 3.8) < 0.05);
    assert_int_equal(t.buffer_elements, 30); /* layer_scalar per block */
    x = find(m, "model.vision_tower.encoder.layers.26.mlp.down_proj.linear.weight");
    assert_non_null(x);
    assert_true(x->flags & VF_TENSOR_VISION);
    assert_non_null(find(m, "model.embed_vision.embedding_projection.weight"));
    assert_null(find(m, "model.audio_tower.output_proj.weight")); /* no audio_config */
    vf_model_free(m);
}

/* Variants: tied heads, biases, q/k norms, fused projections, falcon formats. */
static void test_variants(void **state)
{
    (void)state;
    vf_model *m = open_ok(REF "models/meta-llama__Llama-3.2-1B.json");
    assert_null(find(m, "lm_head.weight"));
    assert_int_equal(find(m, "model.layers.0.self_attn.k_proj.weight")->shape[0], 8 * 64);
    vf_model_free(m);

    m = open_ok(REF "models/Qwen__Qwen2.5-7B-Instruct.json");
    assert_non_null(find(m, "model.layers.0.self_attn.q_proj.bias"));
    assert_null(find(m, "model.layers.0.self_attn.o_proj.bias"));
    assert_non_null(find(m, "lm_head.weight"));
    vf_model_free(m);

    m = open_ok(REF "models/Qwen__Qwen3-8B.json");
    assert_int_equal(find(m, "model.layers.0.self_attn.k_norm.weight")->shape[0], 128);
    assert_null(find(m, "model.layers.0.self_attn.q_proj.bias"));
    vf_model_free(m);

    m = open_ok(REF "models/microsoft__Phi-3-mini-4k-instruct.json");
    assert_int_equal(find(m, "model.layers.0.self_attn.qkv_proj.weight")->shape[0], 3 * 3072);
    assert_int_equal(find(m, "model.layers.0.mlp.gate_up_proj.weight")->shape[0], 2 * 8192);
    vf_model_free(m);

    m = open_ok(REF "models/allenai__OLMo-2-1124-7B.json");
    assert_null(find(m, "model.layers.0.input_layernorm.weight"));
    assert_int_equal(find(m, "model.layers.0.self_attn.q_norm.weight")->shape[0], 4096);
    assert_non_null(find(m, "model.layers.0.post_feedforward_layernorm.weight"));
    assert_int_equal(find(m, "lm_head.weight")->dtype, VF_DTYPE_F32);
    vf_model_free(m);

    m = open_ok(REF "models/google__gemma-2-9b.json");
    const vf_hparams *hp = vf_model_hparams(m);
    assert_int_equal(hp->layer_is_swa[0], 1);
    assert_int_equal(hp->layer_is_swa[1], 0);
    assert_int_equal(hp->sliding_window, 4096);
    assert_non_null(find(m, "model.layers.0.pre_feedforward_layernorm.weight"));
    vf_model_free(m);

    m = open_ok(CFG "google__gemma-3-1b-it.json"); /* 5 sliding : 1 global */
    hp = vf_model_hparams(m);
    assert_int_equal(hp->layer_is_swa[4], 1);
    assert_int_equal(hp->layer_is_swa[5], 0);
    assert_int_equal(hp->sliding_window, 512);
    assert_int_equal(find(m, "model.layers.0.self_attn.k_proj.weight")->shape[0], 256); /* MQA, head_dim 256 */
    vf_model_free(m);

    m = open_ok(REF "models/mistralai__Mistral-7B-Instruct-v0.1.json");
    assert_null(vf_model_hparams(m)->layer_is_swa); /* every layer slides */
    assert_int_equal(vf_model_hparams(m)->sliding_window, 4096);
    vf_model_free(m);

    m = open_ok(REF "models/Qwen__Qwen2.5-14B-Instruct.json");
    assert_int_equal(vf_model_hparams(m)->sliding_window, 0); /* use_sliding_window false */
    vf_model_free(m);

    /* Falcon-7B in the original RefinedWebModel format: multi-query fused QKV */
    m = open_ok(REF "models/tiiuae__falcon-7b.json");
    assert_int_equal(vf_model_hparams(m)->n_kv_heads, 1);
    assert_int_equal(find(m, "transformer.h.0.self_attention.query_key_value.weight")->shape[0], (71 + 2) * 64);
    assert_null(find(m, "transformer.h.0.post_attention_layernorm.weight")); /* parallel attention */
    assert_null(find(m, "lm_head.weight"));
    uint64_t rw = totals(m).params;
    vf_model_free(m);
    /* the same model in the in-library falcon format counts the same */
    char *dir;
    vf_error e = {0};
    const char *nf = "{\"model_type\":\"falcon\",\"architectures\":[\"FalconForCausalLM\"],\"hidden_size\":4544,"
                     "\"num_attention_heads\":71,\"num_hidden_layers\":32,\"multi_query\":true,"
                     "\"new_decoder_architecture\":false,\"parallel_attn\":true,\"bias\":false,\"alibi\":false,"
                     "\"vocab_size\":65024,\"torch_dtype\":\"bfloat16\"}";
    assert_int_equal(open_text(nf, &m, &e, &dir), VF_OK);
    assert_int_equal(totals(m).params, rw);
    vf_model_free(m);
    done_dir(dir);
    /* falcon-40b (RW format, new decoder architecture, 8 KV groups) */
    const char *f40 = "{\"model_type\":\"RefinedWeb\",\"hidden_size\":8192,\"n_head\":128,\"n_head_kv\":8,"
                      "\"n_layer\":60,\"parallel_attn\":true,\"bias\":false,\"alibi\":false,\"vocab_size\":65024,"
                      "\"torch_dtype\":\"bfloat16\"}";
    assert_int_equal(open_text(f40, &m, &e, &dir), VF_OK);
    assert_int_equal(find(m, "transformer.h.0.self_attention.query_key_value.weight")->shape[0], (128 + 16) * 64);
    assert_non_null(find(m, "transformer.h.0.ln_mlp.weight"));
    vf_model_free(m);
    done_dir(dir);

    /* StarCoder-style gpt_bigcode: one shared K/V head */
    const char *bc = "{\"model_type\":\"gpt_bigcode\",\"n_embd\":6144,\"n_head\":48,\"n_layer\":40,\"n_inner\":24576,"
                     "\"n_positions\":8192,\"multi_query\":true,\"vocab_size\":49152,\"torch_dtype\":\"float32\"}";
    assert_int_equal(open_text(bc, &m, &e, &dir), VF_OK);
    assert_int_equal(find(m, "transformer.h.0.attn.c_attn.weight")->shape[0], 6144 + 2 * 128);
    assert_int_equal(find(m, "transformer.h.0.attn.c_attn.bias")->flags & VF_TENSOR_NOT_PARAM, 0);
    assert_true(fabs(billions(totals(m).params) - 15.5) < 0.05); /* StarCoder: 15.5B */
    vf_model_free(m);
    done_dir(dir);
}

/* A small llama whose linear layers a quantization_config rewrites. */
static vf_model *open_quant(const char *qc, char **dir)
{
    char cfg[2048];
    snprintf(cfg, sizeof cfg,
             "{\"model_type\":\"llama\",\"hidden_size\":512,\"intermediate_size\":1536,\"num_hidden_layers\":2,"
             "\"num_attention_heads\":8,\"num_key_value_heads\":2,\"vocab_size\":1000,\"torch_dtype\":\"float16\","
             "\"quantization_config\":%s}",
             qc);
    vf_model *m = NULL;
    vf_error e = {0};
    if (open_text(cfg, &m, &e, dir) != VF_OK)
        fail_msg("%s", e.msg);
    return m;
}

/* Logical weights of that llama, unquantized. */
static const uint64_t small_llama_params =
    2ull * 1000 * 512 + 512 + 2ull * (2 * 512 + 512 * 512 * 2 + 2 * 128 * 512 + 3ull * 512 * 1536);

static void check_shape(const vf_model *m, const char *name, vf_dtype dt, uint64_t d0, uint64_t d1)
{
    const vf_tensor *t = find(m, name);
    if (!t)
        fail_msg("missing %s", name);
    if (t->dtype != dt || t->shape[0] != d0 || (d1 && t->shape[1] != d1))
        fail_msg("%s: %s [%llu, %llu]", name, vf_dtype_get(t->dtype)->name, (unsigned long long)t->shape[0],
                 (unsigned long long)t->shape[1]);
}

static void test_quant_layouts(void **state)
{
    (void)state;
    char *dir;
    const char *q = "model.layers.0.self_attn.q_proj"; /* [512, 512] */
    char n[128];

    vf_model *m = open_quant("{\"quant_method\":\"bitsandbytes\",\"load_in_4bit\":true,\"bnb_4bit_quant_type\":"
                             "\"nf4\",\"bnb_4bit_use_double_quant\":true,\"bnb_4bit_compute_dtype\":\"bfloat16\"}",
                             &dir);
    snprintf(n, sizeof n, "%s.weight", q);
    check_shape(m, n, VF_DTYPE_U8, 512 * 512 / 2, 1);
    snprintf(n, sizeof n, "%s.weight.absmax", q);
    check_shape(m, n, VF_DTYPE_U8, 512 * 512 / 64, 0);
    snprintf(n, sizeof n, "%s.weight.nested_absmax", q);
    check_shape(m, n, VF_DTYPE_F32, 512 * 512 / 64 / 256, 0);
    snprintf(n, sizeof n, "%s.weight.quant_map", q);
    check_shape(m, n, VF_DTYPE_F32, 16, 0);
    snprintf(n, sizeof n, "%s.weight.nested_quant_map", q);
    check_shape(m, n, VF_DTYPE_F32, 256, 0);
    snprintf(n, sizeof n, "%s.weight.quant_state.bitsandbytes__nf4", q);
    assert_non_null(find(m, n));
    check_shape(m, "lm_head.weight", VF_DTYPE_F16, 1000, 512); /* kept in high precision */
    check_shape(m, "model.embed_tokens.weight", VF_DTYPE_F16, 1000, 512);
    assert_int_equal(totals(m).params, small_llama_params);
    assert_string_equal(vf_model_hparams(m)->quant_method, "bitsandbytes");
    vf_model_free(m);
    done_dir(dir);

    m = open_quant("{\"quant_method\":\"bitsandbytes\",\"load_in_8bit\":true,"
                   "\"llm_int8_skip_modules\":[\"mlp.down_proj\"]}",
                   &dir);
    snprintf(n, sizeof n, "%s.weight", q);
    check_shape(m, n, VF_DTYPE_I8, 512, 512);
    snprintf(n, sizeof n, "%s.SCB", q);
    check_shape(m, n, VF_DTYPE_F32, 512, 0);
    check_shape(m, "model.layers.1.mlp.down_proj.weight", VF_DTYPE_F16, 512, 1536);
    assert_int_equal(totals(m).params, small_llama_params);
    vf_model_free(m);
    done_dir(dir);

    m = open_quant("{\"quant_method\":\"gptq\",\"bits\":4,\"group_size\":128,\"desc_act\":false,\"sym\":true}", &dir);
    snprintf(n, sizeof n, "%s.qweight", q);
    check_shape(m, n, VF_DTYPE_I32, 512 * 4 / 32, 512);
    snprintf(n, sizeof n, "%s.qzeros", q);
    check_shape(m, n, VF_DTYPE_I32, 4, 512 * 4 / 32);
    snprintf(n, sizeof n, "%s.scales", q);
    check_shape(m, n, VF_DTYPE_F16, 4, 512);
    snprintf(n, sizeof n, "%s.g_idx", q);
    check_shape(m, n, VF_DTYPE_I32, 512, 0);
    check_shape(m, "model.layers.0.mlp.down_proj.qweight", VF_DTYPE_I32, 1536 / 8, 512);
    assert_true(find(m, "model.layers.0.mlp.down_proj.qweight")->flags & VF_TENSOR_PACKED);
    assert_int_equal(find(m, "model.layers.0.mlp.down_proj.scales")->role, VF_ROLE_QUANT_AUX);
    assert_int_equal(totals(m).params, small_llama_params);
    assert_int_equal(vf_model_hparams(m)->quant_bits, 4);
    assert_int_equal(vf_model_hparams(m)->quant_group_size, 128);
    vf_model_free(m);
    done_dir(dir);

    m = open_quant("{\"quant_method\":\"awq\",\"bits\":4,\"group_size\":128,\"version\":\"gemm\",\"zero_point\":true}",
                   &dir);
    check_shape(m, "model.layers.0.self_attn.k_proj.qweight", VF_DTYPE_I32, 512, 128 / 8);
    check_shape(m, "model.layers.0.self_attn.k_proj.qzeros", VF_DTYPE_I32, 4, 128 / 8);
    check_shape(m, "model.layers.0.self_attn.k_proj.scales", VF_DTYPE_F16, 4, 128);
    assert_int_equal(totals(m).params, small_llama_params);
    vf_model_free(m);
    done_dir(dir);

    m = open_quant("{\"quant_method\":\"fp8\",\"activation_scheme\":\"dynamic\",\"weight_block_size\":[128,128]}", &dir);
    check_shape(m, "model.layers.0.mlp.up_proj.weight", VF_DTYPE_F8_E4M3, 1536, 512);
    check_shape(m, "model.layers.0.mlp.up_proj.weight_scale_inv", VF_DTYPE_F32, 12, 4);
    assert_int_equal(totals(m).params, small_llama_params);
    vf_model_free(m);
    done_dir(dir);

    /* modules_to_not_convert by transformers' rule, any(name in module):
     * names of several lengths matched anywhere in the module, an empty name
     * (matches nothing), a glob, a name longer than every module */
    m = open_quant("{\"quant_method\":\"fp8\",\"weight_block_size\":[128,128],\"modules_to_not_convert\":"
                   "[\"\",\"1.mlp.up\",\"self_attn.q_proj\",\"model.layers.0.mlp.down*\","
                   "\"model.layers.0.self_attn.k_proj.weight.and.more.than.any.name\"]}",
                   &dir);
    check_shape(m, "model.layers.1.mlp.up_proj.weight", VF_DTYPE_F16, 1536, 512);
    check_shape(m, "model.layers.0.mlp.up_proj.weight", VF_DTYPE_F8_E4M3, 1536, 512);
    check_shape(m, "model.layers.0.self_attn.q_proj.weight", VF_DTYPE_F16, 512, 512);
    check_shape(m, "model.layers.1.self_attn.q_proj.weight", VF_DTYPE_F16, 512, 512);
    check_shape(m, "model.layers.0.mlp.down_proj.weight", VF_DTYPE_F16, 512, 1536);
    check_shape(m, "model.layers.1.mlp.down_proj.weight", VF_DTYPE_F8_E4M3, 512, 1536);
    check_shape(m, "model.layers.0.self_attn.k_proj.weight", VF_DTYPE_F8_E4M3, 128, 512);
    vf_model_free(m);
    done_dir(dir);

    /* more distinct name lengths than the hashed index takes: name by name */
    m = open_quant("{\"quant_method\":\"fp8\",\"weight_block_size\":[128,128],"
                   "\"modules_to_not_convert\":[\"z\",\"zz\",\"zzz\",\"zzzz\",\"zzzzz\",\"zzzzzz\",\"zzzzzzz\",\"zzzzzzzz\","
                   "\"zzzzzzzzz\",\"zzzzzzzzzz\",\"zzzzzzzzzzz\",\"zzzzzzzzzzzz\",\"zzzzzzzzzzzzz\",\"zzzzzzzzzzzzzz\",\"zzzzzzzzzzzzzzz\",\"zzzzzzzzzzzzzzzz\",\"zzzzzzzzzzzzzzzzz\","
                   "\"layers.1.mlp.gate_proj\"]}",
                   &dir);
    check_shape(m, "model.layers.1.mlp.gate_proj.weight", VF_DTYPE_F16, 1536, 512);
    check_shape(m, "model.layers.0.mlp.gate_proj.weight", VF_DTYPE_F8_E4M3, 1536, 512);
    vf_model_free(m);
    done_dir(dir);

    /* compressed-tensors W4A16 (pack-quantized, group 128, symmetric) */
    m = open_quant("{\"quant_method\":\"compressed-tensors\",\"format\":\"pack-quantized\",\"ignore\":[\"lm_head\"],"
                   "\"config_groups\":{\"group_0\":{\"targets\":[\"Linear\"],\"weights\":{\"num_bits\":4,\"type\":"
                   "\"int\",\"symmetric\":true,\"strategy\":\"group\",\"group_size\":128}}}}",
                   &dir);
    check_shape(m, "model.layers.0.mlp.gate_proj.weight_packed", VF_DTYPE_I32, 1536, 512 / 8);
    check_shape(m, "model.layers.0.mlp.gate_proj.weight_scale", VF_DTYPE_F16, 1536, 4);
    check_shape(m, "model.layers.0.mlp.gate_proj.weight_shape", VF_DTYPE_I64, 2, 0);
    assert_null(find(m, "model.layers.0.mlp.gate_proj.weight_zero_point"));
    assert_int_equal(totals(m).params, small_llama_params);
    vf_model_free(m);
    done_dir(dir);

    /* compressed-tensors FP8 dynamic (channel scales), regex ignore */
    m = open_quant("{\"quant_method\":\"compressed-tensors\",\"format\":\"float-quantized\",\"ignore\":[\"re:.*down_proj\","
                   "\"lm_head\"],\"config_groups\":{\"group_0\":{\"targets\":[\"Linear\"],\"weights\":{\"num_bits\":8,"
                   "\"type\":\"float\",\"symmetric\":true,\"strategy\":\"channel\"},\"input_activations\":"
                   "{\"num_bits\":8,\"type\":\"float\",\"dynamic\":true,\"strategy\":\"token\"}}}}",
                   &dir);
    check_shape(m, "model.layers.0.mlp.gate_proj.weight", VF_DTYPE_F8_E4M3, 1536, 512);
    check_shape(m, "model.layers.0.mlp.gate_proj.weight_scale", VF_DTYPE_F16, 1536, 1);
    check_shape(m, "model.layers.0.mlp.down_proj.weight", VF_DTYPE_F16, 512, 1536);
    assert_null(find(m, "model.layers.0.mlp.gate_proj.input_scale"));
    assert_int_equal(totals(m).params, small_llama_params);
    vf_model_free(m);
    done_dir(dir);

    /* an unknown method is refused by name */
    vf_error e = {0};
    vf_model *x = NULL;
    assert_int_equal(open_text("{\"model_type\":\"llama\",\"hidden_size\":64,\"intermediate_size\":128,"
                               "\"num_hidden_layers\":1,\"num_attention_heads\":4,\"vocab_size\":10,"
                               "\"quantization_config\":{\"quant_method\":\"hqq\"}}",
                               &x, &e, &dir),
                     VF_EUNSUPPORTED);
    assert_non_null(strstr(e.msg, "hqq"));
    done_dir(dir);
}

/* Unknown families: an error naming it, or a labelled approximation. */
static void test_unknown_family(void **state)
{
    (void)state;
    vf_model *m = NULL;
    vf_error e = {0};
    char *dir;
    assert_int_equal(open_text("{\"model_type\":\"rwkv7\",\"d_model\":768,\"n_layer\":24}", &m, &e, &dir),
                     VF_EUNSUPPORTED);
    assert_null(m);
    assert_non_null(strstr(e.msg, "'rwkv7'"));
    assert_non_null(strstr(e.msg, "nemotron_h"));
    assert_non_null(strstr(e.msg, "llama"));
    assert_non_null(strstr(e.msg, "deepseek_v3"));
    assert_int_equal(vf_status_exit_code(e.status), 3);
    done_dir(dir);

    assert_int_equal(open_text("{\"model_type\":\"newthing\",\"hidden_size\":512,\"num_hidden_layers\":2,"
                               "\"num_attention_heads\":8,\"intermediate_size\":1536,\"vocab_size\":1000,"
                               "\"num_key_value_heads\":2,\"torch_dtype\":\"float16\",\"tie_word_embeddings\":false}",
                               &m, &e, &dir),
                     VF_OK);
    assert_true(vf_model_warning_count(m) >= 1);
    assert_non_null(strstr(vf_model_warning(m, 0), "approximate"));
    assert_non_null(vf_model_approximate(m));
    assert_non_null(strstr(vf_model_approximate(m), "'newthing'"));
    assert_int_equal(totals(m).params, small_llama_params);
    vf_model_free(m);
    done_dir(dir);
}

/* Malformed configs: one error each, no crash, no huge allocation. */
static void test_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        vf_status st;
    } cases[] = {
        {"[1,2]", VF_EFORMAT},
        {"{\"model_type\":\"llama\"", VF_EFORMAT},
        {"{\"model_type\":\"llama\",\"hidden_size\":-1,\"num_hidden_layers\":2,\"num_attention_heads\":8,"
         "\"vocab_size\":10}",
         VF_EFORMAT},
        {"{\"model_type\":\"llama\",\"hidden_size\":\"big\",\"num_hidden_layers\":2,\"num_attention_heads\":8,"
         "\"vocab_size\":10}",
         VF_EFORMAT},
        {"{\"model_type\":\"llama\",\"hidden_size\":64,\"num_hidden_layers\":1000000000,\"num_attention_heads\":8,"
         "\"vocab_size\":10}",
         VF_ERANGE},
        {"{\"model_type\":\"mixtral\",\"hidden_size\":64,\"intermediate_size\":64,\"num_hidden_layers\":4000,"
         "\"num_attention_heads\":8,\"vocab_size\":10,\"num_local_experts\":16000,\"num_experts_per_tok\":2}",
         VF_ERANGE},
        {"{\"model_type\":\"llama\",\"hidden_size\":64,\"num_hidden_layers\":2,\"num_attention_heads\":8,"
         "\"num_key_value_heads\":16,\"vocab_size\":10}",
         VF_EFORMAT},
        {"{\"model_type\":\"llama\",\"hidden_size\":64,\"num_hidden_layers\":0,\"num_attention_heads\":8,"
         "\"vocab_size\":10}",
         VF_EFORMAT},
        {"{\"model_type\":\"gpt_oss\",\"hidden_size\":64,\"intermediate_size\":64,\"num_hidden_layers\":2,"
         "\"num_attention_heads\":8,\"vocab_size\":10,\"num_local_experts\":4,\"num_experts_per_tok\":8}",
         VF_EFORMAT},
        {"{\"model_type\":\"gemma2\",\"hidden_size\":64,\"intermediate_size\":64,\"num_hidden_layers\":3,"
         "\"num_attention_heads\":8,\"vocab_size\":10,\"layer_types\":[\"full_attention\"]}",
         VF_EFORMAT},
        {"{\"model_type\":\"llama\",\"hidden_size\":64,\"intermediate_size\":0,\"num_hidden_layers\":2,"
         "\"num_attention_heads\":8,\"vocab_size\":10}",
         VF_ERANGE},
        {"{\"model_type\":\"deepseek_v3\",\"hidden_size\":64,\"intermediate_size\":64,\"num_hidden_layers\":2,"
         "\"num_attention_heads\":8,\"vocab_size\":10}",
         VF_EFORMAT},
        /* Zamba2: a layers_block_type that does not cover the layers */
        {"{\"model_type\":\"zamba2\",\"hidden_size\":64,\"num_hidden_layers\":3,\"num_attention_heads\":4,"
         "\"vocab_size\":10,\"layers_block_type\":[\"mamba\",\"hybrid\"]}",
         VF_EFORMAT},
        /* Falcon-H1: mamba_d_head x mamba_n_heads != mamba_d_ssm (FalconH1Config refuses it too) */
        {"{\"model_type\":\"falcon_h1\",\"hidden_size\":64,\"num_hidden_layers\":2,\"num_attention_heads\":4,"
         "\"vocab_size\":10,\"intermediate_size\":64,\"mamba_d_ssm\":128,\"mamba_n_heads\":4,\"mamba_d_head\":16}",
         VF_EFORMAT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vf_model *m = NULL;
        vf_error e = {0};
        char *dir;
        vf_status st = open_text(cases[i].text, &m, &e, &dir);
        if (st != cases[i].st)
            fail_msg("case %zu: status %d (%s), want %d", i, st, e.msg, cases[i].st);
        assert_null(m);
        assert_non_null(strstr(e.msg, "config.json: "));
        done_dir(dir);
    }
}

/* Zamba2 with two shared blocks and attention adapters, by hand: h 64, 4
 * layers (hybrid at 1 and 3), 4 heads (attention dim 2h = 128, head 32), ff
 * 128, vocab 100 tied, 4 Mamba heads over I = 128, state 16, 1 group, K 4,
 * rank 8. Mamba layer: in_proj (128 + 160 + 4) x 64 = 18,688, conv 160 x 4
 * + 160 = 800, dt_bias/A_log/D 12, norm 128, out_proj 8,192, input norm 64
 * = 27,884 (x 4 = 111,536); embedding 6,400 + final norm 64; 2 linears x
 * 4,096; each block q,k,v 3 x 128 x 128 + o 64 x 128 + norms 192 + gate_up
 * 256 x 64 + down 64 x 128 = 82,112 (x 2); per application adapters MLP
 * 8 x 64 + 256 x 8 and q,k,v 3 x 2 x 128 x 8 = 8,704 (x 2). Total 307,824. */
static void test_zamba2_adapters(void **state)
{
    (void)state;
    vf_model *m = NULL;
    vf_error e = {0};
    char *dir;
    assert_int_equal(open_text("{\"model_type\":\"zamba2\",\"hidden_size\":64,\"num_hidden_layers\":4,"
                               "\"num_attention_heads\":4,\"intermediate_size\":128,\"vocab_size\":100,"
                               "\"layers_block_type\":[\"mamba\",\"hybrid\",\"mamba\",\"hybrid\"],"
                               "\"n_mamba_heads\":4,\"mamba_d_state\":16,\"num_mem_blocks\":2,\"adapter_rank\":8,"
                               "\"use_shared_attention_adapter\":true,\"torch_dtype\":\"bfloat16\"}",
                               &m, &e, &dir),
                     VF_OK);
    vf_model_totals t;
    vf_model_totals_get(m, &t);
    assert_int_equal(t.params, 307824);
    vf_model_free(m);
    done_dir(dir);
}

/* The class defaults where a config says nothing, as transformers fills them.
 * FalconH1Config(): h 4096, 32 layers, 32 heads of 128, 8 KV heads, ff 14336,
 * vocab 128000 untied; mixer d_ssm 1024, 128 heads of 8 ("auto"), state 256,
 * 1 group, K 4, conv bias, no gated norm. Per layer: in_proj (1024 + 1536 +
 * 128) x 4096 = 11,010,048, conv 1536 x 4 + 1536 = 7,680, 3 x 128, out_proj
 * 4,194,304; attention 2 x 4096^2 + 2 x 1024 x 4096 = 41,943,040; MLP 3 x
 * 14336 x 4096 = 176,160,768; 2 norms 8,192: 233,324,416 x 32 + embedding
 * and head 2 x 524,288,000 + final norm 4,096 = 8,514,961,408.
 * Zamba2Config(): h 2560, 54 layers (9 hybrid), 32 heads, ff 4h, vocab 32000
 * tied, 8 Mamba heads of 640, state 64, 1 block, rank 128, no attention
 * adapters. Mamba layer: in_proj (5120 + 5248 + 8) x 2560 = 26,562,560, conv
 * 5248 x 4 + 5248 = 26,240, 24, norm 5,120, out_proj 13,107,200, input norm
 * 2,560 = 39,703,704 x 54; embedding 81,920,000 + final norm 2,560; 9
 * linears x 6,553,600; one block 170,401,280; 9 adapters x 2,949,120:
 * 2,481,848,336. */
static void test_hybrid_class_defaults(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        uint64_t params;
    } cases[] = {
        {"{\"model_type\":\"falcon_h1\",\"torch_dtype\":\"bfloat16\"}", 8514961408},
        {"{\"model_type\":\"zamba2\",\"torch_dtype\":\"bfloat16\"}", 2481848336},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vf_model *m = NULL;
        vf_error e = {0};
        char *dir;
        if (open_text(cases[i].text, &m, &e, &dir) != VF_OK)
            fail_msg("case %zu: %s", i, e.msg);
        vf_model_totals t;
        vf_model_totals_get(m, &t);
        if (t.params != cases[i].params)
            fail_msg("case %zu: %llu, by hand %llu", i, (unsigned long long)t.params, (unsigned long long)cases[i].params);
        vf_model_free(m);
        done_dir(dir);
    }
}

/* A directory with weights and config.json: the files' counts stand, and a
 * config that describes something else is reported. */
static void test_sidecar_warning(void **state)
{
    (void)state;
    const char *cfg = "{\"model_type\":\"llama\",\"hidden_size\":64,\"intermediate_size\":128,\"num_hidden_layers\":1,"
                      "\"num_attention_heads\":4,\"vocab_size\":100,\"tie_word_embeddings\":true,"
                      "\"torch_dtype\":\"bfloat16\"}";
    tu_st_tensor ts[] = {
        {"model.embed_tokens.weight", "BF16", 2, {100, 64}},
        {"model.layers.0.input_layernorm.weight", "BF16", 1, {64}},
        {"model.layers.0.self_attn.q_proj.weight", "BF16", 2, {64, 64}},
        {"model.layers.0.self_attn.k_proj.weight", "BF16", 2, {64, 64}},
        {"model.layers.0.self_attn.v_proj.weight", "BF16", 2, {64, 64}},
        {"model.layers.0.self_attn.o_proj.weight", "BF16", 2, {64, 64}},
        {"model.layers.0.post_attention_layernorm.weight", "BF16", 1, {64}},
        {"model.layers.0.mlp.gate_proj.weight", "BF16", 2, {128, 64}},
        {"model.layers.0.mlp.up_proj.weight", "BF16", 2, {128, 64}},
        {"model.layers.0.mlp.down_proj.weight", "BF16", 2, {64, 128}},
        {"model.norm.weight", "BF16", 1, {64}},
        {"model.layers.0.self_attn.rotary_emb.inv_freq", "F32", 1, {8}},
    };
    /* 0: as the config says; 1: the down projection missing; 2: a stored
     * copy of the tied head (as Qwen3-0.6B's file has): not a disagreement */
    for (int variant = 0; variant < 3; variant++) {
        char *dir = tu_tmpdir(), *cp = tu_path(dir, "config.json"), *wp = tu_path(dir, "model.safetensors");
        tu_write(cp, cfg, strlen(cfg));
        size_t n = sizeof ts / sizeof ts[0];
        tu_st_tensor local[16];
        memcpy(local, ts, sizeof ts);
        if (variant == 1)
            local[9] = local[10], local[10] = local[11], n--;
        if (variant == 2)
            local[n++] = (tu_st_tensor){"lm_head.weight", "BF16", 2, {100, 64}};
        tu_write_safetensors(wp, local, n);
        vf_model *m = open_ok(dir);
        int warned = 0;
        for (size_t i = 0; i < vf_model_warning_count(m); i++)
            warned += strstr(vf_model_warning(m, i), "config.json implies") != NULL;
        assert_int_equal(warned, variant == 1);
        assert_int_equal(vf_model_hparams(m)->n_layers, 1); /* hyper-parameters from the config */
        vf_model_free(m);
        tu_rm_rf(dir);
        free(dir);
        free(cp);
        free(wp);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_table),  cmocka_unit_test(test_published_counts),
        cmocka_unit_test(test_bert),             cmocka_unit_test(test_gpt2_buffers),
        cmocka_unit_test(test_moe_active),       cmocka_unit_test(test_gpt_oss_mxfp4),
        cmocka_unit_test(test_deepseek_v3),      cmocka_unit_test(test_deepseek_v2_lite),
        cmocka_unit_test(test_gemma4),           cmocka_unit_test(test_variants),
        cmocka_unit_test(test_quant_layouts),    cmocka_unit_test(test_unknown_family),
        cmocka_unit_test(test_malformed),        cmocka_unit_test(test_zamba2_adapters),
        cmocka_unit_test(test_hybrid_class_defaults),        cmocka_unit_test(test_sidecar_warning),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
