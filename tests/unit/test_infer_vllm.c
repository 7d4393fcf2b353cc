/* test_infer_vllm.c — vLLM's profiling run (the activation peak it charges
 * before sizing the KV pool) against vLLM's own logs in
 * tests/reference/measured.csv, and the mechanism's terms against the
 * engine and PyTorch source formulas they come from. */
#include "infer_testlib.h"

#include "memory/infer.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static void vllm_opts(vf_estimate_opts *o, double gpu_gib, const char *gpu, const char *version, uint64_t mml,
                      uint64_t mns)
{
    vf_estimate_opts_init(o);
    o->runtime = VF_RUNTIME_VLLM;
    o->gpu_bytes = (uint64_t)(gpu_gib * GIB);
    snprintf(o->infer.gpu_name, sizeof o->infer.gpu_name, "%s", gpu);
    snprintf(o->infer.vllm_version, sizeof o->infer.vllm_version, "%s", version);
    o->infer.max_model_len = mml;
    o->infer.max_num_seqs = mns;
}

/* measured.csv: vLLM's "PyTorch activation peak memory" and the KV memory it
 * then hands out, each row with the settings its source ran:
 *  A1 llm-d-planner, vLLM 0.11.0 (V1), H100 79.18 GiB, max-model-len 16000,
 *     `vllm serve` defaults for the GPU (8192 batched tokens, 1024 seqs);
 *  A2 vllm PR #10511 log, `vllm serve meta-llama/Meta-Llama-3-8B`, Dec 2024
 *     (0.6.5, V0: max(8192, 2048) batched tokens, 256 seqs), 79.22 GiB;
 *  A4 awslabs/data-on-eks gen-ai/inference/vllm-ray-gpu-deepseek: vllm==0.7.0
 *     (Dockerfile, V0 engine), ray-vllm-deepseek.yml: max_model_len 8192,
 *     max_num_seqs 4 (MAX_NUM_BATCHED_TOKENS is set but never passed to the
 *     engine), A10G 22.30 GiB. Here the forward of 8192 tokens is the peak. */
static void test_vllm_profile_rows(void **state)
{
    (void)state;
    struct {
        const char *row, *version, *gpu;
        uint64_t ctx, mml, mns;
        double gpu_gib, act_gib, pool_gib;
    } rows[] = {
        {"A1", "0.11.0", "H100", 131072, 16000, 0, 79.18, 4.76, 51.38},
        {"A2", "0.6.5", "H100", 8192, 0, 0, 79.22, 1.26, 53.29},
        {"A4", "0.7.0", "A10G", 131072, 8192, 4, 22.30, 0.85, 4.17},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        vf_model *m = itl_llama3_8b(rows[i].ctx);
        vf_estimate_opts o;
        vllm_opts(&o, rows[i].gpu_gib, rows[i].gpu, rows[i].version, rows[i].mml, rows[i].mns);
        vf_estimate e = itl_run(m, &o);
        print_message("%s: activation %.3f GiB (measured %.2f), pool %.2f GiB (measured %.2f)\n", rows[i].row,
                      e.activations / GIB, rows[i].act_gib, e.kv_cache / GIB, rows[i].pool_gib);
        assert_true(e.starts);
        assert_true(fabs(itl_rel(e.activations / GIB, rows[i].act_gib)) < 0.03);
        assert_true(fabs(itl_rel(e.kv_cache / GIB, rows[i].pool_gib)) < 0.05);
        vf_model_free(m);
    }
}

/* The terms, from the source they model, for Llama-3.1-8B (h 4096, ff 14336,
 * V 128256, bf16):
 *  sampler over S rows: hidden states T x h + the sampled rows S x h (V1: and
 *  their rand_like copy), logits bf16 (2) + fp32 (4) + sort values (4) and
 *  int64 indices (8), plus torch.sort's scratch (SortStable.cu): >= 128 rows
 *  20 B per element, 2..127 rows 32 B;
 *  forward: T x (3h + 3ff) x 2 (llama.py LlamaMLP at down_proj);
 *  cuBLAS workspace (CublasHandlePool.cpp): 32 MiB on sm90, 8519680 B else. */
static void test_vllm_profile_terms(void **state)
{
    (void)state;
    const uint64_t h = 4096, ff = 14336, V = 128256, T = 8192;
    vf_model *m = itl_llama3_8b(131072);
    vf_estimate_opts o;

    /* H100, V1 defaults: T 8192, S 1024 -> segmented sort */
    vllm_opts(&o, 79.18, "H100", "0.11.0", 16000, 0);
    vf_estimate e = itl_run(m, &o);
    uint64_t s = 1024;
    assert_int_equal(e.activations, T * h * 2 + 2 * s * h * 2 + s * V * (2 + 4 + 4 + 8) + s * V * 20 + (32u << 20));

    /* 64 sequences of 2048 batched tokens: the by-full-sort path, 32 B of
     * scratch per logit (with 8192 tokens the forward would be the peak) */
    vllm_opts(&o, 79.18, "H100", "0.11.0", 16000, 64);
    o.infer.max_num_batched_tokens = 2048;
    e = itl_run(m, &o);
    s = 64;
    assert_int_equal(e.activations, 2048 * h * 2 + 2 * s * h * 2 + s * V * 18 + s * V * 32 + (32u << 20));
    vllm_opts(&o, 79.18, "H100", "0.11.0", 16000, 64);
    e = itl_run(m, &o);
    assert_int_equal(e.activations, T * (3 * h + 3 * ff) * 2 + (32u << 20));

    /* A10G (sm86), V0 with 4 sequences: the forward is the peak */
    vllm_opts(&o, 22.30, "A10G", "0.7.0", 8192, 4);
    e = itl_run(m, &o);
    assert_int_equal(e.activations, T * (3 * h + 3 * ff) * 2 + 8519680u);

    /* the pool is what the budget leaves after weights, that peak and the
     * non-torch memory, in whole blocks: more sequences, smaller pool */
    vllm_opts(&o, 79.18, "H100", "0.11.0", 16000, 256);
    vf_estimate few = itl_run(m, &o);
    vllm_opts(&o, 79.18, "H100", "0.11.0", 16000, 1024);
    vf_estimate many = itl_run(m, &o);
    assert_true(many.activations > few.activations);
    assert_true(few.kv_cache - many.kv_cache >= many.activations - few.activations - (2u << 20));
    vf_model_free(m);
}

/* vLLM 0.19's dummy sampler run (gpu_model_runner._dummy_sampler_run: top_p
 * 0.9, top_k V - 1, no logprobs), for Llama-3.1-8B (h 4096, V 128256, bf16):
 * per logit the bf16 logits the runner keeps (2), sampler.py's fp32 copy (4,
 * temperature divides it in place), the fp32 softmax probabilities (4) and
 * random_sample's exponential draws (4); from 8 rows on top-k/top-p is
 * apply_top_k_top_p_triton, in place, with a cached fp32 buffer of
 * min(SMs, rows) x V (132 SMs on an H100, 108 on an A100, the rows when the
 * GPU is not known); under 8 rows the PyTorch sort (a + 16 B and 32 B of
 * sort scratch per logit). Beside them the hidden states T x h and the
 * sampled rows S x h twice; cuBLAS workspace 32 MiB on sm90, 8519680 B else. */
static void test_vllm_sampler_019(void **state)
{
    (void)state;
    const uint64_t h = 4096, V = 128256;
    vf_model *m = itl_llama3_8b(131072);
    vf_estimate_opts o;

    /* H100 defaults: T 8192, S 1024 (the forward, 8192 x (4h + 3ff) x 2 =
     * 0.91 GiB, stays below) */
    vllm_opts(&o, 79.18, "H100", "0.19.0", 8192, 0);
    vf_estimate e = itl_run(m, &o);
    uint64_t T = 8192, s = 1024;
    assert_int_equal(e.activations, T * h * 2 + 2 * s * h * 2 + s * V * 14 + 132 * V * 4 + (32u << 20));

    /* an 80 GB A100: T 2048, S 256, 108 programs */
    vllm_opts(&o, 79.25, "A100 SXM 80GB", "0.19.0", 8192, 0);
    e = itl_run(m, &o);
    T = 2048, s = 256;
    assert_int_equal(e.activations, T * h * 2 + 2 * s * h * 2 + s * V * 14 + 108 * V * 4 + 8519680u);

    /* no GPU name: as many programs as rows, the most there can be */
    vllm_opts(&o, 79.18, "", "0.19.0", 8192, 64);
    o.infer.max_num_batched_tokens = 512;
    e = itl_run(m, &o);
    T = 512, s = 64;
    assert_int_equal(e.activations, T * h * 2 + 2 * s * h * 2 + s * V * 14 + s * V * 4 + (32u << 20));

    /* 4 rows: the PyTorch sort path (the forward of 64 tokens is below) */
    vllm_opts(&o, 79.18, "H100", "0.19.0", 8192, 4);
    o.infer.max_num_batched_tokens = 64;
    e = itl_run(m, &o);
    T = 64, s = 4;
    assert_int_equal(e.activations, T * h * 2 + 2 * s * h * 2 + s * V * 18 + s * V * 32 + (32u << 20));
    vf_model_free(m);

    /* the SM counts of NVIDIA's data sheets, the more specific name first */
    assert_int_equal(vf__gpu_sm_count("H100 PCIe 80GB"), 114);
    assert_int_equal(vf__gpu_sm_count("H100 SXM 80GB"), 132);
    assert_int_equal(vf__gpu_sm_count("GH200 96GB"), 132);
    assert_int_equal(vf__gpu_sm_count("RTX 3090 Ti"), 84);
    assert_int_equal(vf__gpu_sm_count("L40S"), 142);
    assert_int_equal(vf__gpu_sm_count("L4"), 58);
    assert_int_equal(vf__gpu_sm_count("GB200"), 0);
    assert_int_equal(vf__gpu_sm_count("MI300X"), 0);
}

/* vLLM's own cases for get_pp_indices (tests/distributed/
 * test_pipeline_partition.py, test_uneven_auto_partition), and its
 * docstring's 22 layers over 4 stages. */
static void test_vllm_pp_indices(void **state)
{
    (void)state;
    const struct {
        uint32_t layers, pp, rank, start, end;
    } c[] = {{2, 2, 0, 0, 1}, {2, 2, 1, 1, 2}, {3, 2, 0, 0, 2}, {3, 2, 1, 2, 3}, {3, 3, 0, 0, 1},
             {3, 3, 1, 1, 2}, {3, 3, 2, 2, 3}, {4, 3, 0, 0, 1}, {4, 3, 1, 1, 3}, {4, 3, 2, 3, 4},
             {5, 3, 0, 0, 2}, {5, 3, 1, 2, 4}, {5, 3, 2, 4, 5}, {22, 4, 0, 0, 5}, {22, 4, 1, 5, 11},
             {22, 4, 2, 11, 17}, {22, 4, 3, 17, 22}, {126, 2, 0, 0, 63}, {126, 2, 1, 63, 126}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        uint32_t s, e;
        vf__pp_indices(c[i].layers, c[i].rank, c[i].pp, &s, &e);
        assert_int_equal(s, c[i].start);
        assert_int_equal(e, c[i].end);
    }
}

/* Bytes of the model's tensors a pipeline rank holds, summed here from the
 * tensor list by hand: blocks [start, end), the embeddings on the first
 * rank, the final norm and head on the last, and there a copy of the
 * embeddings when they are tied; 2-D tensors split over tp. */
static uint64_t rank_bytes(const vf_model *m, uint32_t start, uint32_t end, bool first, bool last, uint32_t tp)
{
    uint64_t sh = 0, rep = 0, embed = 0;
    bool head = false;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const vf_tensor *t = &m->tensors[i];
        if (t->flags & VF_TENSOR_MTP)
            continue;
        bool mine;
        if (t->layer >= 0)
            mine = (uint32_t)t->layer >= start && (uint32_t)t->layer < end;
        else if (t->role == VF_ROLE_OUTPUT || t->role == VF_ROLE_NORM)
            mine = last;
        else
            mine = first;
        if (t->role == VF_ROLE_OUTPUT)
            head = true;
        if (t->role == VF_ROLE_EMBED && t->layer < 0)
            embed += t->n_bytes;
        if (mine)
            *(t->n_dims >= 2 ? &sh : &rep) += t->n_bytes;
    }
    if (last && !first && !head && m->hp.tie_word_embeddings)
        sh += embed;
    return rep + sh / tp;
}

/* Pipeline parallel, rank by rank: Llama-3.1-405B (126 layers, untied) over
 * 8 x 2 H100 and the tied Llama-3.2-1B (16 layers) over 2 stages. The rank
 * reported is the one holding the most; every rank gets the same blocks. */
static void test_vllm_pipeline_ranks(void **state)
{
    (void)state;
    vf_model *m = itl_open(REF "/models/meta-llama__Meta-Llama-3.1-405B.json");
    vf_estimate_opts o;
    vllm_opts(&o, 79.18, "H100", "", 8192, 0);
    o.tp = 8;
    o.pp = 2;
    vf_estimate e = itl_run(m, &o);
    assert_true(e.starts);
    assert_int_equal(e.pp_stages, 2);
    uint64_t rope = 131072ull * 128 * 2; /* max_position x head_dim x bf16 */
    uint64_t w0 = rank_bytes(m, 0, 63, true, false, 8) + rope, w1 = rank_bytes(m, 63, 126, false, true, 8) + rope;
    /* embedding and head are the same size; the last rank adds the final
     * norm (16384 x bf16) and runs the sampler: it is the busiest */
    assert_int_equal(e.busiest_stage, 1);
    assert_int_equal(e.stage_first_layer, 63);
    assert_int_equal(e.stage_end_layer, 126);
    assert_int_equal(e.weights, w1);
    assert_int_equal(w1 - w0, 16384 * 2);
    /* one rank's KV page: 63 layers x 2 x 1 head of 128 (8 KV heads over tp 8) x bf16 x 16 tokens */
    assert_int_equal(e.kv_cache % (63ull * 2 * 128 * 2 * 16), 0);
    assert_int_equal(e.kv_cache_tokens, e.kv_cache / (63ull * 2 * 128 * 2 * 16) * 16);
    vf_model_free(m);

    m = itl_open(REF "/models/meta-llama__Llama-3.2-1B.json");
    assert_true(m->hp.tie_word_embeddings);
    vllm_opts(&o, 22.30, "A10G", "", 8192, 0);
    o.pp = 2;
    e = itl_run(m, &o);
    uint64_t r0 = rank_bytes(m, 0, 8, true, false, 1), r1 = rank_bytes(m, 8, 16, false, true, 1);
    assert_true(r1 > r0); /* the tied copy of the 128256 x 2048 embeddings, and the final norm */
    assert_int_equal(e.busiest_stage, 1);
    uint64_t rope1 = 131072ull * 64 * 2;
    assert_int_equal(e.weights, r1 + rope1);
    /* on one stage there is one copy: the whole model's bytes */
    o.pp = 1;
    e = itl_run(m, &o);
    assert_int_equal(e.weights, rank_bytes(m, 0, 16, true, true, 1) + rope1);
    vf_model_free(m);
}

/* vLLM's CUDA graphs (vf__vllm_graph_bytes), derived by hand from
 * config/vllm.py _set_cudagraph_sizes and gpu_model_runner.py capture_model:
 * sizes [1, 2, 4] + range(8, 256, 8) + range(256, max + 1, 16), max =
 * min(2 x max_num_seqs, 512, max_num_batched_tokens); a piecewise graph per
 * piece (layers + 1) and size, from 0.11 a full decode graph per size up to
 * max_num_seqs too; one shared pool, the larger of twice the largest size's
 * forward transients (T x (3h + 3ff) x 2 B) and T x h x 128 B; every size
 * and mode 2 MiB + 192 KiB per layer. */
static void test_vllm_graphs(void **state)
{
    (void)state;
    vf_model *m = itl_llama3_8b(131072);
    const uint64_t MiB = 1 << 20, KiB = 1 << 10;
    vf__vllm_graphs g;
    vf__vllm_graph_cfg c = {.mns = 1024, .mnbt = 8192, .a = 2, .tp = 1, .layers = 32,
                            .mode = VF__VG_FULL_AND_PIECEWISE};
    /* 1024 sequences: max 512: 3 + 31 + 17 = 51 sizes, all also full ones */
    vf__vllm_graph_bytes(&m->hp, &c, &g);
    assert_int_equal(g.sizes, 51);
    assert_int_equal(g.full_sizes, 51);
    assert_int_equal(g.largest, 512);
    assert_int_equal(g.graphs, 51 * 33 + 51);
    /* pool: 512 x 4096 x 128 = 256 MiB > 2 x 512 x (3 x 4096 + 3 x 14336) x 2 = 108 MiB */
    assert_int_equal(g.pool, 256 * MiB);
    assert_int_equal(g.per_size, 2 * MiB + 32 * 192 * KiB); /* 8 MiB */
    assert_int_equal(g.bytes, 256 * MiB + 102 * 8 * MiB);  /* 1072 MiB */
    /* vLLM 0.19's own count for this run: "took 0.91 GiB" (H100, 8192
     * tokens, llm-d-planner logs): at or above it, within +20 % */
    assert_true(itl_rel((double)g.bytes / GIB, 0.91) >= 0 && itl_rel((double)g.bytes / GIB, 0.91) < 0.20);
    /* vllm PR #23184 (Llama-3.1-8B-Instruct, 0.10, piecewise only) logged
     * 6.00-8.00 MiB for each further size: the per-size figure is its top */
    assert_true(g.per_size >= 8 * MiB && g.per_size <= 9 * MiB);
    /* 256 sequences: piecewise up to 512 (51), full decode up to 256 (35),
     * as vLLM 0.19 logs "PIECEWISE=51 (largest=512), FULL=35 (largest=256)" */
    c.mns = 256;
    vf__vllm_graph_bytes(&m->hp, &c, &g);
    assert_int_equal(g.sizes, 51);
    assert_int_equal(g.full_sizes, 35);
    /* 4 sequences, piecewise only (0.9-0.10): 1, 2, 4, 8 */
    c.mns = 4, c.mode = VF__VG_PIECEWISE;
    vf__vllm_graph_bytes(&m->hp, &c, &g);
    assert_int_equal(g.sizes, 4);
    assert_int_equal(g.largest, 8);
    assert_int_equal(g.full_sizes, 0);
    assert_int_equal(g.graphs, 4 * 33);
    /* 100 sequences: max 200: 1, 2, 4, 8..200 = 3 + 25 */
    c.mns = 100;
    vf__vllm_graph_bytes(&m->hp, &c, &g);
    assert_int_equal(g.sizes, 28);
    assert_int_equal(g.largest, 200);
    /* 64 batched tokens cap the sizes: 1, 2, 4, 8..64 */
    c.mns = 1024, c.mnbt = 64;
    vf__vllm_graph_bytes(&m->hp, &c, &g);
    assert_int_equal(g.sizes, 11);
    assert_int_equal(g.largest, 64);
    /* gpt-oss's 1024: 3 + 31 + (256..1024 step 16 = 49) = 83, vLLM 0.19's
     * "PIECEWISE=83 (largest=1024)" */
    c.mnbt = 8192, c.max_capture = 1024, c.mode = VF__VG_FULL_AND_PIECEWISE;
    vf__vllm_graph_bytes(&m->hp, &c, &g);
    assert_int_equal(g.sizes, 83);
    assert_int_equal(g.largest, 1024);
    /* V0 (0.6.x): one full graph per batch size up to 256: 35, pool 256 x
     * 4096 x 128 = 128 MiB */
    c = (vf__vllm_graph_cfg){.mns = 256, .mnbt = 8192, .a = 2, .tp = 1, .layers = 32, .v0_max = 256,
                             .mode = VF__VG_V0};
    vf__vllm_graph_bytes(&m->hp, &c, &g);
    assert_int_equal(g.sizes, 35);
    assert_int_equal(g.graphs, 35);
    assert_int_equal(g.pool, 128 * MiB);
    assert_int_equal(g.bytes, 128 * MiB + 35 * 8 * MiB);
    /* V0 from 0.7: up to 512 with 512 sequences: 3 + 64 = 67 sizes */
    c.mns = 512, c.v0_max = 512;
    vf__vllm_graph_bytes(&m->hp, &c, &g);
    assert_int_equal(g.sizes, 67);
    /* --enforce-eager: no graphs in the overhead; V0 now has them */
    vf_estimate_opts o;
    vllm_opts(&o, 79.18, "H100", "0.11.0", 16000, 0);
    vf_estimate with = itl_run(m, &o);
    o.infer.enforce_eager = true;
    vf_estimate without = itl_run(m, &o);
    assert_int_equal(with.overhead - without.overhead, with.cuda_graph_bytes);
    assert_int_equal(with.outside_bytes - without.outside_bytes, with.cuda_graph_bytes);
    assert_int_equal(without.cuda_graph_bytes, 0);
    assert_int_equal(with.cuda_graph_bytes, 256 * MiB + 102 * 8 * MiB);
    vllm_opts(&o, 79.22, "H100", "0.6.5", 0, 0);
    vf_estimate v0 = itl_run(m, &o);
    assert_int_equal(v0.cuda_graph_bytes, 128 * MiB + 35 * 8 * MiB);
    vf_model_free(m);
}

/* A model's MoE layers cost more per size (320 KiB, 384 with shared
 * experts); a pipeline rank captures its own layers only. */
static void test_vllm_graphs_moe_pp(void **state)
{
    (void)state;
    const uint64_t MiB = 1 << 20, KiB = 1 << 10;
    vf_model *m = itl_open("openai/gpt-oss-20b");
    assert_int_equal(vf__vllm_graph_layer_bytes(&m->hp), 320 * KiB);
    vf_model_free(m);
    m = itl_open("Qwen/Qwen1.5-MoE-A2.7B-Chat");
    assert_int_equal(vf__vllm_graph_layer_bytes(&m->hp), 384 * KiB);
    vf_model_free(m);
    m = itl_llama3_8b(131072);
    vf_estimate_opts o;
    vllm_opts(&o, 79.18, "H100", "0.19.0", 8192, 0);
    o.pp = 2; /* 16 layers a rank: 2 + 16 x 0.1875 = 5 MiB a size */
    vf_estimate e = itl_run(m, &o);
    assert_int_equal(e.cuda_graph_bytes, 256 * MiB + 102 * 5 * MiB);
    vf_model_free(m);
}

/* gpt-oss's MXFP4 experts as vLLM holds them, by backend (derived by hand
 * from quantization/mxfp4.py create_weights and triton_kernels' Hopper
 * layouts; E 32, hidden 2880, intermediate 2880, 24 layers):
 *  stored per layer: w13 32 x 5760 x 1440 + scales 32 x 5760 x 90, w2
 *    32 x 2880 x 1440 + 32 x 2880 x 90, biases 32 x 8640 x 2
 *    = 265420800 + 16588800 + 132710400 + 8294400 + 552960 = 423567360;
 *  TRITON (Hopper): values 32 x 1472 x 5888 and 32 x 1472 x 3072, scales
 *    32 x 5888 x 90 and 32 x 3072 x 90, biases float32 32 x 8640 x 4
 *    = 277348352 + 144703488 + 16957440 + 8847360 + 1105920 = 448962560;
 *  MARLIN (Ampere): intermediate 2944, hidden 3072: 32 x 5888 x 1536 +
 *    32 x 5888 x 96 + 32 x 3072 x 1472 + 32 x 3072 x 92 + 32 x 8960 x 2
 *    = 289406976 + 18087936 + 144703488 + 9043968 + 573440 = 461815808;
 *  FlashInfer SM100: both 3072: 32 x 6144 x 1536 + 32 x 6144 x 96 + 32 x
 *    3072 x 1536 + 32 x 3072 x 96 + 32 x 9216 x 4
 *    = 301989888 + 18874368 + 150994944 + 9437184 + 1179648 = 482476032.
 * vLLM 0.11.0 logged 13.47 GiB on an H100 (llm-d-planner), 0.19.0 13.72
 * GiB on an A100 (myoceane.fr): measured.csv A5. */
static void test_vllm_mxfp4_layout(void **state)
{
    (void)state;
    vf_model *m = itl_open("openai/gpt-oss-20b");
    assert_int_equal(vf__vllm_mxfp4_backend("H100"), VF__MXFP4_TRITON);
    assert_int_equal(vf__vllm_mxfp4_backend("A100-SXM-80GB"), VF__MXFP4_MARLIN);
    assert_int_equal(vf__vllm_mxfp4_backend("B200"), VF__MXFP4_FLASHINFER);
    assert_int_equal(vf__vllm_mxfp4_backend("RTX 5090"), VF__MXFP4_MARLIN);
    const uint64_t stored = 423567360;
    assert_int_equal(vf__vllm_mxfp4_extra(&m->hp, 1, VF__MXFP4_TRITON), 448962560 - stored);
    assert_int_equal(vf__vllm_mxfp4_extra(&m->hp, 1, VF__MXFP4_MARLIN), 461815808 - stored);
    assert_int_equal(vf__vllm_mxfp4_extra(&m->hp, 1, VF__MXFP4_FLASHINFER), 482476032 - stored);
    /* TP 2, Hopper: intermediate 1440 a rank, padded to 1472: values 32 x
     * 1472 x round_up(2944, 256) = 3072 and 32 x 768 (736 bytes to 768) x
     * 3072, scales 32 x 3072 x 90 and 32 x 3072 x 46, biases 32 x (2944 +
     * 2880) x 4; stored
     * 32 x 2880 x 1440 + 32 x 2880 x 90 + 32 x 2880 x 720 + 32 x 2880 x 45 +
     * 32 x 5760 x 2 */
    uint64_t tri2 = 32ull * 1472 * 3072 + 32ull * 768 * 3072 + 32ull * 3072 * 90 + 32ull * 3072 * 46 + 32ull * 5824 * 4;
    uint64_t st2 = 32ull * 2880 * 1440 + 32ull * 2880 * 90 + 32ull * 2880 * 720 + 32ull * 2880 * 45 + 32ull * 5760 * 2;
    assert_int_equal(vf__vllm_mxfp4_extra(&m->hp, 2, VF__MXFP4_TRITON), tri2 - st2);
    /* the vLLM weights carry it over the 24 layers; --weights other than as
     * stored (bf16) does not */
    vf_estimate_opts o;
    vllm_opts(&o, 79.18, "H100", "0.11.0", 16000, 0);
    vf_estimate e = itl_run(m, &o);
    vllm_opts(&o, 79.18, "A100-SXM-80GB", "0.11.0", 16000, 0);
    vf_estimate a = itl_run(m, &o);
    assert_int_equal(a.weights - e.weights, 24 * (461815808ull - 448962560ull));
    /* against the measurements: within 1 % */
    assert_true(fabs(itl_rel(e.weights / GIB, 13.47)) < 0.01);
    vllm_opts(&o, 80.0, "A100-SXM-80GB", "0.19.0", 131072, 0);
    assert_true(fabs(itl_rel(itl_run(m, &o).weights / GIB, 13.72)) < 0.01);
    vf_model_free(m);
}

/* vLLM's LoRA slots (vf__vllm_lora_bytes), derived by hand from
 * vllm/lora/layers (column/row parallel stacks, fused_moe.py, the embedding
 * and logits processor wrappers). Qwen3-30B-A3B: 48 MoE layers, h 2048, q 32
 * x 128, kv 4 x 128, 128 experts of 768, no shared experts, vocab 151936,
 * untied, bf16; per layer and unit of rank: attention 3 x 2048 + (4096 + 2 x
 * 512) + 4096 + 2048 = 17408, router 2048 + 128, experts 128 x (3 x 2048 + 3
 * x 768) = 1081344; embedding and head 2 x 151936 + 2 x 2048. */
static void test_vllm_lora_slots(void **state)
{
    (void)state;
    vf_model *m = itl_open("Qwen/Qwen3-30B-A3B");
    vf_estimate_opts o;
    vllm_opts(&o, 79.18, "H100", "", 8192, 0);
    o.max_loras = 4;
    vf__lora l;
    assert_int_equal(vf__vllm_lora_bytes(m, &o, 1, 2, &l), VF_OK);
    const uint64_t layer = 17408 + 2048 + 128 + 1081344, voc = 2 * 151936 + 2 * 2048;
    assert_int_equal(l.expert_layers, 48);
    assert_int_equal(l.layers, 48 * layer * 16 * 4 * 2);
    assert_int_equal(l.vocab, voc * 16 * 4 * 2);
    assert_int_equal(l.base, 0);
    assert_int_equal(l.bytes, l.layers + l.vocab);
    /* TP 2: B of q/k/v, gate/up and A of o/down split; experts' I split;
     * embedding and head whole on every rank: attention 3 x 2048 + (4096 +
     * 1024) / 2 + 4096 / 2 + 2048 = 12800, experts 128 x (6144 + 3 x 384) */
    assert_int_equal(vf__vllm_lora_bytes(m, &o, 2, 2, &l), VF_OK);
    assert_int_equal(l.layers, 48ull * (12800 + 2176 + 128 * (6144 + 1152)) * 16 * 4 * 2);
    assert_int_equal(l.vocab, voc * 16 * 4 * 2);
    /* vLLM 0.11.0: no MoE LoRA (0.11.2+) and 256 added tokens
     * (lora_extra_vocab_size, removed in 0.12): embedding A [V + 256, r],
     * head B [ceil((V + 256) / 256) x 256 = 152320, r], two [256, h] tensors;
     * the model's embedding and head 384 rows more each */
    snprintf(o.infer.vllm_version, sizeof o.infer.vllm_version, "0.11.0");
    assert_int_equal(vf__vllm_lora_bytes(m, &o, 1, 2, &l), VF_OK);
    assert_int_equal(l.layers, 48ull * (17408 + 2176) * 16 * 4 * 2);
    assert_int_equal(l.vocab, (152192ull + 2048 + 2048 + 152320) * 16 * 4 * 2 + 2ull * 256 * 2048 * 4 * 2);
    assert_int_equal(l.base, 2 * 384 * 2048 * 2);
    vf_model_free(m);
    /* gpt-oss: fused 3-D experts (FusedMoE3DWithLoRA): one w13 A slice,
     * 32 x (2 x 2880 + 3 x 2880) per layer */
    m = itl_open("openai/gpt-oss-20b");
    snprintf(o.infer.vllm_version, sizeof o.infer.vllm_version, "%s", "");
    o.max_loras = 1;
    assert_int_equal(vf__vllm_lora_bytes(m, &o, 1, 2, &l), VF_OK);
    const uint64_t attn = 3 * 2880 + (64 * 64 + 2 * 8 * 64) + 64 * 64 + 2880;
    assert_int_equal(l.layers, 24ull * (attn + 2880 + 32 + 32 * (2 * 2880 + 3 * 2880)) * 16 * 2);
    vf_model_free(m);
}

/* The layouts vLLM stops at start-up, each with the figures that decide it
 * worked by hand from the rule in vLLM's source (vllm_layout.c cites them). */
static void test_vllm_layout_rules(void **state)
{
    (void)state;
    char why[VF_NOTE_LEN];
    vf_hparams hp = {.n_layers = 2, .hidden_size = 4096, .intermediate_size = 12288, .n_heads = 32,
                     .n_kv_heads = 8, .vocab_size = 151936};
    assert_true(vf__vllm_layout_ok(&hp, 1, false, why, sizeof why));
    assert_true(vf__vllm_layout_ok(&hp, 8, false, why, sizeof why));
    assert_true(vf__vllm_layout_ok(&hp, 16, false, why, sizeof why)); /* 8 KV heads replicated twice */
    assert_false(vf__vllm_layout_ok(&hp, 3, false, why, sizeof why));
    assert_non_null(strstr(why, "Total number of attention heads (32) must be divisible by tensor parallel size (3)"));
    /* 12 heads, 4 KV heads: tp 3 passes the heads, then the vocabulary:
     * 151936 (a multiple of 64 already) is not a multiple of 3 */
    hp.n_heads = 12, hp.n_kv_heads = 4;
    assert_false(vf__vllm_layout_ok(&hp, 3, false, why, sizeof why));
    assert_non_null(strstr(why, "151936 is not divisible by 3"));
    /* tp 6 with a vocabulary of 152064 = 64 x 2376, which divides by 6: 4 KV
     * heads neither split over 6 ranks nor replicate evenly */
    hp.vocab_size = 152064;
    assert_false(vf__vllm_layout_ok(&hp, 6, false, why, sizeof why));
    assert_non_null(strstr(why, "4 KV heads do not divide tensor parallel size 6"));
    /* a dense MLP of 12290 on 4 ranks */
    hp.n_heads = 32, hp.n_kv_heads = 8, hp.intermediate_size = 12290;
    assert_false(vf__vllm_layout_ok(&hp, 4, false, why, sizeof why));
    assert_non_null(strstr(why, "12290 is not divisible by 4"));
    /* FP8 blocks of 128: experts of 768 give 192 per rank at tp 4, 384 at tp 2; whole under EP */
    hp.intermediate_size = 6144, hp.n_experts = 128, hp.n_experts_active = 8, hp.moe_intermediate_size = 768;
    snprintf(hp.quant_method, sizeof hp.quant_method, "fp8");
    hp.quant_block_n = hp.quant_block_k = 128;
    assert_true(vf__vllm_layout_ok(&hp, 2, false, why, sizeof why));
    assert_false(vf__vllm_layout_ok(&hp, 4, false, why, sizeof why));
    assert_non_null(strstr(why, "gate's and up's weight = 192 is not divisible by weight quantization block_n = 128"));
    assert_true(vf__vllm_layout_ok(&hp, 4, true, why, sizeof why));
    /* expert parallel without experts */
    hp.n_experts = 0;
    assert_false(vf__vllm_layout_ok(&hp, 2, true, why, sizeof why));
    assert_non_null(strstr(why, "Number of experts in the model must be greater than 0"));
}

/* --enable-expert-parallel on Qwen3-30B-A3B (48 layers, 128 experts of 3 x
 * 768 x 2048 bf16 weights): tp 2 x dp 2 holds 32 whole experts per layer
 * where tp 2 holds half of all 128, so a rank drops a quarter of the experts'
 * 48 x 128 x 3 x 768 x 2048 x 2 B; ep must be tp x dp. */
static void test_vllm_expert_parallel(void **state)
{
    (void)state;
    vf_model *m = itl_open("Qwen/Qwen3-30B-A3B");
    vf_estimate_opts o;
    vllm_opts(&o, 79.18, "H100", "", 8192, 0);
    o.tp = 2;
    vf_estimate tp2 = itl_run(m, &o);
    o.gpus = 4, o.ep = 4;
    vf_estimate ep4 = itl_run(m, &o);
    assert_int_equal(tp2.weights - ep4.weights, 48ull * 128 * 3 * 768 * 2048 * 2 / 4);
    vf_estimate e;
    vf_error err = {0};
    o.ep = 2; /* not tp x dp = 4 */
    assert_int_not_equal(vf_estimate_run(m, &o, &e, &err), VF_OK);
    assert_non_null(strstr(err.msg, "tensor parallel x data parallel"));
    vf_model_free(m);
}

/* Qwen3.5-27B (16 of 64 layers full attention, 4 KV heads of 256, bf16:
 * 4096 B per token and layer; 48 Gated DeltaNet layers): the attention block
 * is raised to 784 tokens (3,207,168 B of state / 4096, rounded up to 16),
 * every page 784 x 4096 B, 4 groups of 16 layers, so a block is 16 pages.
 * vLLM prints num_blocks // 4 x 784 tokens (kv_cache_utils.py
 * _report_kv_cache_config), and with CUDA graphs stops when max_num_seqs
 * exceeds the blocks (config/compilation.py). */
static void test_vllm_hybrid_tokens(void **state)
{
    (void)state;
    vf_model *m = itl_open(REF "/models2026/Qwen__Qwen3.5-27B.json");
    vf_estimate_opts o;
    vllm_opts(&o, 79.18, "H100", "", 131072, 64);
    vf_estimate e = itl_run(m, &o);
    assert_true(e.starts);
    const uint64_t block = 16ull * 784 * 4096;
    assert_int_equal(e.kv_cache_tokens, e.kv_cache / block / 4 * 784);
    o.infer.max_num_seqs = 1024; /* vLLM's default on an H100 */
    e = itl_run(m, &o);
    assert_false(e.starts);
    assert_non_null(strstr(e.reason, "max_num_seqs (1024) exceeds available Mamba cache blocks"));
    o.infer.enforce_eager = true; /* no full decode graphs, no such check */
    e = itl_run(m, &o);
    assert_true(e.starts);
    vf_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vllm_profile_rows),
        cmocka_unit_test(test_vllm_profile_terms),
        cmocka_unit_test(test_vllm_sampler_019),
        cmocka_unit_test(test_vllm_pp_indices),
        cmocka_unit_test(test_vllm_pipeline_ranks),
        cmocka_unit_test(test_vllm_graphs),
        cmocka_unit_test(test_vllm_graphs_moe_pp),
        cmocka_unit_test(test_vllm_mxfp4_layout),
        cmocka_unit_test(test_vllm_lora_slots),
        cmocka_unit_test(test_vllm_layout_rules),
        cmocka_unit_test(test_vllm_expert_parallel),
        cmocka_unit_test(test_vllm_hybrid_tokens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
