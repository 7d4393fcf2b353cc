/* test_train_states.c — model states against figures from their sources:
 * the seeds' 1B fp32 Adam example, the ZeRO paper's Figure 1, DeepSpeed's
 * estimate_zero{2,3}_model_states_mem_needs (formulas from
 * deepspeed/runtime/zero/stage_1_and_2.py and stage3.py; the t5-small table
 * DeepSpeed prints), PEFT's trainable-parameter count, and PyTorch's optimizer
 * step temporaries (tests/reference/torch). */
#include "trainutil.h"
#include "memory/train/train_internal.h"

#include <math.h>

/* A model of given named tensors, all of one dtype. */
static vf_model *flat_model(const char *const *names, const uint64_t *sizes, size_t n, vf_dtype dt)
{
    vf_model *m = vf__model_new(VF_FORMAT_CONFIG, "flat");
    assert_non_null(m);
    for (size_t i = 0; i < n; i++)
        tr_add(m, dt, names[i], -1, 1, sizes[i], 0, 0, 0);
    json_t *cfg = json_object();
    json_object_set_new(cfg, "model_type", json_string("llama"));
    json_object_set_new(cfg, "hidden_size", json_integer(512));
    json_object_set_new(cfg, "num_hidden_layers", json_integer(1));
    json_object_set_new(cfg, "num_attention_heads", json_integer(8));
    json_object_set_new(cfg, "vocab_size", json_integer(32128));
    json_object_set_new(cfg, "intermediate_size", json_integer(2048));
    m->config = cfg;
    vf__model_classify(m);
    return m;
}

static void train_opts(vf_estimate_opts *o, vf_precision p, vf_optimizer opt)
{
    vf_estimate_opts_init(o);
    o->mode = VF_MODE_TRAINING;
    o->train.precision = p;
    o->train.optimizer = opt;
    o->train.micro_batch = 1;
    o->train.seq_len = 128;
}

/* SEEDS.md: 1B parameters, fp32, Adam: 4 + 4 + 8 = 16 GB before activations. */
static void test_seeds_1b_fp32_adam(void **state)
{
    (void)state;
    const char *names[] = {"model.layers.0.mlp.up_proj.weight"};
    uint64_t sizes[] = {1000000000ull};
    vf_model *m = flat_model(names, sizes, 1, VF_DTYPE_F32);
    vf_estimate_opts o;
    vf_estimate e;
    vf_error err = {0};
    train_opts(&o, VF_PREC_FP32, VF_OPT_ADAM);
    o.train.states_only = true;
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_OK);
    assert_int_equal(e.weights, 4000000000ull);
    assert_int_equal(e.gradients, 4000000000ull);
    assert_int_equal(e.optimizer, 8000000000ull + 4); /* + torch's step counter */
    assert_int_equal(e.per_gpu_bytes, 16000000000ull + 4);
    assert_int_equal(e.activations, 0);
    vf_model_free(m);
}

/* Rajbhandari et al. 2020, Figure 1: Psi = 7.5B, N_d = 64, mixed-precision
 * Adam (K = 12): baseline 120 GB, P_os 31.4 GB, P_os+g 16.6 GB, P_os+g+p
 * 1.9 GB per device (model states only). */
static void test_zero_paper_figure1(void **state)
{
    (void)state;
    const char *names[] = {"model.layers.0.mlp.up_proj.weight"};
    const uint64_t psi = 7500000000ull;
    uint64_t sizes[] = {psi};
    vf_model *m = flat_model(names, sizes, 1, VF_DTYPE_BF16);
    const double paper[4] = {120e9, 31.4e9, 16.6e9, 1.9e9};
    const double exact[4] = {16.0 * psi, 4.0 * psi + 12.0 * psi / 64, 2.0 * psi + 14.0 * psi / 64, 16.0 * psi / 64};
    for (int z = 0; z <= 3; z++) {
        vf_estimate_opts o;
        vf_estimate e;
        vf_error err = {0};
        train_opts(&o, VF_PREC_BF16_MIXED, VF_OPT_ADAMW);
        o.train.zero = z;
        o.gpus = z ? 64 : 1;
        assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_OK);
        double states = (double)(e.weights + e.gradients + e.optimizer);
        assert_true(fabs(states - exact[z]) <= 4.0); /* the 4-byte step counter, sharded */
        assert_true(fabs(states - paper[z]) <= 0.05e9 + (z == 3 ? 0.03e9 : 0)); /* paper rounds to 0.1 GB */
    }
    vf_model_free(m);
}

/* t5-small: 60,506,624 params, largest layer (shared embedding 32128 x 512)
 * 16,449,536. The rest split into modules smaller than that. */
static vf_model *t5_small_like(void)
{
    const char *names[] = {"shared.weight", "encoder.block.0.layer.0.SelfAttention.q.weight",
                           "encoder.block.1.layer.0.SelfAttention.q.weight",
                           "encoder.block.2.layer.0.SelfAttention.q.weight"};
    uint64_t sizes[] = {16449536, 14685696, 14685696, 14685696};
    return flat_model(names, sizes, 4, VF_DTYPE_F32);
}

static void ds(vf_model *m, int zero, uint32_t gpus, uint32_t per_node, vf_offload off, uint64_t *gpu, uint64_t *cpu)
{
    vf_estimate_opts o;
    vf_estimate e;
    vf_error err = {0};
    train_opts(&o, VF_PREC_FP16_MIXED, VF_OPT_ADAMW);
    o.train.zero = zero;
    o.gpus = gpus;
    o.train.gpus_per_node = per_node;
    o.train.offload = off;
    o.train.states_only = true;
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_OK);
    *gpu = e.per_gpu_bytes;
    *cpu = e.host_bytes;
}

static double gib(uint64_t b) { return (double)b / (1024.0 * 1024.0 * 1024.0); }

/* DeepSpeed's printed table for t5-small, 1 node x 1 GPU (zero_init=1):
 * 1.52GB | 0.06GB offload_param=cpu, offload_optimizer=cpu
 * 1.35GB | 0.17GB offload_param=none, offload_optimizer=cpu
 * 0.09GB | 1.08GB offload_param=none, offload_optimizer=none
 * and the formulas of estimate_zero3_model_states_mem_needs to the byte. */
static void test_deepspeed_zero3(void **state)
{
    (void)state;
    vf_model *m = t5_small_like();
    const double P = 60506624.0, LL = 16449536.0;
    uint64_t g, c;
    ds(m, 3, 1, 1, VF_OFFLOAD_BOTH, &g, &c);
    assert_int_equal(g, (uint64_t)(4 * LL));
    assert_int_equal(c, (uint64_t)(P * 18 * (1.0 / 1) * 1.5));
    assert_true(fabs(gib(g) - 0.06) < 0.005 && fabs(gib(c) - 1.52) < 0.005);
    ds(m, 3, 1, 1, VF_OFFLOAD_OPTIMIZER, &g, &c);
    assert_int_equal(g, (uint64_t)(4 * LL + (double)(uint64_t)(2 * P / 1)));
    assert_int_equal(c, (uint64_t)(P * 16 * (1.0 / 1) * 1.5));
    assert_true(fabs(gib(g) - 0.17) < 0.005 && fabs(gib(c) - 1.35) < 0.005);
    ds(m, 3, 1, 1, VF_OFFLOAD_NONE, &g, &c);
    assert_int_equal(g, (uint64_t)(4 * LL + (double)(uint64_t)(18 * P / 1)));
    assert_int_equal(c, (uint64_t)(LL * 4 * 1 * 1.5));
    assert_true(fabs(gib(g) - 1.08) < 0.005 && fabs(gib(c) - 0.09) < 0.005);
    /* 2 nodes x 8 GPUs */
    ds(m, 3, 16, 8, VF_OFFLOAD_NONE, &g, &c);
    assert_int_equal(g, (uint64_t)(4 * LL + (double)(uint64_t)(18 * P / 16)));
    assert_int_equal(c, (uint64_t)(LL * 4 * 8 * 1.5));
    ds(m, 3, 16, 8, VF_OFFLOAD_BOTH, &g, &c);
    assert_int_equal(c, (uint64_t)(P * 18 * (1.0 / 2) * 1.5));
    vf_model_free(m);
}

/* estimate_zero2_model_states_mem_needs (current, PR #5099):
 * cpu_offload: gpu = 2P, cpu = P * max(4 * total_gpus, 16) * 1.5
 * else:        gpu = 2P + int(18P / total_gpus), cpu = P * 4 * gpus_per_node * 1.5 */
static void test_deepspeed_zero2(void **state)
{
    (void)state;
    vf_model *m = t5_small_like();
    const double P = 60506624.0;
    uint64_t g, c;
    for (int z = 1; z <= 2; z++) {
        ds(m, z, 8, 8, VF_OFFLOAD_NONE, &g, &c);
        assert_int_equal(g, (uint64_t)(2 * P + (double)(uint64_t)(18 * P / 8)));
        assert_int_equal(c, (uint64_t)(P * 4 * 8 * 1.5));
        ds(m, z, 8, 8, VF_OFFLOAD_OPTIMIZER, &g, &c);
        assert_int_equal(g, (uint64_t)(2 * P));
        assert_int_equal(c, (uint64_t)(P * 32 * 1.5));
        ds(m, z, 2, 2, VF_OFFLOAD_OPTIMIZER, &g, &c);
        assert_int_equal(c, (uint64_t)(P * 16 * 1.5));
    }
    vf_model_free(m);
}

static vf_model *llama2_7b(void)
{
    tr_shape s = {"llama", 4096, 11008, 32000, 4096, 32, 32, 32, 128, 0.0, "silu", VF_DTYPE_BF16, false};
    return tr_build(&s);
}

/* Llama-2-7B and its parameter count. */
static vf_model *llama2_7b_params(uint64_t *params)
{
    vf_model *m = llama2_7b();
    vf_model_totals t;
    vf_model_totals_get(m, &t);
    *params = t.params;
    return m;
}

/* PEFT on Llama-2-7B, LoRA r=8 on q_proj,v_proj prints
 * "trainable params: 4,194,304 || all params: 6,742,609,920". DeepSpeed's
 * estimator would price all 6.7B as trainable; ours only the adapters. */
static void test_lora_trainable_and_deepspeed_flaw(void **state)
{
    (void)state;
    uint64_t params;
    vf_model *m = llama2_7b_params(&params);
    vf_estimate_opts o;
    vf_estimate e;
    vf_error err = {0};
    train_opts(&o, VF_PREC_BF16_MIXED, VF_OPT_ADAMW);
    o.train.lora_rank = 8;
    /* PEFT's default: fp32 adapters (autocast_adapter_dtype), fp32 gradients;
     * under autocast each of q and v keeps its own 16-bit cast of the input
     * (32 x 2 x 128 x 4096 B each), where 16-bit adapters share the base's */
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_OK);
    assert_int_equal(e.gradients, 4194304ull * 4);
    uint64_t a32 = e.activations, w32 = e.weights;
    o.train.lora_dropout = 0.05f; /* only the 1-byte mask is new: A keeps the dropped cast instead */
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_OK);
    assert_int_equal(e.activations - a32, 32ull * 1 * 128 * (4096 + 4096));
    o.train.lora_dropout = 0;
    o.train.adapter_base_dtype = true; /* --adapter-dtype base: what follows */
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_OK);
    assert_int_equal(a32 - e.activations, 32ull * 2 * 128 * 4096);
    assert_int_equal(w32 - e.weights, 4194304ull * 2);
    assert_int_equal(e.trainable_params, 4194304);
    assert_int_equal(params + e.trainable_params, 6742609920ull);
    assert_int_equal(e.gradients, 4194304ull * 2);
    /* lora_dropout: each adapter keeps a 1-byte mask and the bf16 dropped copy of its input */
    uint64_t a0 = e.activations;
    o.train.lora_dropout = 0.05f;
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_OK);
    assert_int_equal(e.activations - a0, 32ull * (2 + 1) * 128 * (4096 + 4096));
    o.train.lora_dropout = 1.5f;
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_EINVAL);
    o.train.lora_dropout = 0;
    /* ZeRO-2 states only, 8 GPUs: frozen base at 2 bytes + adapters' 2 + 18/N */
    o.train.zero = 2;
    o.gpus = 8;
    o.train.states_only = true;
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_OK);
    double P = (double)params, Pt = 4194304.0;
    assert_int_equal(e.per_gpu_bytes, (uint64_t)(2 * P + 2 * Pt + (double)(uint64_t)(18 * Pt / 8)));
    double flawed = 2 * (P + Pt) + (double)(uint64_t)(18 * (P + Pt) / 8);
    assert_true((double)e.per_gpu_bytes < 0.5 * flawed); /* 2P + 2.25P would be priced */
    /* all-linear: 7 matrices per block */
    o.train.states_only = false;
    o.train.zero = 0;
    o.gpus = 1;
    snprintf(o.train.lora_targets, sizeof o.train.lora_targets, "all-linear");
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_OK);
    uint64_t per_block = 8 * ((4096 + 4096) * 4 + (4096 + 11008) * 3);
    assert_int_equal(e.trainable_params, 32 * per_block);
    snprintf(o.train.lora_targets, sizeof o.train.lora_targets, "q,bogus");
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_EINVAL);
    vf_model_free(m);
}

/* QLoRA's storage: NF4 is 4 bits + an fp32 absmax per 64 weights (0.5 bits);
 * double quantization makes that 8 bits per 64 + 32 bits per 64*256
 * (0.127 bits; Dettmers et al. 2023 §3). Non-matrix tensors stay bf16. */
static void test_qlora_storage(void **state)
{
    (void)state;
    uint64_t params;
    vf_model *m = llama2_7b_params(&params);
    uint64_t mat = 32ull * (4096ull * 4096 * 4 + 4096ull * 11008 * 3), other = params - mat;
    vf_estimate_opts o;
    vf_estimate e;
    vf_error err = {0};
    train_opts(&o, VF_PREC_BF16_MIXED, VF_OPT_PAGED_ADAMW_8BIT);
    o.train.lora_rank = 16;
    snprintf(o.train.qlora, sizeof o.train.qlora, "nf4");
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_OK);
    uint64_t adapters = e.trainable_params * 4; /* fp32 adapters (PEFT autocast_adapter_dtype) */
    double bits = (double)(e.weights - adapters - other * 2 - 64 /* rotary buffer */) * 8.0 / (double)mat;
    assert_true(fabs(bits - 4.5) < 1e-6);
    snprintf(o.train.qlora, sizeof o.train.qlora, "nf4-dq");
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_OK);
    bits = (double)(e.weights - adapters - other * 2 - 64) * 8.0 / (double)mat;
    assert_true(fabs(bits - (4.0 + 0.127)) < 0.001);
    /* 8-bit AdamW: uint8 moments + fp32 absmax per 256 (bitsandbytes init_state) */
    assert_int_equal(e.optimizer % 2, 0);
    snprintf(o.train.qlora, sizeof o.train.qlora, "nf5");
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_EINVAL);
    vf_model_free(m);
}

/* The step temporaries PyTorch measured (results.json optimizer_state):
 * AdamW foreach=False: max_k(|p_k-1| + 2|p_k|) bytes; foreach=True: 2 x all
 * parameters' bytes; Adagrad: its per-tensor std beside the previous one. */
static void test_step_temporaries(void **state)
{
    (void)state;
    json_error_t je;
    json_t *root = json_load_file("tests/reference/torch/results.json", 0, &je), *r;
    assert_non_null(root);
    size_t i, n = 0;
    json_array_foreach(json_object_get(root, "records"), i, r) {
        const char *meas = json_string_value(json_object_get(r, "measurement"));
        if (strcmp(meas, "optimizer_state"))
            continue;
        const char *opt = json_string_value(json_object_get(r, "optimizer"));
        bool fp32 = !strcmp(json_string_value(json_object_get(r, "dtype")), "fp32");
        vf_model *m = tr_record_model(r);
        vf_train_opts t;
        memset(&t, 0, sizeof t);
        vf__tcfg c;
        memset(&c, 0, sizeof c);
        c.st_bytes = c.w_bytes = c.g_bytes = fp32 ? 4 : 2;
        c.frozen_bytes = c.st_bytes;
        uint64_t want;
        if (!strcmp(opt, "AdamW(foreach=False)")) {
            t.optimizer = VF_OPT_ADAMW, t.optim_impl = VF_OPTIM_FOR_LOOP;
            want = (uint64_t)json_integer_value(json_object_get(r, "predicted_step_transient"));
        } else if (!strcmp(opt, "AdamW(foreach=True)")) {
            t.optimizer = VF_OPT_ADAMW, t.optim_impl = VF_OPTIM_FOREACH_LEGACY; /* measured on torch 1.13 */
            want = (uint64_t)json_integer_value(json_object_get(r, "predicted_steady_step_transient"));
        } else if (!strcmp(opt, "Adagrad")) {
            t.optimizer = VF_OPT_ADAGRAD, t.optim_impl = VF_OPTIM_FOR_LOOP;
            want = (uint64_t)json_integer_value(json_object_get(r, "predicted_steady_step_transient"));
        } else {
            t.optimizer = VF_OPT_SGD_MOMENTUM, t.optim_impl = VF_OPTIM_FOR_LOOP;
            want = (uint64_t)json_integer_value(json_object_get(r, "predicted_steady_step_transient"));
        }
        vf__tstates st;
        vf_error err = {0};
        assert_int_equal(vf__train_states(m, &t, &c, &st, &err), VF_OK);
        if (st.step_temp_bytes != want)
            fail_msg("%s %s %s: step temporaries %llu, measured rule %llu",
                     json_string_value(json_object_get(r, "config")), fp32 ? "fp32" : "bf16", opt,
                     (unsigned long long)st.step_temp_bytes, (unsigned long long)want);
        vf_model_free(m);
        n++;
    }
    assert_int_equal(n, 144);
    json_decref(root);
}

/* Where states live once distributed: FSDP maps onto ZeRO, offload moves
 * states to host memory (per node), DDP adds its gradient-sized buckets. */
static void test_distribution(void **state)
{
    (void)state;
    uint64_t P;
    vf_model *m = llama2_7b_params(&P);
    vf_estimate_opts o;
    vf_estimate e, e3;
    vf_error err = {0};
    train_opts(&o, VF_PREC_BF16_MIXED, VF_OPT_ADAMW);
    o.gpus = 8;
    o.train.zero = 3;
    assert_int_equal(vf_estimate_run(m, &o, &e3, &err), VF_OK);
    o.train.zero = 0;
    o.train.fsdp = 1; /* full shard = ZeRO-3 states */
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_OK);
    assert_int_equal(e.weights, e3.weights);
    assert_int_equal(e.gradients, e3.gradients);
    assert_int_equal(e.optimizer, e3.optimizer);
    assert_int_equal(e.gradients, P * 2 / 8);
    /* ZeRO-3 with optimizer and parameter offload: nothing of the states on the GPU */
    o.train.fsdp = 0;
    o.train.zero = 3;
    o.train.offload = VF_OFFLOAD_BOTH;
    o.train.gpus_per_node = 8;
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_OK);
    assert_int_equal(e.weights, 64 * 2); /* only the rotary buffer stays */
    assert_int_equal(e.optimizer, 0);
    /* per node: master 4 + moments 8 + fp32 gradients 4 + 16-bit parameters 2 = 18 bytes per
     * parameter over the node's 8 shards (DeepSpeed's stage-3 offload figure, 18P per node) */
    assert_true(e.host_bytes >= P * 18 && e.host_bytes <= P * 18 + 8 * 4 * 300);
    assert_true(e.per_gpu_bytes < e3.per_gpu_bytes);
    o.train.offload_nvme = true;
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_OK);
    assert_int_equal(e.host_bytes, 0);
    /* DDP without ZeRO: a gradient-sized bucket copy sits in the overhead */
    train_opts(&o, VF_PREC_BF16_MIXED, VF_OPT_ADAMW);
    o.gpus = 8;
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_OK);
    train_opts(&o, VF_PREC_BF16_MIXED, VF_OPT_ADAMW);
    o.gpus = 1;
    assert_int_equal(vf_estimate_run(m, &o, &e3, &err), VF_OK);
    assert_int_equal(e.overhead - e3.overhead, P * 2);
    assert_int_equal(e.per_gpu_bytes - e3.per_gpu_bytes, P * 2);
    vf_model_free(m);
}

/* HF Trainer's mixed precision (no DeepSpeed/FSDP) is PyTorch AMP: fp32
 * weights, gradients and AdamW moments, 16 bytes per parameter as in the ZeRO
 * accounting, plus autocast's 16-bit copies of every matrix kept for backward
 * (torch.autocast caches weight casts; the matmul saves the cast). */
static void test_amp(void **state)
{
    (void)state;
    uint64_t P;
    vf_model *m = llama2_7b_params(&P);
    const uint64_t n_tensors = 32 * 9 + 3;
    vf_estimate_opts o;
    vf_estimate amp, ds;
    vf_error err = {0};
    train_opts(&o, VF_PREC_BF16_MIXED, VF_OPT_ADAMW);
    o.infer.attn = VF_ATTN_FLASH;
    assert_int_equal(vf_estimate_run(m, &o, &ds, &err), VF_OK); /* generic: ZeRO accounting */
    o.runtime = VF_RUNTIME_TRANSFORMERS;
    assert_int_equal(vf_estimate_run(m, &o, &amp, &err), VF_OK);
    assert_int_equal(amp.weights, P * 4 + 128);
    assert_int_equal(amp.gradients, P * 4);
    assert_int_equal(amp.optimizer, P * 8 + 4 * n_tensors);
    assert_int_equal(amp.weights + amp.gradients + amp.optimizer, ds.weights + ds.gradients + ds.optimizer);
    /* activations: + the 16-bit copies of all matrices and the head, + the fp32 residual stream */
    uint64_t matrices = 32ull * (4 * 4096 * 4096 + 3 * 4096 * 11008) + 32000ull * 4096;
    assert_true(amp.activations > ds.activations + 2 * matrices);
    vf_model_free(m);
}

/* Shapes come from files: absurd knobs or shapes are an error, never a wrapped number. */
static void test_out_of_range(void **state)
{
    (void)state;
    vf_model *m = llama2_7b();
    vf_estimate_opts o;
    vf_estimate e;
    vf_error err = {0};
    train_opts(&o, VF_PREC_BF16_MIXED, VF_OPT_ADAMW);
    o.train.micro_batch = 1u << 20;
    o.train.seq_len = 1u << 16;
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_ERANGE);
    o.train.micro_batch = 1ull << 40;
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_EINVAL);
    vf_model_free(m);
}

/* Optimizer state from each definition, for one [4096, 11008] matrix and one
 * 4096-vector, fp32 moments. */
static void test_optimizer_definitions(void **state)
{
    (void)state;
    vf__tcfg c;
    memset(&c, 0, sizeof c);
    c.st_bytes = 4;
    const uint64_t mat[2] = {4096, 11008}, n = 4096ull * 11008, vec[1] = {4096};
    /* AdamW/Adam: exp_avg + exp_avg_sq + the 4-byte step tensor */
    assert_int_equal(vf__optim_state_bytes(VF_OPT_ADAMW, &c, mat, 2, n), 8 * n + 4);
    assert_int_equal(vf__optim_state_bytes(VF_OPT_ADAM, &c, mat, 2, n), 8 * n + 4);
    /* SGD keeps nothing, with momentum one buffer; Lion one moment (Chen et al. 2023) */
    assert_int_equal(vf__optim_state_bytes(VF_OPT_SGD, &c, mat, 2, n), 0);
    assert_int_equal(vf__optim_state_bytes(VF_OPT_SGD_MOMENTUM, &c, mat, 2, n), 4 * n);
    assert_int_equal(vf__optim_state_bytes(VF_OPT_LION, &c, mat, 2, n), 4 * n);
    /* Adafactor (Shazeer & Stern 2018): a row and a column accumulator per matrix */
    assert_int_equal(vf__optim_state_bytes(VF_OPT_ADAFACTOR, &c, mat, 2, n), 4 * (4096 + 11008));
    assert_int_equal(vf__optim_state_bytes(VF_OPT_ADAFACTOR, &c, vec, 1, 4096), 4 * 4096);
    /* bitsandbytes 8-bit: two uint8 states + an fp32 absmax per 256-block each;
     * tensors under 4096 elements keep fp32 states */
    assert_int_equal(vf__optim_state_bytes(VF_OPT_ADAMW_8BIT, &c, mat, 2, n), 2 * n + 2 * 4 * (n / 256));
    assert_int_equal(vf__optim_state_bytes(VF_OPT_PAGED_ADAMW_8BIT, &c, vec, 1, 4095), 8 * 4095);
    assert_int_equal(vf__optim_state_bytes(VF_OPT_ADAMW_8BIT, &c, vec, 1, 4097), 2 * 4097 + 2 * 4 * 17);
    /* pure bf16: moments like the parameter */
    c.st_bytes = 2;
    assert_int_equal(vf__optim_state_bytes(VF_OPT_ADAMW, &c, mat, 2, n), 4 * n + 4);
}

static void test_bad_knobs(void **state)
{
    (void)state;
    vf_model *m = llama2_7b();
    vf_estimate_opts o;
    vf_estimate e;
    vf_error err = {0};
    train_opts(&o, VF_PREC_BF16_MIXED, VF_OPT_ADAMW);
    o.tp = 3;
    o.gpus = 8;
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_EINVAL);
    train_opts(&o, VF_PREC_BF16_MIXED, VF_OPT_ADAMW);
    o.train.offload = VF_OFFLOAD_PARAMS;
    o.train.zero = 2;
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_EINVAL);
    train_opts(&o, VF_PREC_BF16_MIXED, VF_OPT_ADAMW);
    o.train.zero = 2;
    o.train.fsdp = 1;
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_EINVAL);
    train_opts(&o, VF_PREC_BF16_MIXED, VF_OPT_ADAMW);
    o.train.zero = 4;
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_EINVAL);
    train_opts(&o, VF_PREC_BF16_MIXED, VF_OPT_ADAMW);
    o.train.recompute = (vf_recompute)7;
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_EINVAL);
    train_opts(&o, (vf_precision)9, VF_OPT_ADAMW);
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_EINVAL);
    train_opts(&o, VF_PREC_BF16_MIXED, (vf_optimizer)42);
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_EINVAL);
    vf_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seeds_1b_fp32_adam),
        cmocka_unit_test(test_zero_paper_figure1),
        cmocka_unit_test(test_deepspeed_zero3),
        cmocka_unit_test(test_deepspeed_zero2),
        cmocka_unit_test(test_lora_trainable_and_deepspeed_flaw),
        cmocka_unit_test(test_qlora_storage),
        cmocka_unit_test(test_step_temporaries),
        cmocka_unit_test(test_optimizer_definitions),
        cmocka_unit_test(test_amp),
        cmocka_unit_test(test_distribution),
        cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_bad_knobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
