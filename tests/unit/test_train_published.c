/* test_train_published.c — the training model against published fine-tuning
 * figures on single GPUs. Each case names its source and the setup it states;
 * where the source gives a bound rather than a measurement, the test checks
 * the bound and a floor from the model's own 4-bit weights. */
#include "trainutil.h"

static vf_model *llama1_65b(void)
{
    /* LLaMA-65B (Touvron et al. 2023, Table 2): dim 8192, 64 heads, 80 layers;
     * HF config: intermediate 22016, vocabulary 32000, untied head */
    tr_shape s = {"llama", 8192, 22016, 32000, 2048, 80, 64, 64, 128, 0.0, "silu", VF_DTYPE_BF16, false};
    return tr_build(&s);
}

static vf_model *llama2_7b(void)
{
    tr_shape s = {"llama", 4096, 11008, 32000, 4096, 32, 32, 32, 128, 0.0, "silu", VF_DTYPE_BF16, false};
    return tr_build(&s);
}

static void base_opts(vf_estimate_opts *o)
{
    vf_estimate_opts_init(o);
    o->mode = VF_MODE_TRAINING;
    o->runtime = VF_RUNTIME_TRANSFORMERS;
}

/* Dettmers et al. 2023 (QLoRA, arXiv:2305.14314), abstract and §1: QLoRA
 * "reduces the average memory requirements of finetuning a 65B parameter
 * model from >780GB of GPU memory to <48GB". Setup (§4, Appendix): NF4 with
 * double quantization, LoRA r = 64 on every linear layer, paged optimizer,
 * bf16 compute, gradient checkpointing; batch 1 of 512 tokens. */
static void test_qlora_65b_single_48gb(void **state)
{
    (void)state;
    vf_model *m = llama1_65b();
    vf_estimate_opts o;
    vf_estimate e;
    vf_error err = {0};
    base_opts(&o);
    o.train.precision = VF_PREC_BF16_MIXED;
    o.train.optimizer = VF_OPT_PAGED_ADAMW_8BIT;
    o.train.lora_rank = 64;
    snprintf(o.train.lora_targets, sizeof o.train.lora_targets, "all-linear");
    snprintf(o.train.qlora, sizeof o.train.qlora, "nf4-dq");
    o.train.recompute = VF_RECOMPUTE_FULL;
    o.train.micro_batch = 1;
    o.train.seq_len = 512;
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_OK);
    print_message("QLoRA 65B: %.2f GB at %s\n", (double)e.per_gpu_bytes / 1e9, e.peak_phase);
    assert_true(e.per_gpu_bytes < 48000000000ull);
    assert_true(e.per_gpu_bytes > 35000000000ull); /* 65B at 4.127 bits is 33.6 GB alone */

    /* the same model fully fine-tuned in 16 bit with Adam */
    base_opts(&o);
    o.train.precision = VF_PREC_BF16_MIXED;
    o.train.micro_batch = 1;
    o.train.seq_len = 512;
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_OK);
    assert_true(e.per_gpu_bytes > 780000000000ull);
    vf_model_free(m);
}

/* torchtune's QLoRA tutorial (docs.pytorch.org/torchtune, "Fine-Tuning
 * Llama2 with QLoRA"): Llama2-7B with QLoRA "in <10 GB of memory" — recipe
 * qlora_finetune_single_device: NF4 base, LoRA r = 8 on the attention and MLP
 * projections, activation checkpointing, bf16, batch 2. */
static void test_torchtune_qlora_7b_under_10gb(void **state)
{
    (void)state;
    vf_model *m = llama2_7b();
    vf_estimate_opts o;
    vf_estimate e;
    vf_error err = {0};
    base_opts(&o);
    o.train.precision = VF_PREC_BF16;
    o.train.lora_rank = 8;
    snprintf(o.train.lora_targets, sizeof o.train.lora_targets, "all-linear");
    snprintf(o.train.qlora, sizeof o.train.qlora, "nf4");
    o.train.recompute = VF_RECOMPUTE_FULL;
    o.train.micro_batch = 2;
    o.train.seq_len = 512;
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_OK);
    print_message("torchtune QLoRA 7B: %.2f GB at %s\n", (double)e.per_gpu_bytes / 1e9, e.peak_phase);
    assert_true(e.per_gpu_bytes < 10000000000ull);
    assert_true(e.per_gpu_bytes > 3800000000ull); /* 6.7B at 4.5 bits */
    vf_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qlora_65b_single_48gb),
        cmocka_unit_test(test_torchtune_qlora_7b_under_10gb),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
