/* test_fit.c — GPU lookup, the fit solver's search edges and advice (against a
 * stub estimate whose memory grows with context, batch and 1/GPUs), speed
 * bounds and plan emission. */
#include "testutil.h"

#include "answer/fit_internal.h"

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

/* A fit on one device of gpu_bytes against the stub estimator, default options. */
static vf_fit_opts stub_fit_opts(uint64_t gpu_bytes)
{
    vf_fit_opts fo = {.gpu_bytes = gpu_bytes, .gpus = 1};
    vf_estimate_opts_init(&fo.est);
    return fo;
}

/* how many estimates were priced without a device name */
static unsigned unnamed_calls;

static vf_status naming_estimate(const vf_model *m, const vf_estimate_opts *o, vf_estimate *e, vf_error *err)
{
    if (!o->infer.gpu_name[0])
        unnamed_calls++;
    return stub_estimate(m, o, e, err);
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
            vf_fit_opts fo = stub_fit_opts(sizes[s]);
            fo.est.infer.context = ctxs[k];
            fo.est.infer.batch = 4;
            assert_int_equal(vf__fit_run_with(m, &fo, stub_estimate, f, NULL), VF_OK);
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
    vf_fit_opts fo = stub_fit_opts(GIB / 4);
    assert_int_equal(vf__fit_run_with(m, &fo, stub_estimate, f, NULL), VF_OK);
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
    vf_fit_opts fo = stub_fit_opts(141 * GIB);
    fo.est.infer.context = 2048;
    assert_int_equal(vf__fit_run_with(m, &fo, stub_estimate, f, NULL), VF_OK);
    assert_true(f->fits);
    assert_int_equal(f->max_context, 4096);
    assert_true(f->max_context_capped);
    assert_int_equal(f->min_gpus, 1);
    assert_int_equal(f->n_suggestions, 0); /* no advice when it fits */
    free(f);
    vf_model_free(m);
}

/* A library caller names the GPU once, in fo.gpu: every estimate the fit
 * runs (its own, the searches', the fewest-GPUs layouts') is priced on it,
 * as the CLI's are. */
static void test_fit_searches_priced_on_the_device(void **state)
{
    (void)state;
    vf_model *m = stub_model(40, 8192);
    vf_fit *f = malloc(sizeof *f);
    vf_gpu_choice g;
    assert_int_equal(vf_gpu_lookup("H100", &g, NULL), VF_OK);
    vf_fit_opts fo = stub_fit_opts(8 * GIB);
    fo.gpu = &g.gpu;
    fo.est.infer.context = 8192;
    unnamed_calls = 0;
    assert_int_equal(vf__fit_run_with(m, &fo, naming_estimate, f, NULL), VF_OK);
    assert_true(f->min_gpus > 1); /* the search ran */
    assert_int_equal(unnamed_calls, 0);
    free(f);
    vf_model_free(m);
}

static void test_fit_min_gpus_tp_valid(void **state)
{
    (void)state;
    /* 40 heads: TP 3, 6, 7 are invalid; 20 GB weights + KV need > 1 x 16 GiB */
    vf_model *m = stub_model(40, 8192);
    vf_fit *f = malloc(sizeof *f);
    vf_fit_opts fo = stub_fit_opts(8 * GIB);
    fo.est.infer.context = 8192;
    assert_int_equal(vf__fit_run_with(m, &fo, stub_estimate, f, NULL), VF_OK);
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
    vf_fit_opts fo = stub_fit_opts(80 * GIB);
    fo.est.mode = VF_MODE_TRAINING;
    fo.est.train.seq_len = 2048;
    assert_int_equal(vf__fit_run_with(m, &fo, stub_estimate, f, NULL), VF_OK);
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
    vf_fit_opts fo = stub_fit_opts(24 * GIB);
    fo.est.runtime = VF_RUNTIME_TRANSFORMERS;
    fo.est.infer.context = 32768;
    fo.est.infer.batch = 2;
    vf_gpu_choice c;
    assert_int_equal(vf_gpu_lookup("RTX 4090", &c, NULL), VF_OK);
    fo.gpu = &c.gpu;
    fo.gpu_bytes = c.gpu.memory_bytes;
    assert_int_equal(vf__fit_run_with(m, &fo, stub_estimate, f, NULL), VF_OK);
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

/* Training 4096 tokens x 8 on one device that cannot hold it: advice follows. */
static void fit_advice_training(const vf_model *m, uint64_t gpu_bytes, vf_fit *f)
{
    vf_fit_opts fo = stub_fit_opts(gpu_bytes);
    fo.est.mode = VF_MODE_TRAINING;
    fo.est.train.seq_len = 4096;
    fo.est.train.micro_batch = 8;
    assert_int_equal(vf__fit_run_with(m, &fo, stub_estimate, f, NULL), VF_OK);
    assert_false(f->fits);
    check_suggestions(m, f);
}

static void test_advice_training(void **state)
{
    (void)state;
    vf_model *m = stub_model(64, 8192);
    vf_fit *f = malloc(sizeof *f);
    fit_advice_training(m, 80 * GIB, f);
    const vf_suggestion *lora = find_sugg(f, "--lora-rank 16");
    assert_non_null(lora);
    assert_true(lora->fits);
    assert_non_null(find_sugg(f, "--grad-checkpoint full"));
    assert_non_null(find_sugg(f, "--zero 2 --offload optimizer"));
    free(f);
    vf_model_free(m);
}

static void test_advice_combined(void **state)
{
    (void)state;
    /* 24 GiB: LoRA alone leaves 8.6 GB of activations (no fit), checkpointing
     * alone leaves 160 GB of states (no fit); together they fit */
    vf_model *m = stub_model(64, 8192);
    vf_fit *f = malloc(sizeof *f);
    fit_advice_training(m, 24 * GIB, f);
    assert_false(find_sugg(f, "--lora-rank 16")->fits);
    assert_false(find_sugg(f, "--grad-checkpoint full")->fits);
    bool combo = false;
    for (size_t i = 0; i < f->n_suggestions; i++) {
        const vf_suggestion *sg = &f->suggestions[i];
        if (strstr(sg->change, "--grad-checkpoint full") && strstr(sg->change, "--lora-rank 16")) {
            combo = true;
            assert_true(sg->fits);
            assert_int_equal(sg->opts.train.recompute, VF_RECOMPUTE_FULL);
            assert_int_equal(sg->opts.train.lora_rank, 16);
        }
    }
    assert_true(combo);
    free(f);
    vf_model_free(m);
}

/* A vLLM-like stub: takes 90% of the device; starts when the rest fits there. */
static vf_status grab_estimate(const vf_model *m, const vf_estimate_opts *o, vf_estimate *e, vf_error *err)
{
    vf_status st = stub_estimate(m, o, e, err);
    if (st != VF_OK)
        return st;
    uint64_t pool = o->gpu_bytes / 10 * 9;
    e->starts = e->per_gpu_bytes <= pool;
    if (e->starts)
        e->per_gpu_bytes = pool;
    return VF_OK;
}

static void test_fit_needed_device_dependent(void **state)
{
    (void)state;
    vf_model *m = stub_model(64, 131072);
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.infer.context = 8192;
    vf_estimate e;
    assert_int_equal(stub_estimate(m, &o, &e, NULL), VF_OK);
    uint64_t base = e.per_gpu_bytes, needed = 0;
    assert_int_equal(vf__fit_needed_bytes(m, &o, grab_estimate, &needed, NULL), VF_OK);
    /* the smallest device whose 90% holds it */
    assert_true(needed / 10 * 9 >= base);
    assert_true((needed - 1) / 10 * 9 < base);
    assert_int_equal(vf__fit_needed_bytes(m, &o, stub_estimate, &needed, NULL), VF_OK);
    assert_int_equal(needed, base);
    vf_fit *f = malloc(sizeof *f);
    vf_fit_opts fo = {.est = o, .gpu_bytes = 80 * GIB, .gpus = 1};
    assert_int_equal(vf__fit_run_with(m, &fo, grab_estimate, f, NULL), VF_OK);
    assert_true(f->fits);
    assert_int_equal(f->headroom_bytes, (int64_t)(80 * GIB) - (int64_t)f->needed_bytes);
    assert_true(f->needed_bytes < 80 * GIB / 10 * 9); /* not the 90% it grabs */
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
    vf_fit_opts fo = {.gpu_bytes = 80 * GIB};
    vf_estimate_opts_init(&fo.est);
    vf_error err;
    assert_int_equal(vf__fit_run_with(m, &fo, failing_estimate, f, &err), VF_EUNSUPPORTED);
    fo.gpu_bytes = 0;
    assert_int_equal(vf__fit_run_with(m, &fo, failing_estimate, f, &err), VF_EINVAL);
    free(f);
    vf_model_free(m);
}

/* ---- speed bounds ---- */
/* Past one GPU group: the pipeline bubble (p - 1) / (m + p - 1), a sequence's
 * prefill on one stage group, the batch on every stage, and the bytes that
 * cross nodes at the stated 50 GB/s per GPU. Figures by hand from the stub's
 * 10 B bf16 parameters. */
static void test_speed_pipeline_nodes(void **state)
{
    (void)state;
    vf_model *m = stub_model(64, 8192);
    m->hp.hidden_size = 4096;
    vf_tensor t = {.name = "w", .dtype = VF_DTYPE_BF16, .n_dims = 1, .shape = {10000000000ull},
                   .n_elements = 10000000000ull, .n_bytes = 20000000000ull, .n_params = 10000000000ull,
                   .file = VF_NO_FILE, .layer = 0};
    assert_non_null(vf__model_add_tensor(m, &t));
    vf_gpu g = {.name = "test", .bandwidth_gbs = 1000, .tflops_bf16 = 500, .tflops_fp16 = 500, .max_per_node = 8};
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.infer.context = 4096;
    o.infer.batch = 8;
    o.tp = 8;
    o.pp = 2;
    vf_estimate e;
    assert_int_equal(stub_estimate(m, &o, &e, NULL), VF_OK);
    vf_speed s;
    vf_speed_bounds(m, &o, &e, &g, 16, &s);
    assert_int_equal(s.pp, 2);
    assert_int_equal(s.nodes, 2);
    /* one sequence's prompt on one stage group of 8: 2 x 10e9 x 4096 / (8 x 500e12) */
    double pre = 2 * 10e9 * 4096 / (8 * 500e12);
    assert_true(fabs(s.prefill_seconds - pre) < 1e-9 * pre);
    /* its hidden states (4096 tokens x 4096 x 2 B) cross one node boundary at 50 GB/s */
    double x = 4096.0 * 4096 * 2 / 50e9;
    assert_true(fabs(s.internode_seconds - x) < 1e-9 * x);
    assert_true(fabs(s.internode_gbs - 50) < 1e-12);
    /* the batch: both stages busy, 8 x 8 x 1e12 x 2 / (20e9 + 8 x KV) */
    double batch = 8 * 8e12 * 2 / (20e9 + 8 * 131072.0 * 4096);
    assert_true(fabs(s.decode_tps_batch - batch) < 1e-6 * batch);
    /* training: 4 stages, 8 micro-batches: 3 / 11 idle; tp 1 x pp 4 over 32 GPUs on 4 nodes, ZeRO-3 */
    o.mode = VF_MODE_TRAINING;
    o.tp = 1;
    o.pp = 4;
    o.train.seq_len = 2048;
    o.train.micro_batch = 1;
    o.train.grad_accum = 8;
    o.train.zero = 3;
    assert_int_equal(stub_estimate(m, &o, &e, NULL), VF_OK);
    vf_speed_bounds(m, &o, &e, &g, 32, &s);
    assert_true(fabs(s.pp_bubble - 3.0 / 11.0) < 1e-12);
    double step = 6 * 10e9 / 4 * 2048 * 8 / 500e12 / (1 - 3.0 / 11.0);
    assert_true(fabs(s.train_step_seconds - step) < 1e-9 * step);
    /* ZeRO-3 collectives per GPU: 3 x 2 B x 10e9 / 4 stages x 31/32, over 50 GB/s */
    double coll = 3 * 2 * 10e9 / 4 * 31.0 / 32 / 50e9;
    assert_true(fabs(s.internode_seconds - coll) < 1e-9 * coll);
    vf_model_free(m);
}

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
    assert_int_equal(s.batch, 8);
    /* a KV pool that holds 2.5 sequences of this length: 2 decode at once */
    e.max_concurrency = 2.5;
    vf_speed_bounds(m, &o, &e, &g, 1, &s);
    assert_int_equal(s.batch, 2);
    batch = 2 * 1e12 / (20e9 + 2 * 131072.0 * 4096);
    assert_true(fabs(s.decode_tps_batch - batch) < 1e-6 * batch);
    /* prefill of one sequence: 2 x 10e9 x 4096 / 500e12 */
    double pre = 2 * 10e9 * 4096 / 500e12;
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
    /* -c is llama.cpp's total, shared by the two slots; 40 layers + output = 41 */
    assert_string_equal(buf, "llama-server -m 'model Q4.gguf' -ngl 41 -c 8192 -b 2048 -ub 512 -np 2 "
                             "--tensor-split 1,1 -ctk q8_0 -ctv q8_0 -fa on\n");
    vf_model_free(m);
}

/* The ds_config.json a DeepSpeed plan writes: the lines after its "#
 * ds_config.json" heading up to the next comment line. */
static json_t *ds_config_of(const char *plan, json_error_t *je)
{
    const char *h = strstr(plan, "# ds_config.json\n");
    if (!h)
        return NULL;
    h += strlen("# ds_config.json\n");
    const char *end = strstr(h, "\n#");
    return json_loadb(h, end ? (size_t)(end - h) + 1 : strlen(h), JSON_REJECT_DUPLICATES, je);
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
    char buf[4096];
    assert_int_equal(vf_plan_emit(VF_ENGINE_DEEPSPEED, m, "x", &o, &e, 80 * GIB, 4, buf, sizeof buf, NULL), VF_OK);
    json_error_t je;
    json_t *j = ds_config_of(buf, &je);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "train_micro_batch_size_per_gpu")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "gradient_accumulation_steps")), 8);
    assert_int_equal(json_integer_value(json_object_get(j, "train_batch_size")), 2 * 8 * 4);
    assert_true(json_is_true(json_object_get(json_object_get(j, "bf16"), "enabled")));
    json_t *z = json_object_get(j, "zero_optimization");
    assert_int_equal(json_integer_value(json_object_get(z, "stage")), 3);
    assert_string_equal(json_string_value(json_object_get(json_object_get(z, "offload_param"), "device")), "cpu");
    assert_string_equal(json_string_value(json_object_get(json_object_get(z, "offload_optimizer"), "device")), "cpu");
    /* recomputation is the model's gradient checkpointing, switched on by the
     * Trainer; DeepSpeed's activation_checkpointing block would not reach a
     * Hugging Face model */
    assert_null(json_object_get(j, "activation_checkpointing"));
    assert_non_null(strstr(buf, "\nTrainingArguments(per_device_train_batch_size=2, gradient_accumulation_steps=8, "
                                "bf16=True, gradient_checkpointing=True, deepspeed=\"ds_config.json\")\n"));
    assert_non_null(strstr(buf, "\ndeepspeed --num_gpus 4 train.py --deepspeed ds_config.json\n"));
    json_decref(j);
    /* 12 GPUs on nodes of 8: the launchers start 8 ranks on each of 2 nodes, and
     * the config's global batch counts all 16 (DeepSpeed checks it against the
     * world size) */
    char big[8192];
    assert_int_equal(vf_plan_emit_nodes(VF_ENGINE_DEEPSPEED, m, "x", &o, &e, 80 * GIB, 12, 8, big, sizeof big, NULL),
                     VF_OK);
    j = ds_config_of(big, &je);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "train_batch_size")), 2 * 8 * 16);
    assert_non_null(strstr(big, "\nnode1 slots=8\nnode2 slots=8\n#"));
    assert_non_null(strstr(big, "--num_nodes 2 --num_gpus 8 "));
    assert_non_null(strstr(big, "torchrun --nnodes 2 --nproc-per-node 8 --node-rank NODE_RANK "));
    json_decref(j);
    vf_engine en;
    assert_int_equal(vf_engine_parse("llama.cpp", &en), VF_OK);
    assert_int_equal(en, VF_ENGINE_LLAMACPP);
    assert_int_equal(vf_engine_parse("tgi", &en), VF_EINVAL);
    vf_model_free(m);
}


/* ---- emitted flags against the engines' documented lists (tests/data/plan) ---- */
typedef struct flagdoc {
    char flag[64];
    char values[256]; /* "" = any value; else "a|b|c" */
} flagdoc;

static size_t load_flags(const char *path, flagdoc *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[512];
    size_t n = 0;
    while (fgets(line, sizeof line, f) && n < cap) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        line[strcspn(line, "\n")] = '\0';
        char *sp = strchr(line, ' ');
        out[n].values[0] = '\0';
        if (sp) {
            *sp = '\0';
            snprintf(out[n].values, sizeof out[n].values, "%.255s", sp + 1);
        }
        snprintf(out[n].flag, sizeof out[n].flag, "%.63s", line);
        n++;
    }
    fclose(f);
    return n;
}

static bool value_allowed(const char *values, const char *v)
{
    if (!values[0])
        return true;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", values);
    for (char *save = NULL, *t = strtok_r(buf, "|", &save); t; t = strtok_r(NULL, "|", &save))
        if (!strcmp(t, v))
            return true;
    return false;
}

/* Every "-x" token of cmd (after the program and its subcommand) is a documented
 * flag, and its value is one the documentation allows. */
static void check_cmd(const char *cmd, const flagdoc *doc, size_t n)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", cmd);
    char *tok[64];
    size_t k = 0;
    for (char *save = NULL, *t = strtok_r(buf, " \n", &save); t && k < 64; t = strtok_r(NULL, " \n", &save))
        tok[k++] = t;
    size_t flags = 0;
    for (size_t i = 0; i < k; i++) {
        if (tok[i][0] != '-')
            continue;
        flags++;
        size_t d = 0;
        while (d < n && strcmp(doc[d].flag, tok[i]))
            d++;
        if (d == n)
            fail_msg("'%s' is not a documented flag (in: %s)", tok[i], cmd);
        if (doc[d].values[0]) {
            assert_true(i + 1 < k);
            if (!value_allowed(doc[d].values, tok[i + 1]))
                fail_msg("'%s %s' is not a documented value (in: %s)", tok[i], tok[i + 1], cmd);
        }
    }
    assert_true(flags >= 4);
}

static void test_plan_flags_documented(void **state)
{
    (void)state;
    flagdoc vdoc[32], ldoc[32];
    size_t nv = load_flags("tests/data/plan/vllm-flags.txt", vdoc, 32);
    size_t nl = load_flags("tests/data/plan/llamacpp-flags.txt", ldoc, 32);
    assert_true(nv >= 6 && nl >= 9);
    vf_model *m = stub_model(64, 131072);
    const char *kvs[] = {"", "fp8", "fp8_e5m2", "f8_e4m3", "bf16"};
    const char *ws[] = {"", "fp8", "awq", "nf4", "gptq-int4", "bf16"};
    char buf[1024];
    for (size_t i = 0; i < 5; i++)
        for (size_t j = 0; j < 6; j++) {
            vf_estimate_opts o;
            vf_estimate_opts_init(&o);
            o.runtime = VF_RUNTIME_VLLM;
            o.tp = (uint32_t)(1 + j % 3);
            o.pp = (uint32_t)(1 + i % 2);
            o.infer.enforce_eager = i == 2;
            o.infer.context = 4096;
            snprintf(o.infer.kv_dtype, sizeof o.infer.kv_dtype, "%s", kvs[i]);
            snprintf(o.weights, sizeof o.weights, "%s", ws[j]);
            vf_estimate e;
            memset(&e, 0, sizeof e);
            e.context = 4096;
            e.batch = 3;
            assert_int_equal(vf_plan_emit(VF_ENGINE_VLLM, m, "org/model", &o, &e, 80 * GIB, o.tp * o.pp, buf,
                                          sizeof buf, NULL),
                             VF_OK);
            assert_true(!strncmp(buf, "vllm serve org/model ", 21));
            check_cmd(buf + 11, vdoc, nv);
        }
    const char *lkvs[] = {"", "q8_0", "q4_0", "f16,q8_0", "Q8_0", "bf16"};
    for (size_t i = 0; i < 6; i++)
        for (int fa = -1; fa <= 1; fa++) {
            vf_estimate_opts o;
            vf_estimate_opts_init(&o);
            o.runtime = VF_RUNTIME_LLAMACPP;
            o.infer.flash_attn = fa;
            o.infer.n_gpu_layers = (int32_t)i * 5 - 1;
            o.mmproj = i == 4 ? "mmproj-F16.gguf" : NULL;
            snprintf(o.infer.kv_dtype, sizeof o.infer.kv_dtype, "%s", lkvs[i]);
            vf_estimate e;
            memset(&e, 0, sizeof e);
            e.context = 2048;
            assert_int_equal(vf_plan_emit(VF_ENGINE_LLAMACPP, m, "m.gguf", &o, &e, 24 * GIB, (uint32_t)(1 + i % 3),
                                          buf, sizeof buf, NULL),
                             VF_OK);
            assert_true(!strncmp(buf, "llama-server ", 13));
            assert_true((strstr(buf, " --mmproj mmproj-F16.gguf") != NULL) == (i == 4)); /* the projector priced */
            check_cmd(buf + 13, ldoc, nl);
        }
    vf_model_free(m);
}

/* Every key path of the DeepSpeed JSON is documented. */
static void check_ds_paths(json_t *j, const char *prefix, char (*keys)[96], size_t n)
{
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v)
    {
        char path[192];
        snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", k);
        size_t d = 0;
        while (d < n && strcmp(keys[d], path))
            d++;
        if (d == n)
            fail_msg("'%s' is not a documented DeepSpeed key", path);
        if (json_is_object(v))
            check_ds_paths(v, path, keys, n);
    }
}

static void test_plan_deepspeed_documented(void **state)
{
    (void)state;
    char keys[64][96];
    size_t n = 0;
    FILE *f = fopen("tests/data/plan/deepspeed-keys.txt", "r");
    assert_non_null(f);
    char line[256];
    while (fgets(line, sizeof line, f) && n < 64) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        line[strcspn(line, "\n")] = '\0';
        snprintf(keys[n++], sizeof keys[0], "%.95s", line);
    }
    fclose(f);
    vf_model *m = stub_model(64, 8192);
    for (int z = 0; z <= 3; z++)
        for (int off = 0; off < 4; off++)
            for (int rc = 0; rc < 3; rc++) {
                vf_estimate_opts o;
                vf_estimate_opts_init(&o);
                o.mode = VF_MODE_TRAINING;
                o.train.zero = z;
                o.train.offload = (vf_offload)off;
                o.train.recompute = (vf_recompute)rc;
                o.train.precision = rc == 1 ? VF_PREC_FP16_MIXED : VF_PREC_BF16_MIXED;
                o.train.offload_nvme = off == 3 && z == 3;
                vf_estimate e;
                memset(&e, 0, sizeof e);
                char buf[4096];
                assert_int_equal(vf_plan_emit(VF_ENGINE_DEEPSPEED, m, "x", &o, &e, 80 * GIB, 8, buf, sizeof buf, NULL),
                                 VF_OK);
                json_error_t je;
                json_t *j = ds_config_of(buf, &je);
                if (!j)
                    fail_msg("not JSON: %s", je.text);
                check_ds_paths(j, "", keys, n);
                json_t *zo = json_object_get(j, "zero_optimization");
                const char *devs[] = {"cpu", "nvme"};
                json_t *op = json_object_get(zo, "offload_param");
                if (op) { /* documented: parameter offload is ZeRO-3 only */
                    assert_int_equal(json_integer_value(json_object_get(zo, "stage")), 3);
                    const char *d = json_string_value(json_object_get(op, "device"));
                    assert_true(!strcmp(d, devs[0]) || !strcmp(d, devs[1]));
                }
                json_decref(j);
            }
    vf_model_free(m);
}

/* ---- the real memory model over catalog models: fit agrees with estimate at
 * the edges ---- */
static bool real_fits(const vf_model *m, const vf_estimate_opts *o, uint64_t gpu_bytes)
{
    vf_estimate *e = malloc(sizeof *e);
    vf_estimate_opts x = *o;
    x.gpu_bytes = gpu_bytes;
    /* what the device holds and the margin the runtime keeps beside it */
    bool ok = vf_estimate_run(m, &x, e, NULL) == VF_OK && e->starts && e->margin_bytes <= gpu_bytes &&
              e->per_gpu_bytes <= gpu_bytes - e->margin_bytes;
    free(e);
    return ok;
}

static void test_fit_catalog_properties(void **state)
{
    (void)state;
    const char *models[] = {"Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B", "Qwen/Qwen3-30B-A3B",
                            "mistralai/Mixtral-8x7B-v0.1", "google/gemma-2-9b", "meta-llama/Llama-3.2-1B"};
    const char *gpus[] = {"RTX 4090", "L40S", "H100"};
    const vf_runtime rts[] = {VF_RUNTIME_GENERIC, VF_RUNTIME_TRANSFORMERS, VF_RUNTIME_VLLM, VF_RUNTIME_LLAMACPP};
    vf_fit *f = malloc(sizeof *f);
    size_t checked = 0;
    for (size_t mi = 0; mi < sizeof models / sizeof models[0]; mi++) {
        vf_model *m = NULL;
        vf_error err;
        if (vf_model_open(models[mi], &m, &err) != VF_OK)
            fail_msg("%s: %s", models[mi], err.msg);
        for (size_t gi = 0; gi < 3; gi++)
            for (size_t ri = 0; ri < 4; ri++) {
                vf_gpu_choice c;
                assert_int_equal(vf_gpu_lookup(gpus[gi], &c, NULL), VF_OK);
                vf_fit_opts fo = {.gpu_bytes = c.gpu.memory_bytes, .gpus = 1, .gpu = &c.gpu};
                vf_estimate_opts_init(&fo.est);
                fo.est.runtime = rts[ri];
                fo.est.infer.context = 8192;
                if (rts[ri] == VF_RUNTIME_VLLM)
                    fo.est.infer.max_model_len = 8192;
                if (vf_fit_run(m, &fo, f, NULL) != VF_OK)
                    continue;
                checked++;
                /* fit prices each estimate as the device it checks against */
                vf_estimate_opts named = fo.est;
                snprintf(named.infer.gpu_name, sizeof named.infer.gpu_name, "%s", c.gpu.name);
                assert_int_equal(f->fits, real_fits(m, &named, fo.gpu_bytes));
                vf_estimate_opts o = named;
                if (f->max_context) {
                    vf__set_context(&o, f->max_context);
                    assert_true(real_fits(m, &o, fo.gpu_bytes));
                    if (!f->max_context_capped) {
                        vf__set_context(&o, f->max_context + 1);
                        assert_false(real_fits(m, &o, fo.gpu_bytes));
                    }
                }
                o = named;
                if (f->max_batch && !f->max_batch_capped) {
                    vf__set_batch(&o, f->max_batch);
                    assert_true(real_fits(m, &o, fo.gpu_bytes));
                    vf__set_batch(&o, f->max_batch + 1);
                    assert_false(real_fits(m, &o, fo.gpu_bytes));
                }
                if (f->min_gpus) {
                    o = named;
                    o.gpus = f->min_gpus;
                    o.tp = f->min_tp;
                    o.pp = f->min_pp;
                    if (rts[ri] == VF_RUNTIME_LLAMACPP) {
                        o.tp = o.pp = 0;
                        o.infer.n_split = f->min_gpus;
                        for (uint32_t i = 0; i < f->min_gpus && i < VF_MAX_SPLIT; i++)
                            o.infer.tensor_split[i] = 1;
                    }
                    assert_true(real_fits(m, &o, fo.gpu_bytes));
                }
                for (size_t i = 0; i < f->n_suggestions; i++) {
                    const vf_suggestion *sg = &f->suggestions[i];
                    vf_estimate *e = malloc(sizeof *e);
                    vf_estimate_opts x = sg->opts;
                    x.gpu_bytes = sg->gpu_bytes;
                    assert_int_equal(vf_estimate_run(m, &x, e, NULL), VF_OK);
                    assert_int_equal(sg->fits, e->starts && e->per_gpu_bytes + e->margin_bytes <= sg->gpu_bytes);
                    /* needed: the estimate and its margin, or where it depends
                     * on the device (vLLM) the smallest device it fits on,
                     * the device's class (vLLM's defaults) that of the GPU
                     * asked (test_fit_needed.c checks every size above) */
                    if (sg->needed_bytes != e->per_gpu_bytes + e->margin_bytes) {
                        vf_estimate_opts held = sg->opts;
                        held.infer.gpu_class_bytes = sg->gpu_bytes;
                        assert_true(real_fits(m, &held, sg->needed_bytes));
                        assert_false(real_fits(m, &held, sg->needed_bytes - 1));
                    }
                    free(e);
                }
            }
        vf_model_free(m);
    }
    free(f);
    assert_true(checked > 0);
}

/* The stub's per-GPU bytes at its default context for n devices, written out
 * again here from its definition: 10 B bf16 weights and 131072 B of KV per
 * token over n, 4096 B of activations per token and 0.5 GiB on every GPU. */
static uint64_t stub_per_gpu(uint64_t ctx, uint32_t n)
{
    return 20000000000ull / n + 131072ull * ctx / n + ctx * 4096 + GIB / 2;
}

static bool stub_tp_ok(uint32_t tp) /* the stub model's 32 heads and 8 KV heads */
{
    return 32 % tp == 0 && (8 % tp == 0 || tp % 8 == 0);
}

/* vf_fit_catalog: every catalog GPU, the fewest devices by the stub's own
 * arithmetic (tensor parallel inside the GPU's node, pipeline stages past
 * it), least total memory first. */
static void test_fit_catalog_table(void **state)
{
    (void)state;
    vf_model *m = stub_model(32, 4096);
    vf_fit_opts fo = stub_fit_opts(0);
    size_t n = vf_gpu_count(), got = 0;
    vf_fit_row *rows = calloc(n, sizeof *rows);
    assert_int_equal(vf__fit_catalog_with(m, &fo, stub_estimate, rows, n, &got, NULL), VF_OK);
    assert_int_equal(got, n); /* the generic runtime runs on every catalog GPU */
    size_t fitting = 0;
    for (size_t i = 0; i < got; i++) {
        const vf_fit_row *r = &rows[i];
        uint64_t mem = r->gpu->memory_bytes;
        uint32_t node = r->gpu->max_per_node;
        /* the expected count: the first tensor-parallel size in a node that fits,
         * else the fewest stages of the largest valid one */
        uint32_t want = 0, best_tp = 1;
        for (uint32_t t = 1; t <= node && !want; t++)
            if (stub_tp_ok(t)) {
                best_tp = t;
                if (stub_per_gpu(4096, t) <= mem)
                    want = t;
            }
        for (uint32_t pp = 2; !want && pp <= 40; pp++)
            if (stub_per_gpu(4096, best_tp * pp) <= mem)
                want = best_tp * pp;
        if (!want) {
            assert_false(r->fits);
            continue;
        }
        assert_true(r->fits);
        fitting++;
        assert_int_equal(r->gpus, want);
        assert_int_equal(r->tp * r->pp, want);
        assert_int_equal(r->nodes, (want + node - 1) / node);
        assert_int_equal(r->needed_bytes, stub_per_gpu(4096, want));
        assert_true(r->headroom_bytes == (int64_t)mem - (int64_t)r->needed_bytes);
        assert_true(r->total_bytes == mem * want);
        if (i > 0 && rows[i - 1].fits)
            assert_true(rows[i - 1].total_bytes <= r->total_bytes);
    }
    assert_true(fitting > 10);
    /* an 8 GB card needs more than one: 20.5e9 / n + 0.55 GB */
    for (size_t i = 0; i < got; i++)
        if (!strcmp(rows[i].gpu->name, "RTX 3070"))
            assert_true(rows[i].gpus >= 4);
    free(rows);
    vf_model_free(m);
}

/* Every keyword=value of the Accelerate plan is a documented argument. */
static void test_plan_accelerate_documented(void **state)
{
    (void)state;
    flagdoc doc[32];
    size_t n = load_flags("tests/data/plan/accelerate-kwargs.txt", doc, 32);
    assert_true(n >= 8);
    vf_model *m = stub_model(64, 8192);
    const char *ws[] = {"", "int8", "nf4", "nf4-dq", "fp4"};
    for (size_t i = 0; i < 5; i++) {
        vf_estimate_opts o;
        vf_estimate_opts_init(&o);
        o.runtime = VF_RUNTIME_TRANSFORMERS;
        snprintf(o.weights, sizeof o.weights, "%s", ws[i]);
        vf_estimate e;
        memset(&e, 0, sizeof e);
        e.weights = 30 * GIB; /* more than the two GPUs' budget: a cpu entry */
        e.per_gpu_bytes = 32 * GIB;
        e.gpus = 1;
        char buf[2048];
        assert_int_equal(vf_plan_emit(VF_ENGINE_ACCELERATE, m, "org/m", &o, &e, 12 * GIB, 2, buf, sizeof buf, NULL),
                         VF_OK);
        assert_non_null(strstr(buf, "max_memory={0: \"10240MiB\", 1: \"10240MiB\", \"cpu\": "));
        size_t kw = 0;
        for (char *p = buf; (p = strchr(p, '=')) != NULL; p++) {
            if (p[1] == '=' )
                continue;
            char *q = p;
            while (q > buf && (q[-1] == '_' || (q[-1] >= 'a' && q[-1] <= 'z') || (q[-1] >= '0' && q[-1] <= '9')))
                q--;
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)(p - q), q);
            if (!name[0])
                continue;
            size_t d = 0;
            while (d < n && strcmp(doc[d].flag, name))
                d++;
            if (d == n)
                fail_msg("'%s' is not a documented argument (in: %s)", name, buf);
            kw++;
        }
        assert_true(kw >= 3);
    }
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
        cmocka_unit_test(test_advice_combined),
        cmocka_unit_test(test_fit_error_propagates),
        cmocka_unit_test(test_fit_needed_device_dependent),
        cmocka_unit_test(test_speed_bounds),
        cmocka_unit_test(test_speed_pipeline_nodes),
        cmocka_unit_test(test_plan_vllm),
        cmocka_unit_test(test_plan_llamacpp),
        cmocka_unit_test(test_plan_deepspeed),
        cmocka_unit_test(test_plan_flags_documented),
        cmocka_unit_test(test_plan_deepspeed_documented),
        cmocka_unit_test(test_plan_accelerate_documented),
        cmocka_unit_test(test_fit_catalog_properties),
        cmocka_unit_test(test_fit_catalog_table),
        cmocka_unit_test(test_fit_searches_priced_on_the_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
