/* test_train_act.c — the activation model against Korthikanti et al. 2022
 * (arXiv:2205.05198): sbh(34 + 5as/h) bytes per GPT-3 block in 16 bit, its
 * tensor/sequence-parallel division, selective recomputation dropping the
 * 5as²b term, full recomputation keeping 2sbh, the first pipeline stage
 * holding every in-flight micro-batch; flash attention without s² terms. */
#include "trainutil.h"

/* A GPT-3 style block: GPT-2 layout, I = 4h, dropout 0.1 everywhere. */
static vf_model *gpt3ish(uint32_t layers)
{
    tr_shape s = {"gpt2", 1024, 4096, 50257, 2048, layers, 16, 16, 64, 0.1, "gelu", VF_DTYPE_BF16, true};
    return tr_build(&s);
}

static uint64_t acts(vf_model *m, vf_recompute rc, uint32_t tp, uint32_t pp, uint32_t accum, vf_attn attn,
                     uint64_t b, uint64_t s)
{
    vf_estimate_opts o;
    vf_estimate e;
    vf_error err = {0};
    vf_estimate_opts_init(&o);
    o.mode = VF_MODE_TRAINING;
    o.train.precision = VF_PREC_BF16;
    o.train.recompute = rc;
    o.train.micro_batch = b;
    o.train.seq_len = s;
    o.train.grad_accum = accum;
    o.infer.attn = attn;
    o.tp = tp;
    o.pp = pp;
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_OK);
    return e.activations;
}

/* Per block = activations(L+1 blocks) - activations(L blocks). */
static uint64_t per_block(vf_recompute rc, uint32_t tp, vf_attn attn, uint64_t b, uint64_t s)
{
    vf_model *m1 = gpt3ish(2), *m2 = gpt3ish(3);
    uint64_t d = acts(m2, rc, tp, 1, 1, attn, b, s) - acts(m1, rc, tp, 1, 1, attn, b, s);
    vf_model_free(m1);
    vf_model_free(m2);
    return d;
}

static void test_korthikanti_block(void **state)
{
    (void)state;
    const uint64_t s = 2048, b = 2, h = 1024, a = 16;
    /* sbh(34 + 5as/h) + the two LayerNorms' fp32 mean and rstd (8 bytes per token each) */
    uint64_t want = s * b * h * 34 + 5 * a * s * s * b + 16 * s * b;
    assert_int_equal(per_block(VF_RECOMPUTE_NONE, 1, VF_ATTN_EAGER, b, s), want);
    /* tensor + sequence parallel: sbh(34/t + 5as/(ht)) */
    assert_int_equal(per_block(VF_RECOMPUTE_NONE, 8, VF_ATTN_EAGER, b, s), want / 8);
    /* selective recomputation: the 5as²b term goes */
    assert_int_equal(per_block(VF_RECOMPUTE_SELECTIVE, 1, VF_ATTN_EAGER, b, s), want - 5 * a * s * s * b);
    /* full recomputation: the block's input, 2sbh */
    assert_int_equal(per_block(VF_RECOMPUTE_FULL, 1, VF_ATTN_EAGER, b, s), 2 * s * b * h);
}

static void test_flash_has_no_s2(void **state)
{
    (void)state;
    uint64_t f1 = per_block(VF_RECOMPUTE_NONE, 1, VF_ATTN_FLASH, 1, 2048);
    uint64_t f2 = per_block(VF_RECOMPUTE_NONE, 1, VF_ATTN_FLASH, 1, 4096);
    assert_true(f2 <= 2 * f1 + 4096); /* linear in s */
    assert_true(f1 < per_block(VF_RECOMPUTE_NONE, 1, VF_ATTN_EAGER, 1, 2048));
    uint64_t e1 = per_block(VF_RECOMPUTE_NONE, 1, VF_ATTN_EAGER, 1, 2048);
    uint64_t e2 = per_block(VF_RECOMPUTE_NONE, 1, VF_ATTN_EAGER, 1, 4096);
    assert_true(e2 > 2 * e1); /* quadratic part */
}

/* Korthikanti §4.2.3: with 1F1B the first stage keeps p micro-batches of L/p blocks: L blocks' worth. */
static void test_pipeline_first_stage(void **state)
{
    (void)state;
    vf_model *m = gpt3ish(8);
    uint64_t one = acts(m, VF_RECOMPUTE_NONE, 1, 1, 1, VF_ATTN_EAGER, 1, 1024);
    uint64_t pp4 = acts(m, VF_RECOMPUTE_NONE, 1, 4, 8, VF_ATTN_EAGER, 1, 1024);
    uint64_t pp4_few = acts(m, VF_RECOMPUTE_NONE, 1, 4, 1, VF_ATTN_EAGER, 1, 1024);
    /* the first stage holds all 8 blocks' worth, without the loss's log-probabilities */
    assert_true(pp4 < one);
    assert_true(pp4 > one - 4ull * 1024 * 50257 - 1);
    assert_true(pp4_few < pp4);
    vf_model_free(m);
}

/* GQA does not shrink eager attention's saved k/v: HF repeats them per head. */
static void test_gqa_eager_vs_flash(void **state)
{
    (void)state;
    tr_shape mha = {"llama", 4096, 14336, 128256, 8192, 2, 32, 32, 128, 0.0, "silu", VF_DTYPE_BF16, false};
    tr_shape gqa = mha;
    gqa.kv_heads = 8;
    vf_model *a = tr_build(&mha), *g = tr_build(&gqa);
    assert_int_equal(acts(a, VF_RECOMPUTE_NONE, 1, 1, 1, VF_ATTN_EAGER, 1, 1024),
                     acts(g, VF_RECOMPUTE_NONE, 1, 1, 1, VF_ATTN_EAGER, 1, 1024));
    /* flash keeps k and v at 8 heads: 2 x 1024 tokens x (32 - 8) x 128 x 2 bytes per block less */
    uint64_t fa = acts(a, VF_RECOMPUTE_NONE, 1, 1, 1, VF_ATTN_FLASH, 1, 1024);
    uint64_t fg = acts(g, VF_RECOMPUTE_NONE, 1, 1, 1, VF_ATTN_FLASH, 1, 1024);
    assert_int_equal(fa - fg, 2ull * 2 * 1024 * 24 * 128 * 2);
    vf_model_free(a);
    vf_model_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_korthikanti_block),
        cmocka_unit_test(test_flash_has_no_s2),
        cmocka_unit_test(test_pipeline_first_stage),
        cmocka_unit_test(test_gqa_eager_vs_flash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
