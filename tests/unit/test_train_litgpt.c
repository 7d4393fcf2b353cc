/* test_train_litgpt.c — LitGPT's fine-tuning mechanisms one at a time, each
 * against a figure derived by hand from the source that makes it
 * (Lightning-AI/litgpt@00af8b0d, Lightning Fabric 2.4, bitsandbytes 0.42,
 * PyTorch 2.x autograd; docs/memory-model.md "LitGPT and old bitsandbytes").
 * Each test changes one knob and checks the difference it makes, so the
 * rest of the model cancels. */
#include "trainutil.h"

/* A small Llama: hidden 256, 2 blocks, 4 heads of 64, untied head. */
static vf_model *small(uint64_t vocab, uint32_t kv_heads)
{
    tr_shape s = {"llama", 256, 512, vocab, 2048, 2, 4, kv_heads, 64, 0.0, "silu", VF_DTYPE_BF16, false};
    return tr_build(&s);
}

static void lit_opts(vf_estimate_opts *o, uint32_t rank, const char *targets, uint64_t batch)
{
    vf_estimate_opts_init(o);
    o->mode = VF_MODE_TRAINING;
    o->runtime = VF_RUNTIME_LITGPT;
    o->train.precision = VF_PREC_BF16;
    o->train.optimizer = VF_OPT_ADAMW;
    o->train.lora_rank = rank;
    snprintf(o->train.lora_targets, sizeof o->train.lora_targets, "%s", targets);
    o->train.lora_dropout = rank ? 0.05f : 0;
    o->train.micro_batch = batch;
    o->train.seq_len = 512;
}

static void run(vf_model *m, const vf_estimate_opts *o, vf_estimate *e)
{
    vf_error err = {0};
    assert_int_equal(vf_estimate_run(m, o, e, &err), VF_OK);
}

/* The same knobs on vocabularies V1 and V2 = V1 + dV, both at `phase`. */
#define V1 1000u
#define V2 3000u
static void two_vocabs(const vf_estimate_opts *o, const char *phase, vf_estimate *e1, vf_estimate *e2)
{
    vf_model *m1 = small(V1, 2), *m2 = small(V2, 2);
    run(m1, o, e1);
    run(m2, o, e2);
    assert_string_equal(e1->peak_phase, phase);
    assert_string_equal(e2->peak_phase, phase);
    vf_model_free(m1);
    vf_model_free(m2);
}

/* Fabric's _FabricModule.forward casts the model's outputs to the default
 * dtype (convert_output: fp32), so under lora.py each logit costs: the
 * log-softmax it saves, 4 bytes; at the end of the forward the previous
 * step's fp32 logits (4), the new bf16 chunks (2) and their fp32 casts (4).
 * Two vocabularies: the difference is that per logit plus two V x h bf16
 * matrices (embedding and head). */
static void test_fp32_logits_lora(void **state)
{
    (void)state;
    const uint64_t T = 512, h = 256, dV = V2 - V1;
    vf_estimate_opts o;
    vf_estimate e1, e2;
    lit_opts(&o, 8, "q,v", 1);
    two_vocabs(&o, "end of forward", &e1, &e2);
    assert_int_equal(e2.activations - e1.activations, 4 * T * dV);
    assert_int_equal(e2.weights - e1.weights, 2 * 2 * dV * h);
    assert_int_equal(e2.per_gpu_bytes - e1.per_gpu_bytes, 2 * 2 * dV * h + (4 + 2 + 4) * T * dV);
    /* the held fp32 logits and the bf16 chunks are shown with the transients */
    assert_int_equal(e2.overhead - e1.overhead, (4 + 2) * T * dV);
}

/* full.py: whole fp32 logits, chunked_cross_entropy splits the flattened rows
 * by 128 and split's backward concatenates the chunk gradients into one new
 * fp32 T x V tensor: at the start of backward the held logits (4), the chunk
 * gradients (4, in the saved log-softmax's place) and the cat (4). Full
 * fine-tuning also trains the two V x h matrices: bf16 weights (2 each) and
 * two bf16 AdamW moments (4 each); one micro-batch, so no gradient is alive
 * yet. */
static void test_fp32_logits_full(void **state)
{
    (void)state;
    const uint64_t T = 1024, h = 256, dV = V2 - V1;
    vf_estimate_opts o;
    vf_estimate e1, e2;
    lit_opts(&o, 0, "", 2);
    two_vocabs(&o, "start of backward", &e1, &e2);
    assert_int_equal(e2.per_gpu_bytes - e1.per_gpu_bytes, 2 * (2 + 4) * dV * h + (4 + 4 + 4) * T * dV);
}

/* One query per group (n_query_groups == n_head): v stays a view of the fused
 * qkv output, which SDPA's saved v pins whole. Against the same model with
 * two groups (k and v are expanded to every head and copied there, so the
 * rest of the attention saves the same), each block keeps q's and k's
 * columns in addition: 2 bytes x T x (qdim + kvdim), kvdim = qdim. Full
 * fine-tuning, so no LoRA term depends on the groups. */
static void test_mha_v_pins_qkv(void **state)
{
    (void)state;
    const uint64_t T = 512, L = 2, qdim = 4 * 64;
    vf_model *mha = small(1000, 4), *gqa = small(1000, 2);
    vf_estimate_opts o;
    vf_estimate e1, e2;
    lit_opts(&o, 0, "", 1);
    run(mha, &o, &e1);
    run(gqa, &o, &e2);
    assert_int_equal(e1.activations - e2.activations, L * 2 * T * (qdim + qdim));
    vf_model_free(mha);
    vf_model_free(gqa);
}

/* LoRAQKVLinear.zero_pad (LoRA on q and v, not k): index_copy_'s backward
 * keeps its source, after_B, T x (qdim + kvdim) per block; with k adapted
 * too there is no padding but one more adapter output (T x r). */
static void test_zero_pad_source(void **state)
{
    (void)state;
    const uint64_t T = 512, L = 2, qdim = 4 * 64, kvdim = 2 * 64, r = 8;
    vf_model *m = small(1000, 2);
    vf_estimate_opts o;
    vf_estimate qv, qkv;
    lit_opts(&o, (uint32_t)r, "q,v", 1);
    run(m, &o, &qv);
    lit_opts(&o, (uint32_t)r, "q,k,v", 1);
    run(m, &o, &qkv);
    assert_int_equal(qv.activations - qkv.activations, L * 2 * T * (qdim + kvdim) - L * 2 * T * r);
    vf_model_free(m);
}

/* Llama-3.2-1B under QLoRA as its config-hub row runs it (batch 2 x 512). */
static vf_model *llama32_1b(void)
{
    tr_shape s = {"llama", 2048, 8192, 128256, 131072, 16, 32, 8, 64, 0.0, "silu", VF_DTYPE_BF16, true};
    return tr_build(&s);
}

static void qlora_opts(vf_estimate_opts *o, const char *bnb)
{
    lit_opts(o, 32, "q,v", 2);
    o->train.grad_accum = 4;
    snprintf(o->train.qlora, sizeof o->train.qlora, "nf4");
    snprintf(o->train.bnb_version, sizeof o->train.bnb_version, "%s", bnb);
}

/* bitsandbytes 0.42 MatMul4Bit keeps each input as a ctx attribute, which
 * autograd's release after backward does not free; the held logits keep the
 * graph, so at the end of the next forward the previous micro-batch's inputs
 * are alive beside the new ones. Per block h (q/k/v) + qdim (o) + h (MLP) + I
 * (down), 2 bytes each, in both sets; the new set also keeps the head's
 * input (T x h), which in the old one cancels against the first block's
 * q/k/v input (no grad there: (None, None)). 0.43.2 keeps none. */
static void test_bnb_previous_inputs(void **state)
{
    (void)state;
    const uint64_t T = 1024, L = 16, h = 2048, q = 2048, I = 8192;
    vf_model *m = llama32_1b();
    vf_estimate_opts o;
    vf_estimate old, fixed;
    qlora_opts(&o, "0.42.0");
    run(m, &o, &old);
    qlora_opts(&o, "0.43.2");
    run(m, &o, &fixed);
    assert_string_equal(old.peak_phase, "end of forward");
    assert_string_equal(fixed.peak_phase, "end of forward");
    const uint64_t set = L * 2 * T * (h + q + h + I);
    assert_int_equal(old.per_gpu_bytes - fixed.per_gpu_bytes, set + 2 * T * h + set);
    vf_model_free(m);
}

/* The 4-bit head (V x h; Fabric quantizes from fp16, so each chunk's
 * dequantization is an fp16 copy and its bf16 cast, 4 V h bytes) runs before
 * its chunk's output and before any fp32 cast: at the last of 512 / 128 = 4
 * chunks, three chunks of bf16 logits are alive, the saved log-softmax (4 T V)
 * is not. What is shown with the transients at the end of the forward: that
 * moment's excess over the saved set, the fp32 logits held (4 T V) and the
 * previous micro-batch's 4-bit inputs. */
static void test_head_dequant_moment(void **state)
{
    (void)state;
    const uint64_t T = 1024, L = 16, h = 2048, q = 2048, I = 8192, V = 128256, TV = T * V;
    vf_model *m = llama32_1b();
    vf_estimate_opts o;
    vf_estimate e;
    qlora_opts(&o, "0.42.0");
    run(m, &o, &e);
    const uint64_t at_head = 2 * TV / 4 * 3 + 4 * V * h - 4 * TV;
    assert_true(at_head > 2 * TV); /* larger than the bf16 chunks beside their fp32 casts */
    const uint64_t prev = L * 2 * T * (h + q + h + I);
    assert_int_equal(e.overhead, at_head + 4 * TV + prev);
    vf_model_free(m);
}

/* The small Llama with Phi-3's fused layout: qkv_proj and gate_up_proj. */
static vf_model *small_fused(void)
{
    const uint64_t h = 256, I = 512, V = 1000, q = 4 * 64, kv = 2 * 64;
    vf_model *m = vf__model_new(VF_FORMAT_CONFIG, "llama");
    assert_non_null(m);
    json_t *cfg = json_object();
    json_object_set_new(cfg, "model_type", json_string("llama"));
    json_object_set_new(cfg, "vocab_size", json_integer((json_int_t)V));
    json_object_set_new(cfg, "hidden_size", json_integer((json_int_t)h));
    json_object_set_new(cfg, "num_hidden_layers", json_integer(2));
    json_object_set_new(cfg, "num_attention_heads", json_integer(4));
    json_object_set_new(cfg, "num_key_value_heads", json_integer(2));
    json_object_set_new(cfg, "head_dim", json_integer(64));
    json_object_set_new(cfg, "intermediate_size", json_integer((json_int_t)I));
    json_object_set_new(cfg, "max_position_embeddings", json_integer(2048));
    json_object_set_new(cfg, "hidden_act", json_string("silu"));
    json_object_set_new(cfg, "tie_word_embeddings", json_false());
    tr_add(m, VF_DTYPE_BF16, "model.embed_tokens.weight", -1, 2, V, h, 0, 0);
    for (int l = 0; l < 2; l++) {
        tr_add(m, VF_DTYPE_BF16, "model.layers.%d.self_attn.qkv_proj.weight", l, 2, q + 2 * kv, h, 0, 0);
        tr_add(m, VF_DTYPE_BF16, "model.layers.%d.self_attn.o_proj.weight", l, 2, h, q, 0, 0);
        tr_add(m, VF_DTYPE_BF16, "model.layers.%d.mlp.gate_up_proj.weight", l, 2, 2 * I, h, 0, 0);
        tr_add(m, VF_DTYPE_BF16, "model.layers.%d.mlp.down_proj.weight", l, 2, h, I, 0, 0);
        tr_add(m, VF_DTYPE_BF16, "model.layers.%d.input_layernorm.weight", l, 1, h, 0, 0, 0);
        tr_add(m, VF_DTYPE_BF16, "model.layers.%d.post_attention_layernorm.weight", l, 1, h, 0, 0, 0);
    }
    tr_add(m, VF_DTYPE_BF16, "model.norm.weight", -1, 1, h, 0, 0, 0);
    tr_add(m, VF_DTYPE_BF16, "model.rotary_emb.inv_freq", -1, 1, 32, 0, 0, 0);
    tr_add(m, VF_DTYPE_BF16, "lm_head.weight", -1, 2, V, h, 0, 0);
    m->config = cfg;
    vf__model_classify(m);
    return m;
}

/* LitGPT converts either layout into the same modules: one LoRAQKVLinear (A
 * with r rows per adapted q, k, v, one dropout) and LLaMAMLP's fc_1 and fc_2
 * (two adapters, two dropouts on the same input). So a fused checkpoint
 * trains the same parameters and saves the same activations as a separate
 * one; the only difference is in AdamW's 4-byte step counters: the separate
 * build counts A and B for each of q, k, v (6 tensors a block), LitGPT has
 * one A and one B (2). */
static void test_fused_layout(void **state)
{
    (void)state;
    const uint64_t L = 2;
    vf_model *sep = small(1000, 2), *fused = small_fused();
    vf_estimate_opts o;
    vf_estimate es, ef;
    lit_opts(&o, 8, "all-linear", 1);
    run(sep, &o, &es);
    run(fused, &o, &ef);
    assert_int_equal(es.trainable_params, ef.trainable_params);
    assert_int_equal(es.activations, ef.activations);
    assert_int_equal(es.per_gpu_bytes - ef.per_gpu_bytes, L * 4 * 4);
    vf_model_free(sep);
    vf_model_free(fused);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp32_logits_lora),    cmocka_unit_test(test_fp32_logits_full),
        cmocka_unit_test(test_mha_v_pins_qkv),      cmocka_unit_test(test_zero_pad_source),
        cmocka_unit_test(test_bnb_previous_inputs), cmocka_unit_test(test_head_dequant_moment),
        cmocka_unit_test(test_fused_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
