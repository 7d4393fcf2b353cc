/* test_fit.c — GPU lookup, the fit solver's search edges and advice (against a
 * stub estimate whose memory grows with context, batch and 1/GPUs), speed
 * bounds and plan emission. */
#include "testutil.h"

#include "fit_internal.h"

#include <jansson.h>
#include <math.h>

#define GIB (1ull << 30)

/* ---- a stub memory model: the solver must not care what is inside ---- */
static unsigned stub_calls;

static vf_status stub_estimate(const vf_model *m, const vf_estimate_opts *o, vf_estimate *e, vf_error *err)
{
    const vf_hparams *hp = vf_model_hparams(m);
    memset(e, 0, sizeof *e);
    stub_calls++;
    e->mode = o->mode;
    e->starts = true;
    uint32_t tp = o->tp ? o->tp : 1, pp = o->pp ? o->pp : 1;
    uint32_t gpus = o->gpus ? o->gpus : tp * pp;
    if (hp->n_heads % tp)
        return vf__err(err, VF_EINVAL, "", "tp does not divide heads");
    double wbits = 16;
    if (!strcmp(o->weights, "fp8") || !strcmp(o->weights, "int8") || !strcmp(o->weights, "q8_0"))
        wbits = 8;
    else if (o->weights[0])
        wbits = 4;
    uint64_t weights = (uint64_t)(10e9 * wbits / 8); /* 10 B parameters */
    uint64_t kv_tok = !strcmp(o->infer.kv_dtype, "fp8") || !strcmp(o->infer.kv_dtype, "q8_0") ? 65536 : 131072;
    e->weight_bits = wbits;
    e->kv_bytes_per_token = kv_tok;
    if (o->mode == VF_MODE_INFERENCE) {
        uint64_t ctx = o->infer.context ? o->infer.context : hp->context_length;
        uint64_t b = o->infer.batch ? o->infer.batch : 1;
        if (ctx > hp->context_length)
            return vf__err(err, VF_EINVAL, "", "context past the model's limit");
        e->context = ctx;
        e->batch = b;
        e->weights = weights / (tp * pp);
        e->kv_cache = kv_tok * ctx * b / (tp * pp);
        e->activations = o->infer.attn == VF_ATTN_FLASH ? 0 : ctx * b * 4096;
        e->overhead = GIB / 2;
        e->gpus = gpus;
        e->per_gpu_bytes = e->weights + e->kv_cache + e->activations + e->overhead;
    } else {
        uint64_t seq = o->train.seq_len ? o->train.seq_len : 2048;
        uint64_t mb = o->train.micro_batch ? o->train.micro_batch : 1;
        e->context = seq;
        e->batch = mb;
        uint64_t params = 10000000000ull;
        uint64_t train = o->train.lora_rank ? params / 100 : params;
        uint64_t states = train * 16; /* bf16 mixed AdamW: 2+4 master... = 16 B */
        uint64_t shard = o->train.zero >= 3 && gpus > 1 ? gpus : 1;
        e->weights = weights / shard;
        e->optimizer = o->train.offload != VF_OFFLOAD_NONE ? 0 : states / shard;
        e->activations = o->train.recompute == VF_RECOMPUTE_FULL ? seq * mb * 8192 : seq * mb * 262144;
        e->overhead = GIB / 2;
        e->gpus = gpus;
        e->per_gpu_bytes = e->weights + e->optimizer + e->activations + e->overhead;
    }
    e->total_bytes = e->per_gpu_bytes * gpus;
    return VF_OK;
}

static vf_model *stub_model(uint32_t heads, uint64_t ctx)
{
    vf_model *m = vf__model_new(VF_FORMAT_CONFIG, "stub");
    assert_non_null(m);
    m->hp.n_heads = heads;
    m->hp.n_kv_heads = 8;
    m->hp.n_layers = 40;
    m->hp.context_length = ctx;
    return m;
}

static bool stub_fits(const vf_model *m, const vf_estimate_opts *o, uint64_t gpu_bytes)
{
    vf_estimate e;
    vf_estimate_opts x = *o;
    x.gpu_bytes = gpu_bytes;
    if (stub_estimate(m, &x, &e, NULL) != VF_OK)
        return false;
    return e.per_gpu_bytes <= gpu_bytes;
}

/* ---- lookup ---- */
static void test_catalog(void **state)
{
    (void)state;
    assert_true(vf_gpu_count() >= 50);
    for (size_t i = 0; i < vf_gpu_count(); i++) {
        const vf_gpu *g = vf_gpu_get(i);
        assert_true(g->memory_bytes > GIB);
        assert_true(g->source[0] != '\0');
        assert_true(g->bandwidth_gbs > 0);
        assert_true(g->memory_basis[0] != '\0');
    }
    assert_null(vf_gpu_get(vf_gpu_count()));
}

static void test_lookup_forgiving(void **state)
{
    (void)state;
    vf_gpu_choice c;
    const char *spellings[] = {"RTX 4090", "rtx-4090", "rtx4090", "GeForce RTX 4090", "4090"};
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
        assert_int_equal(vf_gpu_lookup(spellings[i], &c, NULL), VF_OK);
        assert_string_equal(c.name, "RTX 4090");
        assert_int_equal(c.count, 1);
        assert_true(c.from_catalog);
    }
    /* PyTorch reports the 4090 as 23.65 GiB (issues cited in data/gpus.json) */
    assert_true(llabs((long long)c.gpu.memory_bytes - (long long)llround(23.65 * GIB)) < 1024 * 1024);
}

static void test_lookup_family_and_count(void **state)
{
    (void)state;
    vf_gpu_choice c;
    assert_int_equal(vf_gpu_lookup("H100", &c, NULL), VF_OK);
    assert_string_equal(c.name, "H100 SXM 80GB");
    assert_non_null(strstr(c.note, "H100 SXM 80GB"));
    /* measured.csv A1a: an H100 reports 79.18 GiB */
    assert_true(llabs((long long)c.gpu.memory_bytes - (long long)llround(79.18 * GIB)) < 1024 * 1024);
    assert_int_equal(vf_gpu_lookup("H100x8", &c, NULL), VF_OK);
    assert_string_equal(c.name, "H100 SXM 80GB");
    assert_int_equal(c.count, 8);
    assert_int_equal(vf_gpu_lookup("8xH100", &c, NULL), VF_OK);
    assert_int_equal(c.count, 8);
    assert_int_equal(vf_gpu_lookup("rtx4090x2", &c, NULL), VF_OK);
    assert_string_equal(c.name, "RTX 4090");
    assert_int_equal(c.count, 2);
    assert_int_equal(vf_gpu_lookup("a10g", &c, NULL), VF_OK);
    /* measured.csv A4: A10G 22.30 GiB */
    assert_true(llabs((long long)c.gpu.memory_bytes - (long long)llround(22.30 * GIB)) < 1024 * 1024);
    assert_int_equal(vf_gpu_lookup("MI250X", &c, NULL), VF_OK);
    assert_string_equal(c.gpu.vendor, "amd");
    assert_int_equal(vf_gpu_lookup("h100 pcie", &c, NULL), VF_OK);
    assert_string_equal(c.name, "H100 PCIe 80GB");
}

static void test_lookup_sizes(void **state)
{
    (void)state;
    vf_gpu_choice c;
    assert_int_equal(vf_gpu_lookup("24GiB", &c, NULL), VF_OK);
    assert_false(c.from_catalog);
    assert_int_equal(c.gpu.memory_bytes, 24 * GIB);
    assert_int_equal(vf_gpu_lookup("80GB", &c, NULL), VF_OK);
    assert_int_equal(c.gpu.memory_bytes, 80000000000ull);
    assert_int_equal(vf_gpu_lookup("80 GB x2", &c, NULL), VF_OK);
    assert_int_equal(c.gpu.memory_bytes, 80000000000ull);
    assert_int_equal(c.count, 2);
    vf_error err;
    assert_int_equal(vf_gpu_lookup("Voodoo 5", &c, &err), VF_EINVAL);
    assert_non_null(strstr(err.msg, "no such gpu"));
    assert_int_equal(vf_gpu_lookup("H100x0", &c, &err), VF_EINVAL);
    assert_int_equal(vf_gpu_lookup("", &c, &err), VF_EINVAL);
    assert_int_equal(vf_gpu_lookup("0GB", &c, &err), VF_EINVAL);
}

/* ---- solver edges ---- */
static void check_edges(const vf_model *m, const vf_estimate_opts *est, uint64_t gpu_bytes, const vf_fit *f)
{
    vf_estimate_opts o = *est;
    if (f->max_context) {
        vf__set_context(&o, f->max_context);
        assert_true(stub_fits(m, &o, gpu_bytes));
        if (!f->max_context_capped) {
            vf__set_context(&o, f->max_context + 1);
            assert_false(stub_fits(m, &o, gpu_bytes));
        }
    } else {
        vf__set_context(&o, 1);
        assert_false(stub_fits(m, &o, gpu_bytes));
    }
    o = *est;
    if (f->max_batch) {
        vf__set_batch(&o, f->max_batch);
        assert_true(stub_fits(m, &o, gpu_bytes));
        vf__set_batch(&o, f->max_batch + 1);
        assert_false(stub_fits(m, &o, gpu_bytes));
    }
}

static void test_fit_edges(void **state)
{
    (void)state;
    vf_model *m = stub_model(64, 131072);
    vf_fit *f = malloc(sizeof *f);
    const uint64_t sizes[] = {16 * GIB, 24 * GIB, 40 * GIB, 80 * GIB, 141 * GIB};
    const uint64_t ctxs[] = {1024, 8192, 32768};
    for (size_t s = 0; s < 5; s++)
        for (size_t k = 0; k < 3; k++) {
            vf_fit_opts fo = {.gpu_bytes = sizes[s], .gpus = 1, .estimate = stub_estimate};
            vf_estimate_opts_init(&fo.est);
            fo.est.infer.context = ctxs[k];
            fo.est.infer.batch = 4;
            assert_int_equal(vf_fit_run(m, &fo, f, NULL), VF_OK);
            assert_int_equal(f->fits, stub_fits(m, &fo.est, sizes[s]));
            assert_int_equal(f->headroom_bytes, (int64_t)sizes[s] - (int64_t)f->needed_bytes);
            check_edges(m, &fo.est, sizes[s], f);
            /* fewest GPUs: fits there, and on no valid smaller count */
            if (f->min_gpus) {
                vf_estimate_opts o = fo.est;
                o.tp = f->min_tp;
                o.pp = f->min_pp;
                o.gpus = f->min_gpus;
                assert_true(stub_fits(m, &o, sizes[s]));
                for (uint32_t n = 1; n < f->min_gpus && n <= 8; n++) {
                    o.tp = n;
                    o.pp = 1;
                    o.gpus = n;
                    assert_false(stub_fits(m, &o, sizes[s]));
                }
            }
        }
    free(f);
    vf_model_free(m);
}

static void test_fit_nothing_fits(void **state)
{
    (void)state;
    vf_model *m = stub_model(64, 4096);
    vf_fit *f = malloc(sizeof *f);
    vf_fit_opts fo = {.gpu_bytes = GIB / 4, .gpus = 1, .estimate = stub_estimate};
    vf_estimate_opts_init(&fo.est);
    assert_int_equal(vf_fit_run(m, &fo, f, NULL), VF_OK);
    assert_false(f->fits);
    assert_int_equal(f->max_context, 0);
    assert_int_equal(f->max_batch, 0);
    assert_int_equal(f->min_gpus, 0); /* the 0.5 GiB overhead alone exceeds each device */
    assert_true(f->headroom_bytes < 0);
    free(f);
    vf_model_free(m);
}

static void test_fit_capped_context(void **state)
{
    (void)state;
    vf_model *m = stub_model(64, 4096);
    vf_fit *f = malloc(sizeof *f);
    vf_fit_opts fo = {.gpu_bytes = 141 * GIB, .gpus = 1, .estimate = stub_estimate};
    vf_estimate_opts_init(&fo.est);
    fo.est.infer.context = 2048;
    assert_int_equal(vf_fit_run(m, &fo, f, NULL), VF_OK);
    assert_true(f->fits);
    assert_int_equal(f->max_context, 4096);
    assert_true(f->max_context_capped);
    assert_int_equal(f->min_gpus, 1);
    assert_int_equal(f->n_suggestions, 0); /* no advice when it fits */
    free(f);
    vf_model_free(m);
}

static void test_fit_min_gpus_tp_valid(void **state)
{
    (void)state;
    /* 40 heads: TP 3, 6, 7 are invalid; 20 GB weights + KV need > 1 x 16 GiB */
    vf_model *m = stub_model(40, 8192);
    vf_fit *f = malloc(sizeof *f);
    vf_fit_opts fo = {.gpu_bytes = 8 * GIB, .gpus = 1, .estimate = stub_estimate};
    vf_estimate_opts_init(&fo.est);
    fo.est.infer.context = 8192;
    assert_int_equal(vf_fit_run(m, &fo, f, NULL), VF_OK);
    assert_false(f->fits);
    assert_true(f->min_gpus > 1);
    assert_int_equal(40 % f->min_tp, 0);
    assert_int_equal(f->min_gpus, f->min_tp * f->min_pp);
    free(f);
    vf_model_free(m);
}

static void test_fit_training_zero3(void **state)
{
    (void)state;
    vf_model *m = stub_model(64, 8192);
    vf_fit *f = malloc(sizeof *f);
    vf_fit_opts fo = {.gpu_bytes = 80 * GIB, .gpus = 1, .estimate = stub_estimate};
    vf_estimate_opts_init(&fo.est);
    fo.est.mode = VF_MODE_TRAINING;
    fo.est.train.seq_len = 2048;
    assert_int_equal(vf_fit_run(m, &fo, f, NULL), VF_OK);
    assert_false(f->fits); /* 160 GB of states */
    assert_true(f->min_gpus > 1);
    assert_true(strstr(f->parallelism, "ZeRO-3") != NULL);
    /* the fewest: min_gpus fits under ZeRO-3, one fewer does not */
    vf_estimate_opts o = fo.est;
    o.train.zero = 3;
    o.gpus = f->min_gpus;
    assert_true(stub_fits(m, &o, fo.gpu_bytes));
    o.gpus = f->min_gpus - 1;
    assert_false(stub_fits(m, &o, fo.gpu_bytes));
    free(f);
    vf_model_free(m);
}

/* ---- advice: every suggestion re-checked, ranked by cost ---- */
static void check_suggestions(const vf_model *m, const vf_fit *f)
{
    for (size_t i = 0; i < f->n_suggestions; i++) {
        const vf_suggestion *s = &f->suggestions[i];
        vf_estimate e;
        vf_estimate_opts x = s->opts;
        x.gpu_bytes = s->gpu_bytes;
        assert_int_equal(stub_estimate(m, &x, &e, NULL), VF_OK);
        assert_int_equal(s->needed_bytes, e.per_gpu_bytes);
        assert_int_equal(s->fits, e.per_gpu_bytes <= s->gpu_bytes);
        if (i)
            assert_true(f->suggestions[i - 1].cost <= s->cost);
    }
}

static const vf_suggestion *find_sugg(const vf_fit *f, const char *prefix)
{
    for (size_t i = 0; i < f->n_suggestions; i++)
        if (!strncmp(f->suggestions[i].change, prefix, strlen(prefix)))
            return &f->suggestions[i];
    return NULL;
}

static void test_advice_inference(void **state)
{
    (void)state;
    vf_model *m = stub_model(64, 131072);
    vf_fit *f = malloc(sizeof *f);
    vf_fit_opts fo = {.gpu_bytes = 24 * GIB, .gpus = 1, .estimate = stub_estimate};
    vf_estimate_opts_init(&fo.est);
    fo.est.runtime = VF_RUNTIME_TRANSFORMERS;
    fo.est.infer.context = 32768;
    fo.est.infer.batch = 2;
    vf_gpu_choice c;
    assert_int_equal(vf_gpu_lookup("RTX 4090", &c, NULL), VF_OK);
    fo.gpu = &c.gpu;
    fo.gpu_bytes = c.gpu.memory_bytes;
    assert_int_equal(vf_fit_run(m, &fo, f, NULL), VF_OK);
    assert_false(f->fits);
    assert_true(f->n_suggestions >= 5);
    check_suggestions(m, f);
    assert_non_null(find_sugg(f, "--kv fp8"));
    assert_non_null(find_sugg(f, "--weights nf4"));
    assert_non_null(find_sugg(f, "--context "));
    assert_non_null(find_sugg(f, "--batch 1"));
    assert_non_null(find_sugg(f, "--attn flash"));
    /* shorter context is exactly the longest that fits: it fits */
    assert_true(find_sugg(f, "--context ")->fits);
    /* a bigger GPU: the smallest catalog GPU that holds it, and it does */
    bool bigger = false;
    for (size_t i = 0; i < f->n_suggestions; i++)
        if (f->suggestions[i].gpu_bytes > fo.gpu_bytes) {
            bigger = true;
            assert_true(f->suggestions[i].fits);
            /* no smaller catalog GPU (still above the 4090) fits */
            for (size_t g = 0; g < vf_gpu_count(); g++) {
                const vf_gpu *gg = vf_gpu_get(g);
                if (strcmp(gg->vendor, "apple") && gg->memory_bytes > fo.gpu_bytes &&
                    gg->memory_bytes < f->suggestions[i].gpu_bytes)
                    assert_false(stub_fits(m, &fo.est, gg->memory_bytes));
            }
        }
    assert_true(bigger);
    free(f);
    vf_model_free(m);
}

static void test_advice_training(void **state)
{
    (void)state;
    vf_model *m = stub_model(64, 8192);
    vf_fit *f = malloc(sizeof *f);
    vf_fit_opts fo = {.gpu_bytes = 80 * GIB, .gpus = 1, .estimate = stub_estimate};
    vf_estimate_opts_init(&fo.est);
    fo.est.mode = VF_MODE_TRAINING;
    fo.est.train.seq_len = 4096;
    fo.est.train.micro_batch = 8;
    assert_int_equal(vf_fit_run(m, &fo, f, NULL), VF_OK);
    assert_false(f->fits);
    check_suggestions(m, f);
    const vf_suggestion *lora = find_sugg(f, "--lora 16");
    assert_non_null(lora);
    assert_true(lora->fits);
    assert_non_null(find_sugg(f, "--recompute full"));
    assert_non_null(find_sugg(f, "--offload optimizer"));
    free(f);
    vf_model_free(m);
}

static vf_status failing_estimate(const vf_model *m, const vf_estimate_opts *o, vf_estimate *e, vf_error *err)
{
    (void)m, (void)o, (void)e;
    return vf__err(err, VF_EUNSUPPORTED, "stub", "no model");
}

static void test_fit_error_propagates(void **state)
{
    (void)state;
    vf_model *m = stub_model(64, 8192);
    vf_fit *f = malloc(sizeof *f);
    vf_fit_opts fo = {.gpu_bytes = 80 * GIB, .estimate = failing_estimate};
    vf_estimate_opts_init(&fo.est);
    vf_error err;
    assert_int_equal(vf_fit_run(m, &fo, f, &err), VF_EUNSUPPORTED);
    fo.gpu_bytes = 0;
    assert_int_equal(vf_fit_run(m, &fo, f, &err), VF_EINVAL);
    free(f);
    vf_model_free(m);
}

/* ---- speed bounds ---- */
static void test_speed_bounds(void **state)
{
    (void)state;
    vf_model *m = stub_model(64, 8192);
    /* give the model 10 B bf16 parameters */
    vf_tensor t = {.name = "w", .dtype = VF_DTYPE_BF16, .n_dims = 1, .shape = {10000000000ull},
                   .n_elements = 10000000000ull, .n_bytes = 20000000000ull, .n_params = 10000000000ull,
                   .file = VF_NO_FILE, .layer = 0};
    assert_non_null(vf__model_add_tensor(m, &t));
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.infer.context = 4096;
    o.infer.batch = 8;
    vf_estimate e;
    assert_int_equal(stub_estimate(m, &o, &e, NULL), VF_OK);
    vf_gpu g = {.name = "test", .bandwidth_gbs = 1000, .tflops_bf16 = 500, .tflops_fp16 = 500};
    vf_speed s;
    vf_speed_bounds(m, &o, &e, &g, 1, &s);
    assert_true(s.known);
    /* one sequence: 1e12 B/s / (20e9 B weights + 131072 B x 4096 tokens of KV) */
    double per_seq = 1e12 / (20e9 + 131072.0 * 4096);
    assert_true(fabs(s.decode_tps_per_seq - per_seq) < 1e-6 * per_seq);
    double batch = 8 * 1e12 / (20e9 + 8 * 131072.0 * 4096);
    assert_true(fabs(s.decode_tps_batch - batch) < 1e-6 * batch);
    /* prefill: 2 x 10e9 x 4096 x 8 / 500e12 */
    double pre = 2 * 10e9 * 4096 * 8 / 500e12;
    assert_true(fabs(s.prefill_seconds - pre) < 1e-9 * pre);
    o.mode = VF_MODE_TRAINING;
    o.train.seq_len = 2048;
    o.train.micro_batch = 4;
    assert_int_equal(stub_estimate(m, &o, &e, NULL), VF_OK);
    vf_speed_bounds(m, &o, &e, &g, 1, &s);
    double step = 6 * 10e9 * 2048 * 4 / 500e12;
    assert_true(fabs(s.train_step_seconds - step) < 1e-9 * step);
    g.bandwidth_gbs = 0; /* a size-only GPU: no bounds */
    vf_speed_bounds(m, &o, &e, &g, 1, &s);
    assert_false(s.known);
    vf_model_free(m);
}

/* ---- plans ---- */
static void test_plan_vllm(void **state)
{
    (void)state;
    vf_model *m = stub_model(64, 131072);
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_VLLM;
    o.tp = 2;
    o.infer.context = 16384;
    o.infer.batch = 32;
    snprintf(o.infer.kv_dtype, sizeof o.infer.kv_dtype, "fp8");
    vf_estimate e;
    assert_int_equal(stub_estimate(m, &o, &e, NULL), VF_OK);
    char buf[1024];
    assert_int_equal(vf_plan_emit(VF_ENGINE_VLLM, m, "meta-llama/Llama-3.1-70B", &o, &e, 80 * GIB, 2, buf,
                                  sizeof buf, NULL),
                     VF_OK);
    assert_string_equal(buf, "vllm serve meta-llama/Llama-3.1-70B --tensor-parallel-size 2 --max-model-len 16384 "
                             "--gpu-memory-utilization 0.90 --kv-cache-dtype fp8 --max-num-seqs 32\n");
    char tiny[16];
    assert_int_equal(vf_plan_emit(VF_ENGINE_VLLM, m, "x", &o, &e, 80 * GIB, 2, tiny, sizeof tiny, NULL), VF_ERANGE);
    vf_model_free(m);
}

static void test_plan_llamacpp(void **state)
{
    (void)state;
    vf_model *m = stub_model(64, 131072);
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_LLAMACPP;
    o.infer.context = 8192;
    o.infer.parallel = 2;
    o.infer.flash_attn = 1;
    snprintf(o.infer.kv_dtype, sizeof o.infer.kv_dtype, "q8_0");
    vf_estimate e;
    assert_int_equal(stub_estimate(m, &o, &e, NULL), VF_OK);
    char buf[1024];
    assert_int_equal(vf_plan_emit(VF_ENGINE_LLAMACPP, m, "model Q4.gguf", &o, &e, 24 * GIB, 2, buf, sizeof buf, NULL),
                     VF_OK);
    /* -c is the total over the two slots; 40 layers + output = 41 */
    assert_string_equal(buf, "llama-server -m 'model Q4.gguf' -ngl 41 -c 16384 -b 2048 -ub 512 -np 2 "
                             "--tensor-split 1,1 -ctk q8_0 -ctv q8_0 -fa on\n");
    vf_model_free(m);
}

static void test_plan_deepspeed(void **state)
{
    (void)state;
    vf_model *m = stub_model(64, 8192);
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.mode = VF_MODE_TRAINING;
    o.train.zero = 3;
    o.train.offload = VF_OFFLOAD_BOTH;
    o.train.micro_batch = 2;
    o.train.grad_accum = 8;
    o.train.recompute = VF_RECOMPUTE_FULL;
    vf_estimate e;
    assert_int_equal(stub_estimate(m, &o, &e, NULL), VF_OK);
    char buf[2048];
    assert_int_equal(vf_plan_emit(VF_ENGINE_DEEPSPEED, m, "x", &o, &e, 80 * GIB, 4, buf, sizeof buf, NULL), VF_OK);
    json_error_t je;
    json_t *j = json_loads(buf, 0, &je);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "train_micro_batch_size_per_gpu")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "gradient_accumulation_steps")), 8);
    assert_int_equal(json_integer_value(json_object_get(j, "train_batch_size")), 2 * 8 * 4);
    assert_true(json_is_true(json_object_get(json_object_get(j, "bf16"), "enabled")));
    json_t *z = json_object_get(j, "zero_optimization");
    assert_int_equal(json_integer_value(json_object_get(z, "stage")), 3);
    assert_string_equal(json_string_value(json_object_get(json_object_get(z, "offload_param"), "device")), "cpu");
    assert_string_equal(json_string_value(json_object_get(json_object_get(z, "offload_optimizer"), "device")), "cpu");
    assert_non_null(json_object_get(j, "activation_checkpointing"));
    json_decref(j);
    vf_engine en;
    assert_int_equal(vf_engine_parse("llama.cpp", &en), VF_OK);
    assert_int_equal(en, VF_ENGINE_LLAMACPP);
    assert_int_equal(vf_engine_parse("tgi", &en), VF_EINVAL);
    vf_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_catalog),
        cmocka_unit_test(test_lookup_forgiving),
        cmocka_unit_test(test_lookup_family_and_count),
        cmocka_unit_test(test_lookup_sizes),
        cmocka_unit_test(test_fit_edges),
        cmocka_unit_test(test_fit_nothing_fits),
        cmocka_unit_test(test_fit_capped_context),
        cmocka_unit_test(test_fit_min_gpus_tp_valid),
        cmocka_unit_test(test_fit_training_zero3),
        cmocka_unit_test(test_advice_inference),
        cmocka_unit_test(test_advice_training),
        cmocka_unit_test(test_fit_error_propagates),
        cmocka_unit_test(test_speed_bounds),
        cmocka_unit_test(test_plan_vllm),
        cmocka_unit_test(test_plan_llamacpp),
        cmocka_unit_test(test_plan_deepspeed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
