/* test_infer.c — the inference memory model against independent figures:
 * the seeds' worked examples, engine KV formulas (byte-exact), vLLM's KV pool
 * and transformers' measured peaks (tests/reference/measured.csv). */
#include "infer_testlib.h"

#include "memory/infer.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)

/* ---- models from real config.json files ---- */

/* bigcode/octocoder is StarCoder fine-tuned: the same GPTBigCode shape (40
 * layers, n_embd 6144, 48 heads, multi-query, vocab 49152), from the
 * embedded catalog's bigcode/starcoder config. */
static vf_model *octocoder(void) { return itl_open("bigcode/starcoder"); }

static vf_model *falcon7b(void) { return itl_open(REF "/models/tiiuae__falcon-7b.json"); }

static uint64_t params_of(const vf_model *m)
{
    vf_model_totals t;
    vf_model_totals_get(m, &t);
    return t.params;
}

/* ---- the seeds' worked examples (SEEDS.md: "1B in fp32 = 4 GB", "70B in
 * fp32 = 280 GB", "a 4B model ... 8 GB in BF16") ---- */
static void test_seeds_examples(void **state)
{
    (void)state;
    struct { uint64_t rows, cols; vf_dtype dt; const char *reprice; double gb; } ex[] = {
        {31250, 32000, VF_DTYPE_F32, "", 4.0},         /* 1e9 params stored fp32 */
        {31250, 32000, VF_DTYPE_BF16, "f32", 4.0},     /* the same re-priced to fp32 */
        {70000, 1000000, VF_DTYPE_BF16, "fp32", 280.0},
        {62500, 64000, VF_DTYPE_F32, "bf16", 8.0},     /* 4e9 params in BF16 */
    };
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
        vf_model *m = vf__model_new(VF_FORMAT_CONFIG, "seed");
        itl_add(m, "w", ex[i].dt, VF_ROLE_MLP_UP, 0, ex[i].rows, ex[i].cols);
        vf_estimate_opts o;
        vf_estimate_opts_init(&o);
        snprintf(o.weights, sizeof o.weights, "%s", ex[i].reprice);
        vf_estimate e = itl_run(m, &o);
        assert_int_equal(e.weights, (uint64_t)(ex[i].gb * 1e9));
        vf_model_free(m);
    }
}

/* ---- re-pricing: formats' own storage ---- */
static void test_weights_repricing(void **state)
{
    (void)state;
    vf_model *m = itl_llama3_8b(8192);
    assert_int_equal(params_of(m), 8030261248ull); /* param-counts.tsv, published */
    vf__wprice w;
    /* Q4_K on every matrix (256-element rows divide 4096 and 14336), the
     * output matrix raised to Q6_K, norms in F32 (llama-quant.cpp) */
    assert_int_equal(vf__weights_price(m, "q4_k", VF_DTYPE_UNKNOWN, &w, NULL, NULL), VF_OK);
    uint64_t out = 128256ull * 4096, mat = 8030261248ull - 65 * 4096ull - out, norms = 65 * 4096ull;
    assert_int_equal(w.bytes, mat / 256 * 144 + out / 256 * 210 + norms * 4);
    /* nf4 with double quant on the block linears only: codes n/2, one 8-bit
     * absmax per 64, one fp32 per 256 blocks (QLoRA §2); embeddings, head and
     * norms stay bf16 */
    assert_int_equal(vf__weights_price(m, "nf4-dq", VF_DTYPE_UNKNOWN, &w, NULL, NULL), VF_OK);
    uint64_t lin_per_layer[] = {4096 * 4096, 1024 * 4096, 1024 * 4096, 4096 * 4096, 14336 * 4096, 14336 * 4096,
                                4096 * 14336};
    uint64_t q = 0;
    for (int l = 0; l < 32; l++)
        for (int k = 0; k < 7; k++) {
            uint64_t n = lin_per_layer[k], blocks = n / 64;
            q += n / 2 + blocks + (blocks + 255) / 256 * 4;
        }
    uint64_t kept = (2 * 128256ull * 4096 + norms) * 2;
    assert_int_equal(w.bytes, q + kept);
    assert_true(fabs(8.0 * (double)q / (double)(w.quant_params) - 4.127) < 0.01);
    /* LLM.int8: int8 codes + an fp32 scale per output row */
    assert_int_equal(vf__weights_price(m, "int8", VF_DTYPE_UNKNOWN, &w, NULL, NULL), VF_OK);
    uint64_t rows_per_layer = 4096 + 1024 + 1024 + 4096 + 14336 + 14336 + 4096;
    assert_int_equal(w.bytes, (8030261248ull - 2 * 128256ull * 4096 - norms) + 32 * rows_per_layer * 4 + kept);
    vf_model_free(m);
}

/* ---- KV cache, byte-exact against the engines' formulas ---- */

/* GQA, llama.cpp (src/llama-kv-cache.cpp: per layer a K tensor of
 * n_embd_k_gqa x kv_size and a V tensor of n_embd_v_gqa x kv_size in the
 * cache type): measured.csv C12, Meta-Llama-3-8B at -c 8192 f16: "context
 * 1024 MiB"; C13, Qwen3-1.7B (28 layers, 8 KV heads of 128) at 40960: 4480. */
static void test_kv_gqa_llamacpp(void **state)
{
    (void)state;
    vf_model *m = itl_llama3_8b(8192);
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_LLAMACPP;
    o.infer.context = 8192;
    vf_estimate e = itl_run(m, &o);
    assert_int_equal(e.rb_context, 1024ull << 20);
    assert_int_equal(e.rb_context, 8192ull * 32 * 2 * 8 * 128 * 2);
    /* src/llama-context.cpp: n_ctx = GGML_PAD(n_ctx, 256); without a unified
     * cache n_ctx_seq = GGML_PAD(n_ctx / n_seq, 256) and n_ctx = n_ctx_seq x
     * n_seq: -c 1000 gives 1024 cells; -c 4096 -np 3 gives 3 x 1536 */
    const uint64_t cell = 32ull * 2 * 8 * 128 * 2;
    o.infer.context = 1000;
    e = itl_run(m, &o);
    assert_int_equal(e.rb_context, 1024 * cell);
    o.infer.context = 4096;
    o.infer.parallel = 3;
    e = itl_run(m, &o);
    assert_int_equal(e.rb_context, 3 * 1536 * cell);
    assert_int_equal(e.rb_output, 3ull * 128256 * 4);
    o.infer.kv_unified = true;
    e = itl_run(m, &o);
    assert_int_equal(e.rb_context, 4096 * cell);
    o.infer.kv_unified = false;
    o.infer.parallel = 1;
    o.infer.context = 8192;
    /* q8_0 K and V: 34 bytes per 32 elements (ggml block_q8_0) */
    snprintf(o.infer.kv_dtype, sizeof o.infer.kv_dtype, "q8_0");
    o.infer.flash_attn = 1;
    e = itl_run(m, &o);
    assert_int_equal(e.rb_context, 8192ull * 32 * 2 * (1024 / 32 * 34));

    /* C12's GPU model buffer: Meta-Llama-3-8B-Instruct Q4_K_M fully offloaded
     * holds everything but the token embeddings: 4403 MiB */
    snprintf(o.weights, sizeof o.weights, "q4_k_m");
    o.infer.kv_dtype[0] = '\0';
    e = itl_run(m, &o);
    assert_true(fabs(itl_rel(e.weights / MIB, 4403)) < 0.005);
    vf_model_free(m);

    m = itl_open("Qwen/Qwen3-1.7B"); /* 28 layers, 8 KV heads of 128, tied */
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_LLAMACPP;
    o.infer.context = 40960;
    e = itl_run(m, &o);
    assert_int_equal(e.rb_context, 4480ull << 20);
    /* compute buffer on CUDA: 300 MiB (C13), within 10% */
    assert_true(fabs(itl_rel(e.rb_compute / MIB, 300)) < 0.10);
    /* model buffer on the GPU, Q4_K_M: 1050 MiB (C13): the blocks and the
     * tied output's duplicated copy (Q6_K), token embeddings on the host */
    snprintf(o.weights, sizeof o.weights, "q4_k_m");
    e = itl_run(m, &o);
    assert_true(fabs(itl_rel(e.weights / MIB, 1050)) < 0.005);
    vf_model_free(m);
}

/* MLA, DeepSeek-V3 config (61 layers, kv_lora_rank 512, qk_rope_head_dim
 * 64, 128 heads, qk_nope 128, v_head_dim 128): vLLM MLAAttentionSpec caches
 * one latent of 576 per layer (vllm/v1/kv_cache_interface.py); transformers
 * caches decompressed K (nope + rope) and V per head. */
static void test_kv_mla(void **state)
{
    (void)state;
    vf_model *m = itl_open(REF "/models/deepseek-ai__DeepSeek-V3.json");
    const vf_hparams *hp = vf_model_hparams(m);
    assert_int_equal(vf__kv_bytes_per_token(hp, true, VF_DTYPE_BF16, VF_DTYPE_BF16), 61ull * 576 * 2);
    assert_int_equal(vf__kv_bytes_per_token(hp, false, VF_DTYPE_BF16, VF_DTYPE_BF16), 61ull * 128 * (192 + 128) * 2);
    /* vLLM: blocks of 16 tokens x 61 layers x 576 x 2 B; pool = tokens x that */
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_VLLM;
    o.gpu_bytes = 141ull << 30;
    o.tp = 8;
    o.infer.max_model_len = 4096;
    vf_estimate e = itl_run(m, &o);
    assert_int_equal(e.kv_bytes_per_token, 61ull * 576 * 2);
    /* the multi-token-prediction layer (61) is not loaded: weights < all tensors / 8 */
    vf_model_totals tot;
    vf_model_totals_get(m, &tot);
    assert_true(tot.mtp_params > 0);
    assert_true(e.weights < tot.bytes / 8);
    assert_int_equal(e.kv_cache, e.kv_cache_tokens * 61ull * 576 * 2);
    vf_model_free(m);
}

/* Recurrent state (Mamba-style layers): per sequence and layer, independent
 * of the context (llama.cpp llama-memory-recurrent.cpp: r and s states in
 * f32 per sequence), on the layer's device; attention layers of a hybrid
 * keep their KV. */
static void test_kv_recurrent(void **state)
{
    (void)state;
    vf_model *m = vf__model_new(VF_FORMAT_CONFIG, "hybrid");
    itl_add(m, "token_embd.weight", VF_DTYPE_F16, VF_ROLE_EMBED, -1, 32000, 512);
    vf_hparams *hp = &m->hp;
    hp->n_layers = 4, hp->hidden_size = 512, hp->n_heads = 8, hp->n_kv_heads = 8, hp->head_dim = 64;
    hp->vocab_size = 32000, hp->intermediate_size = 1024;
    hp->recurrent_state_bytes = 1000000;
    hp->layer_no_kv = calloc(4, 1);
    hp->layer_no_kv[0] = hp->layer_no_kv[1] = hp->layer_no_kv[2] = 1; /* one attention layer */
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_LLAMACPP;
    o.infer.context = 4096;
    o.infer.parallel = 2;
    vf_estimate e = itl_run(m, &o);
    assert_int_equal(e.rb_context, 3ull * 1000000 * 2 + 4096ull * 2 * 512 * 2);
    assert_int_equal(e.kv_cache, e.rb_context); /* all layers on the GPU */
    o.runtime = VF_RUNTIME_GENERIC;
    o.infer.batch = 2;
    e = itl_run(m, &o);
    assert_int_equal(e.kv_cache, 3ull * 1000000 * 2 + 2 * 4096ull * 2 * 512 * 2);
    vf_model_free(m);
}

/* Sliding window, llama.cpp (src/llama-kv-cache-iswa.cpp): the SWA cache
 * holds min(n_ctx, PAD(n_swa + n_ubatch, 256)) cells; gemma-2-9b (42 layers,
 * alternating, window 4096, 8 KV heads of 256) at -c 8192: 21 layers x 8192
 * cells + 21 layers x 4608 cells. --swa-full gives every layer 8192. */
static void test_kv_swa_llamacpp(void **state)
{
    (void)state;
    vf_model *m = itl_open(REF "/models/google__gemma-2-9b.json");
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_LLAMACPP;
    o.infer.context = 8192;
    vf_estimate e = itl_run(m, &o);
    uint64_t row = 2ull * 8 * 256 * 2; /* K + V f16 per cell and layer */
    assert_int_equal(e.rb_context, 21 * 8192 * row + 21 * 4608 * row);
    o.infer.swa_full = true;
    e = itl_run(m, &o);
    assert_int_equal(e.rb_context, 42 * 8192 * row);
    /* transformers caps sliding layers at the window: 21 x 8192 + 21 x 4096 */
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_TRANSFORMERS;
    o.infer.context = 8192;
    snprintf(o.infer.kv_dtype, sizeof o.infer.kv_dtype, "bf16");
    e = itl_run(m, &o);
    assert_int_equal(e.kv_cache, 21 * 8192 * row + 21 * 4096 * row);
    vf_model_free(m);
}

/* ---- vLLM: the KV pool within 5% of measured.csv ---- */
static void test_vllm_pool(void **state)
{
    (void)state;
    struct {
        const char *row;
        uint64_t ctx;
        double gpu_gib;
        const char *version;
        const char *gpu;
        uint64_t mml;
        uint32_t tp;
        double pool_gib, weights_gib;
    } rows[] = {
        /* A1: Llama-3.1-8B-Instruct, vLLM 0.11.0, H100 79.18 GiB, max-model-len 16000 */
        {"A1", 131072, 79.18, "0.11.0", "H100", 16000, 1, 51.38, 14.99},
        /* A2: Meta-Llama-3-8B, vLLM Dec 2024 (0.6.5, V0), 80 GB (79.22 GiB) */
        {"A2", 8192, 79.22, "0.6.5", "H100", 0, 1, 53.29, 14.96},
        /* A4 (vLLM 0.7.0, 4 sequences): test_infer_vllm.c */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        vf_model *m = itl_llama3_8b(rows[i].ctx);
        vf_estimate_opts o;
        vf_estimate_opts_init(&o);
        o.runtime = VF_RUNTIME_VLLM;
        o.gpu_bytes = (uint64_t)(rows[i].gpu_gib * GIB);
        snprintf(o.infer.vllm_version, sizeof o.infer.vllm_version, "%s", rows[i].version);
        snprintf(o.infer.gpu_name, sizeof o.infer.gpu_name, "%s", rows[i].gpu);
        o.infer.max_model_len = rows[i].mml;
        vf_estimate e = itl_run(m, &o);
        print_message("%s: pool %.2f GiB (measured %.2f), weights %.3f (%.2f), activations %.2f GiB\n", rows[i].row,
                      e.kv_cache / GIB, rows[i].pool_gib, e.weights / GIB, rows[i].weights_gib, e.activations / GIB);
        assert_true(e.starts);
        assert_true(fabs(itl_rel(e.kv_cache / GIB, rows[i].pool_gib)) < 0.05);
        assert_true(fabs(itl_rel(e.weights / GIB, rows[i].weights_gib)) < 0.005);
        /* tokens: whole 16-token blocks of 32 layers x 2 x 8 x 128 x 2 B */
        assert_int_equal(e.kv_cache_tokens * 131072ull, e.kv_cache);
        assert_true(e.max_concurrency > 1.0);
        vf_model_free(m);
    }
    /* defaults by GPU class (arg_utils.py _set_default_args_v1): an 80 GB
     * A100 keeps 2048 batched tokens / 256 sequences, an H100 gets 8192 /
     * 1024: the sampler warm-up over 1024 x 128256 logits dominates there */
    {
        vf_model *m = itl_llama3_8b(131072);
        vf_estimate_opts o;
        vf_estimate_opts_init(&o);
        o.runtime = VF_RUNTIME_VLLM;
        o.gpu_bytes = 80ull << 30;
        o.infer.max_model_len = 8192;
        snprintf(o.infer.vllm_version, sizeof o.infer.vllm_version, "0.11.0"); /* that sampler's sort */
        snprintf(o.infer.gpu_name, sizeof o.infer.gpu_name, "A100 SXM 80GB");
        vf_estimate a100 = itl_run(m, &o);
        snprintf(o.infer.gpu_name, sizeof o.infer.gpu_name, "H100 SXM 80GB");
        vf_estimate h100 = itl_run(m, &o);
        assert_true(a100.activations >= 256ull * 128256 * 28 && a100.activations < 1024ull * 128256 * 28);
        assert_true(h100.activations >= 1024ull * 128256 * 28);
        vf_model_free(m);
    }
    /* A2d: tensor parallel 2, weights per GPU 7.48 GiB */
    vf_model *m = itl_llama3_8b(8192);
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_VLLM;
    o.gpu_bytes = (uint64_t)(79.22 * GIB);
    o.tp = 2;
    vf_estimate e = itl_run(m, &o);
    assert_true(fabs(itl_rel(e.weights / GIB, 7.48)) < 0.005);
    /* a 24 GB card at the full 131072 context does not start */
    vf_model_free(m);
    m = itl_llama3_8b(131072);
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_VLLM;
    o.gpu_bytes = (uint64_t)(22.30 * GIB);
    e = itl_run(m, &o);
    assert_false(e.starts);
    assert_non_null(strstr(e.reason, "max_model_len 131072"));
    vf_model_free(m);
}

/* ---- transformers: within 5% of torch.cuda.max_memory_allocated() ---- */
static double allocated_gib(const vf_estimate *e) { return (e->weights + e->kv_cache + e->activations) / GIB; }

static void test_transformers_peaks(void **state)
{
    (void)state;
    vf_model *m = octocoder();
    assert_true(llabs((long long)params_of(m) - 15517456384ll) == 0);
    struct { const char *row, *weights, *keep; double gib; } rows[] = {
        /* D21a: torch_dtype=bfloat16; D21b/c: load_in_8bit / load_in_4bit
         * without torch_dtype, so the unquantized tensors load as fp32 */
        {"D21a", "", "", 29.0260648727417},
        {"D21b", "int8", "f32", 15.219234466552734},
        {"D21c", "int4", "f32", 9.543574333190918},
    };
    for (size_t i = 0; i < 3; i++) {
        vf_estimate_opts o;
        vf_estimate_opts_init(&o);
        o.runtime = VF_RUNTIME_TRANSFORMERS;
        o.infer.context = 128; /* short prompt + 60 new tokens */
        o.infer.prompt_tokens = 64;
        snprintf(o.weights, sizeof o.weights, "%s", rows[i].weights);
        snprintf(o.infer.keep_dtype, sizeof o.infer.keep_dtype, "%s", rows[i].keep);
        vf_estimate e = itl_run(m, &o);
        print_message("%s: %.3f GiB (measured %.3f)\n", rows[i].row, allocated_gib(&e), rows[i].gib);
        assert_true(fabs(itl_rel(allocated_gib(&e), rows[i].gib)) < 0.05);
    }
    vf_model_free(m);

    /* E23a/b: falcon-7b, prompt + 256 new, fp32 and bf16 (GB = 1e9) */
    struct { vf_dtype dt; double gb; } f[] = {{VF_DTYPE_F32, 28.95}, {VF_DTYPE_BF16, 14.50}};
    for (size_t i = 0; i < 2; i++) {
        m = falcon7b();
        assert_int_equal(params_of(m), 6921720704ull);
        vf_estimate_opts o;
        vf_estimate_opts_init(&o);
        o.runtime = VF_RUNTIME_TRANSFORMERS;
        o.infer.context = 300;
        o.infer.prompt_tokens = 44;
        snprintf(o.weights, sizeof o.weights, "%s", vf_dtype_get(f[i].dt)->name);
        vf_estimate e = itl_run(m, &o);
        double gb = allocated_gib(&e) * GIB / 1e9;
        print_message("E23 %s: %.2f GB (measured %.2f)\n", vf_dtype_get(f[i].dt)->name, gb, f[i].gb);
        assert_true(fabs(itl_rel(gb, f[i].gb)) < 0.05);
        vf_model_free(m);
    }

    /* D20b: bert-large-uncased for sequence classification in fp32 after
     * loading, as nvidia-smi shows it (weights + CUDA context): 2631 MB,
     * measured with CUDA < 11.7 (every kernel loaded at start: D20a's 1343 MiB) */
    m = vf__model_new(VF_FORMAT_CONFIG, "bert-large");
    itl_add(m, "all", VF_DTYPE_F32, VF_ROLE_OTHER, -1, 335143938, 0);
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_TRANSFORMERS;
    o.infer.context = 1;
    snprintf(o.cuda_version, sizeof o.cuda_version, "11.3");
    vf_estimate e = itl_run(m, &o);
    assert_true(fabs(itl_rel(e.per_gpu_bytes / MIB, 2631)) < 0.05);
    assert_int_equal(e.context_bytes, 1343ull << 20);
    assert_int_equal(e.device_bytes, e.per_gpu_bytes);
    vf_model_free(m);
}


/* ---- llama.cpp placement (src/llama-model.cpp load_tensors): the last
 * -ngl blocks go to the GPUs and the output layer counts as one more
 * (i_gpu_start = max(n_layer + 1 - ngl, 0)); token embeddings stay in host
 * memory; layers split over devices by upper_bound over the cumulative
 * tensor-split fractions of (il - i_gpu_start) / (n_layer + 1 - i_gpu_start). */
static void test_llamacpp_placement(void **state)
{
    (void)state;
    vf_model *m = itl_llama3_8b(8192);
    const uint64_t embd = 128256ull * 4096 * 2, out = embd;
    const uint64_t block = (2 * 4096ull * 4096 + 2 * 1024ull * 4096 + 3 * 14336ull * 4096 + 2 * 4096) * 2;
    const uint64_t total = embd + out + 32 * block + 4096 * 2;
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_LLAMACPP;
    o.infer.context = 8192;
    vf_estimate e = itl_run(m, &o);
    assert_int_equal(e.rb_model, total);
    assert_int_equal(e.weights, total - embd); /* everything but token_embd on the GPU */
    assert_int_equal(e.kv_cache, 1024ull << 20);
    assert_true(e.host_bytes >= embd + 128256ull * 4);
    /* -ngl 16: start = 33 - 16 = 17: blocks 17..31 and the output */
    o.infer.n_gpu_layers = 16;
    e = itl_run(m, &o);
    assert_int_equal(e.weights, 15 * block + out + 4096 * 2);
    assert_int_equal(e.kv_cache, 15ull * 8192 * 2 * 1024 * 2);
    /* two GPUs split 3:1: positions il/33 < 0.75 (blocks 0..24) on the first */
    o.infer.n_gpu_layers = -1;
    o.infer.n_split = 2;
    o.infer.tensor_split[0] = 3;
    o.infer.tensor_split[1] = 1;
    e = itl_run(m, &o);
    assert_int_equal(e.gpus, 2);
    assert_int_equal(e.rb_context, 1024ull << 20);
    assert_true(e.total_bytes > e.per_gpu_bytes);
    vf_model_free(m);

    /* tied output (no output tensor): duplicated onto the GPU (TENSOR_DUPLICATED) */
    m = vf__model_new(VF_FORMAT_CONFIG, "tied");
    itl_add(m, "token_embd.weight", VF_DTYPE_F16, VF_ROLE_EMBED, -1, 32000, 512);
    itl_add(m, "blk.0.ffn_up.weight", VF_DTYPE_F16, VF_ROLE_MLP_UP, 0, 1024, 512);
    m->hp.n_layers = 1, m->hp.hidden_size = 512, m->hp.n_heads = 8, m->hp.n_kv_heads = 8, m->hp.head_dim = 64;
    m->hp.vocab_size = 32000, m->hp.tie_word_embeddings = true, m->hp.intermediate_size = 1024;
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_LLAMACPP;
    e = itl_run(m, &o);
    assert_int_equal(e.weights, 1024ull * 512 * 2 + 32000ull * 512 * 2);
    vf_model_free(m);
}

/* ---- knobs: errors, eager attention, tensor parallel ---- */
static void test_knobs(void **state)
{
    (void)state;
    vf_model *m = itl_llama3_8b(8192);
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    vf_estimate e;
    vf_error err = {0};
    snprintf(o.weights, sizeof o.weights, "q17");
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_EINVAL);
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_VLLM;
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_EINVAL); /* no --gpu */
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_LLAMACPP;
    o.infer.flash_attn = 0;
    snprintf(o.infer.kv_dtype, sizeof o.infer.kv_dtype, "f16,q8_0");
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_EINVAL); /* quantized V needs FA */
    /* eager attention materialises b x heads x q x q scores, their fp32
     * softmax and its bf16 cast: 2 + 4 + 2 bytes per score */
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_TRANSFORMERS;
    o.infer.context = 4096;
    o.infer.attn = VF_ATTN_EAGER;
    vf_estimate eager = itl_run(m, &o);
    o.infer.attn = VF_ATTN_SDPA;
    vf_estimate sdpa = itl_run(m, &o);
    assert_true(eager.activations >= 32ull * 4096 * 4096 * (2 + 4 + 2));
    assert_true(sdpa.activations < eager.activations / 4);
    /* every prompt position's logits, model dtype + fp32: 4096 x 128256 x 6 */
    o.infer.logits_all = true;
    vf_estimate all = itl_run(m, &o);
    assert_true(all.activations >= 4096ull * 128256 * 6);
    assert_true(sdpa.activations < 4096ull * 128256 * 6);
    /* vLLM before 0.21: --enforce-eager drops the CUDA-graph memory, captured
     * after the KV pool is sized, so the pool is unchanged */
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_VLLM;
    o.gpu_bytes = 80ull << 30;
    o.infer.max_model_len = 8192;
    snprintf(o.infer.vllm_version, sizeof o.infer.vllm_version, "0.19.0");
    vf_estimate graphs = itl_run(m, &o);
    o.infer.enforce_eager = true;
    vf_estimate eagerv = itl_run(m, &o);
    assert_int_equal(graphs.kv_cache, eagerv.kv_cache);
    assert_true(graphs.overhead > eagerv.overhead);
    /* 0.21+ and the current version profile the graphs first and take their
     * estimate out of the pool's budget: the pools differ by it, to a block
     * (32 layers x 16 tokens x 2 x 8 x 128 x 2 B = 2 MiB) */
    o.infer.vllm_version[0] = 0;
    vf_estimate eagerc = itl_run(m, &o);
    o.infer.enforce_eager = false;
    vf_estimate graphc = itl_run(m, &o);
    assert_true(graphc.cuda_graph_bytes > 0);
    uint64_t d = eagerc.kv_cache - graphc.kv_cache;
    assert_true(d + (2u << 20) > graphc.cuda_graph_bytes && d < graphc.cuda_graph_bytes + (2u << 20));
    /* absurd knobs: finite figures, no overflow wrap (saturating products) */
    for (int r = 0; r <= VF_RUNTIME_LLAMACPP; r++) {
        vf_estimate_opts_init(&o);
        o.runtime = (vf_runtime)r;
        o.gpu_bytes = 80ull << 30;
        o.infer.context = o.infer.ubatch = o.infer.lc_batch = o.infer.batch = (uint64_t)1 << 32;
        o.infer.flash_attn = 0;
        if (vf_estimate_run(m, &o, &e, &err) == VF_OK)
            assert_true(e.per_gpu_bytes >= e.weights);
    }
    o.infer.context = ((uint64_t)1 << 32) + 1;
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_EINVAL);
    /* implausible hyper-parameters from a file are refused */
    vf_model *bad = vf__model_new(VF_FORMAT_CONFIG, "bad");
    bad->hp.n_layers = 1u << 30, bad->hp.n_heads = 8, bad->hp.hidden_size = 64;
    vf_estimate_opts_init(&o);
    assert_int_equal(vf_estimate_run(bad, &o, &e, &err), VF_ERANGE);
    vf_model_free(bad);
    /* generic: tp divides matrices and KV */
    vf_estimate_opts_init(&o);
    o.infer.context = 8192;
    vf_estimate one = itl_run(m, &o);
    o.tp = 4;
    vf_estimate four = itl_run(m, &o);
    assert_int_equal(one.kv_cache, 8192ull * 131072);
    assert_int_equal(four.kv_cache, one.kv_cache / 4);
    assert_true(four.weights < one.weights / 3);
    vf_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seeds_examples),   cmocka_unit_test(test_weights_repricing), cmocka_unit_test(test_kv_gqa_llamacpp),
        cmocka_unit_test(test_kv_mla), cmocka_unit_test(test_kv_recurrent),           cmocka_unit_test(test_kv_swa_llamacpp),   cmocka_unit_test(test_vllm_pool),
        cmocka_unit_test(test_transformers_peaks), cmocka_unit_test(test_llamacpp_placement), cmocka_unit_test(test_knobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
