/* test_train_replay.c — the training step as the caching allocator meets it
 * (train_replay.c, train_replay_shard.c), for the modes past plain training:
 * LoRA, QLoRA, gradient accumulation and ZeRO-3. The traces are small enough to follow by hand:
 * a one-block model whose embedding is 64 MiB (one large-pool segment of its
 * own size, rounded to 2 MiB) and whose q and v matrices are 2 MiB each
 * (requests between 1 and 10 MiB: a 20 MiB segment they split), with no
 * activations (every activation term set to 0), so that the adapters, their
 * gradients and states, the inputs and the 4-bit data fall in the small pool
 * (requests <= 1 MiB, 2 MiB segments). The rules are CUDACachingAllocator.cpp's
 * (alloc_torch.c, checked in test_alloc_torch.c); the figures below are
 * summed by hand from them. Then a property over a grid of knobs: the
 * reserved peak is never below the allocated one, in every mode (LoRA,
 * QLoRA, accumulation, ZeRO 1-3, FSDP, offload), and none is left as
 * reserved = allocated. */
#include "trainutil.h"
#include "memory/train/train_internal.h"
#include "memory/torch/replay_torch.h"

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)

/* embed [32768, 1024] bf16 = 64 MiB; q_proj and v_proj [1024, 1024] = 2 MiB */
static vf_model *tiny(void)
{
    vf_model *m = vf__model_new(VF_FORMAT_CONFIG, "tiny");
    assert_non_null(m);
    tr_add(m, VF_DTYPE_BF16, "model.embed_tokens.weight", -1, 2, 32768, 1024, 0, 0);
    tr_add(m, VF_DTYPE_BF16, "model.layers.%d.self_attn.q_proj.weight", 0, 2, 1024, 1024, 0, 0);
    tr_add(m, VF_DTYPE_BF16, "model.layers.%d.self_attn.v_proj.weight", 0, 2, 1024, 1024, 0, 0);
    json_t *cfg = json_object();
    json_object_set_new(cfg, "model_type", json_string("llama"));
    json_object_set_new(cfg, "hidden_size", json_integer(1024));
    json_object_set_new(cfg, "num_hidden_layers", json_integer(1));
    json_object_set_new(cfg, "num_attention_heads", json_integer(8));
    json_object_set_new(cfg, "vocab_size", json_integer(32768));
    json_object_set_new(cfg, "intermediate_size", json_integer(1024));
    m->config = cfg;
    vf__model_classify(m);
    assert_int_equal(m->tensors[1].role, VF_ROLE_ATTN_Q);
    assert_int_equal(m->tensors[2].layer, 0);
    return m;
}

/* LoRA rank 8 on q and v over a bf16 base: adapters, gradients and AdamW
 * moments in fp32, one token per step, no activations, no foreach
 * temporaries, no workspace. */
static vf__tstats replay_as(const char *qlora, uint32_t accum, int zero, const vf__tplace *place)
{
    vf_model *m = tiny();
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.mode = VF_MODE_TRAINING;
    o.train.optimizer = VF_OPT_ADAMW;
    o.train.lora_rank = 8;
    snprintf(o.train.qlora, sizeof o.train.qlora, "%s", qlora);
    vf__tarch a = {.n_layers = 1, .hidden = 1024, .inter = 1024, .vocab = 32768};
    vf__tcfg c = {.b = 1, .s = 1, .T = 1, .accum = accum, .gpus = 1, .tp = 1, .pp = 1, .ep = 1, .dp = 1,
                  .act = 2, .resid = 2, .w_bytes = 4, .g_bytes = 4, .st_bytes = 4, .frozen_bytes = 2,
                  .lora = true, .qlora = qlora[0] != 0, .lora_rank = 8, .zero = zero};
    if (zero)
        c.gpus = c.dp = 4;
    vf__tacts acts;
    memset(&acts, 0, sizeof acts);
    vf__tplace p;
    memset(&p, 0, sizeof p);
    if (place)
        p = *place;
    vf__replay r;
    assert_int_equal(vf__replay_open(&r, &o, NULL), VF_OK);
    assert_true(vf__train_replay(&r, m, &o.train, &a, &c, &acts, &p, 0, 0));
    assert_false(r.broken);
    vf__tstats s = vf__replay_stats(&r);
    vf__replay_close(&r);
    vf_model_free(m);
    return s;
}

static vf__tstats replay(const char *qlora, uint32_t accum) { return replay_as(qlora, accum, 0, NULL); }

/* Each adapter is 8 x 1024 fp32 = 32 KiB (q_A, q_B, v_A, v_B), so are their
 * gradients; AdamW's states per adapter are exp_avg and exp_avg_sq (32 KiB
 * each) and the 4-byte step (a 512-byte block); input ids and labels are
 * 8 bytes each (512-byte blocks). */
static const uint64_t adapters = 4 * 32 * KiB, grads = 4 * 32 * KiB, inputs = 2 * 512;
static const uint64_t states = 4 * (2 * 32 * KiB + 512);

static void test_lora_trace(void **state)
{
    (void)state;
    vf__tstats s = replay("", 1);
    /* step 2's optimizer step: the base (64 + 2 + 2 MiB), adapters, inputs,
     * gradients and states all alive */
    assert_int_equal(s.peak_allocated, 68 * MiB + adapters + inputs + grads + states);
    /* the embedding's 64 MiB segment, q and v in one 20 MiB segment, and
     * everything else (under 1 MiB in all, ever) in one 2 MiB small segment */
    assert_int_equal(s.peak_reserved, 64 * MiB + 20 * MiB + 2 * MiB);
    assert_int_equal(s.segments, 3);
}

static void test_accumulation_trace(void **state)
{
    (void)state;
    vf__tstats s = replay("", 2);
    /* the second micro-batch's backward: the first one's gradients are kept
     * and AccumulateGrad makes each new one (32 KiB) before adding it in, so
     * one 32 KiB more than the optimizer step holds; its inputs replaced the
     * first micro-batch's (made before those are dropped, but then no
     * gradient is alive yet in step 2's first moments) */
    assert_int_equal(s.peak_allocated, 68 * MiB + adapters + inputs + grads + states + 32 * KiB);
    assert_int_equal(s.peak_reserved, 86 * MiB);
}

static void test_qlora_trace(void **state)
{
    (void)state;
    /* NF4: q and v as 512 KiB of packed data and 16384 fp32 absmax (64 KiB)
     * each, quantized from their 2 MiB bf16 source on the GPU; the embedding
     * stays bf16 */
    const uint64_t nf4 = 2 * (512 * KiB + 64 * KiB);
    vf__tstats s = replay("nf4", 1);
    /* the peak is a backward dequantization in step 2: q (then v) as 2 MiB
     * of bf16 beside the base, adapters, inputs and states (the gradients of
     * step 1 dropped by zero_grad, step 2's not made yet); the load's peak,
     * 64 MiB + the 2 MiB source + 576 KiB, is lower */
    assert_int_equal(s.peak_allocated, 64 * MiB + nf4 + adapters + inputs + states + 2 * MiB);
    /* the sources and then the dequantized copies reuse one 20 MiB segment;
     * the 4-bit data, scales and all the small tensors (1,839,104 bytes made
     * in all) one 2 MiB small segment */
    assert_int_equal(s.peak_reserved, 64 * MiB + 20 * MiB + 2 * MiB);
    assert_int_equal(s.segments, 3);
}

/* DeepSpeed ZeRO-3 over 4 GPUs, the same LoRA: the memory model's shares
 * (a quarter of the parameters, gradients and states) set by hand. Units:
 * the embedding (64 MiB, frozen) and the block (q and v frozen, 4 MiB, with
 * the adapters' 128 KiB: 4,325,376 B). */
static void test_zero3_trace(void **state)
{
    (void)state;
    const uint64_t block = 4 * MiB + adapters;
    vf__tplace p;
    memset(&p, 0, sizeof p);
    p.weights = (64 * MiB + block) / 4;
    p.grads = grads / 4;
    p.optimizer = (2 * 4 * 32 * KiB + 4 * 512) / 4;
    vf__tstats s = replay_as("", 1, 3, &p);
    /* resident: the embedding's shard, 16 MiB (a segment of its own), the
     * block's, 1,081,344 B (over 1 MiB: a 20 MiB segment), and stage 3's flat
     * reduce buffer, 5e8 fp32 elements = 2e9 B in a segment rounded to 2 MiB:
     * 954 x 2 MiB. The forward gathers the embedding whole (a 64 MiB
     * segment) and the block whole (4,325,376 B, from the 20 MiB segment's
     * rest); the inputs, the gradients (one adapter's 32 KiB at a time, then
     * its quarter) and the states' quarters fit one small segment. Step 2 finds
     * all of it cached. */
    assert_int_equal(s.peak_reserved, 16 * MiB + 20 * MiB + 954 * 2 * MiB + 64 * MiB + 2 * MiB);
    /* the peak: step 2's forward with both units gathered beside the shards,
     * the reduce buffer, the inputs and the states (exp_avg and exp_avg_sq of
     * 128 KiB each and the four 512-byte step tensors, a quarter of each).
     * The reduce buffer's block is its whole segment: the 683,008 B left
     * over are under kSmallSize, so the block is not split (should_split)
     * and torch counts them allocated. */
    assert_int_equal(s.peak_allocated,
                     16 * MiB + block / 4 + 954 * 2 * MiB + inputs + (2 * 32 * KiB + 512) + 64 * MiB + block);
}

/* Over a grid of knobs, every training mode: the reserved peak is never
 * below the allocated one, the device holds at least both plus the context,
 * and the modes replayed no longer say reserved = allocated. */
static void test_reserved_covers_allocated(void **state)
{
    (void)state;
    tr_shape sh = {.family = "llama", .hidden = 512, .inter = 1536, .vocab = 32000, .n_positions = 4096,
                   .layers = 4, .heads = 8, .kv_heads = 4, .head_dim = 64, .act = "silu", .dtype = VF_DTYPE_BF16};
    vf_model *m = tr_build(&sh);
    static const char *const qlora[] = {"", "nf4", "nf4-dq"};
    static const struct { int zero, fsdp; vf_offload off; } dist[] = {
        {0, 0, VF_OFFLOAD_NONE}, {1, 0, VF_OFFLOAD_NONE}, {2, 0, VF_OFFLOAD_NONE}, {3, 0, VF_OFFLOAD_NONE},
        {0, 1, VF_OFFLOAD_NONE}, {0, 2, VF_OFFLOAD_NONE}, {2, 0, VF_OFFLOAD_OPTIMIZER}, {3, 0, VF_OFFLOAD_BOTH},
    };
    size_t runs = 0;
    for (uint32_t rank = 0; rank <= 16; rank += 16)
        for (size_t q = 0; q < (rank ? 3u : 1u); q++)
            for (uint32_t accum = 1; accum <= 4; accum += 3)
                for (size_t d = 0; d < sizeof dist / sizeof dist[0]; d++)
                    for (uint64_t b = 1; b <= 4; b += 3) {
                        vf_estimate_opts o;
                        vf_estimate_opts_init(&o);
                        o.mode = VF_MODE_TRAINING;
                        o.runtime = VF_RUNTIME_TRANSFORMERS;
                        o.gpu_bytes = (uint64_t)80 << 30;
                        o.gpus = dist[d].zero || dist[d].fsdp ? 4 : 1;
                        o.train.micro_batch = b;
                        o.train.seq_len = 1000;
                        o.train.grad_accum = accum;
                        o.train.lora_rank = rank;
                        snprintf(o.train.qlora, sizeof o.train.qlora, "%s", qlora[q]);
                        o.train.zero = dist[d].zero;
                        o.train.fsdp = dist[d].fsdp;
                        o.train.offload = dist[d].off;
                        vf_estimate e;
                        assert_int_equal(vf_estimate_run(m, &o, &e, NULL), VF_OK);
                        assert_true(e.reserved_bytes >= e.allocated_bytes);
                        assert_true(e.allocated_bytes > 0);
                        assert_true(e.device_bytes >= e.reserved_bytes + e.context_bytes);
                        assert_true(e.per_gpu_bytes >= e.device_bytes);
                        for (size_t i = 0; i < e.n_assumptions; i++)
                            assert_null(strstr(e.assumptions[i], "reserved taken as allocated"));
                        runs++;
                    }
    assert_int_equal(runs, 4 * 2 * 8 * 2);
    vf_model_free(m);
}

/* The order of the gradients, against torch: the 1.13 trace of
 * llama_full_bf16_gcnr_b2s256 (tests/reference/train-runs/trace.py: hidden
 * 256, 2 blocks, 8 / 2 heads of 32, SwiGLU 688, vocab 8192, untied, bf16)
 * lists what its step-1 backward allocated and still held when the backward
 * ended: the parameters' gradients, in the order autograd made them. The
 * replay of the same model (every activation term 0, so that its requests
 * are the inputs, then the gradients, then the optimizer states) must make
 * the gradients of its matrices in that order: sizes 4,194,304 (the head),
 * then per block 352,256 x 3 (down, up, gate), 131,072 (o), 32,768 x 2
 * (v, k), 131,072 (q), the last block first, then the embedding. The norms'
 * 512-byte gradients (the small pool) take the place of the matrix before
 * them in the model's tensor order and are left out of the comparison. */
typedef struct rec {
    uint64_t *b, *live; /* each request, and what was allocated before it */
    size_t n, cap;
} rec;

static void record(void *ctx, uint64_t bytes, uint64_t allocated)
{
    rec *r = ctx;
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 256;
        r->b = realloc(r->b, r->cap * sizeof *r->b);
        r->live = realloc(r->live, r->cap * sizeof *r->live);
        assert_non_null(r->b);
        assert_non_null(r->live);
    }
    r->live[r->n] = allocated;
    r->b[r->n++] = bytes;
}

#define TRACE "tests/reference/train-runs/traces/llama_full_bf16_gcnr_b2s256.tsv"

/* The trace's events of phase name, in order: bytes (+ alloc, - free), id. */
typedef struct tev {
    int64_t b, id;
} tev;

static size_t trace_phase(const char *name, tev *e, size_t cap, int64_t *live_before)
{
    FILE *f = fopen(TRACE, "r");
    assert_non_null(f);
    static char line[1 << 16];
    long want = -1;
    size_t n = 0;
    int64_t live = 0;
    *live_before = -1;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "# phases ", 9)) {
            json_t *ph = json_loads(line + 9, 0, NULL);
            assert_non_null(ph);
            for (size_t i = 0; i < json_array_size(ph); i++)
                if (!strcmp(json_string_value(json_array_get(ph, i)), name))
                    want = (long)i;
            json_decref(ph);
            continue;
        }
        long long b, id;
        long phase;
        if (line[0] == '#' || sscanf(line, "%lld\t%lld\t%ld", &b, &id, &phase) != 3)
            continue;
        if (phase == want) {
            if (*live_before < 0)
                *live_before = live;
            assert_true(n < cap);
            e[n++] = (tev){b, id};
        }
        live += b;
    }
    fclose(f);
    assert_true(want > 0 && n > 0);
    return n;
}

/* The trace's gradients (the backward's allocations alive at its end, in
 * order), those above 512 bytes, into g; their count. */
static size_t torch_grads(uint64_t *g, size_t cap)
{
    enum { MAX_EV = 1 << 14 };
    static tev e[MAX_EV];
    int64_t live0;
    size_t n_ev = trace_phase("s1.m0.backward", e, MAX_EV, &live0), n = 0;
    for (size_t k = 0; k < n_ev; k++) {
        if (e[k].b <= 512)
            continue;
        bool freed = false;
        for (size_t j = k + 1; j < n_ev && !freed; j++)
            freed = e[j].id == e[k].id && e[j].b < 0;
        if (!freed) {
            assert_true(n < cap);
            g[n++] = (uint64_t)e[k].b;
        }
    }
    return n;
}

/* The trace's model (trace.py's "llama": hidden 256, 2 blocks, 8 / 2 heads
 * of 32, SwiGLU 688, vocab 8192, untied, bf16; full fine-tuning, AdamW, no
 * foreach temporaries), 2 x 256 tokens, replayed with the activation terms
 * acts; every request it made, in order. */
static rec replay_trace_model(const vf__tacts *acts)
{
    tr_shape sh = {.family = "llama", .hidden = 256, .inter = 688, .vocab = 8192, .n_positions = 4096,
                   .layers = 2, .heads = 8, .kv_heads = 2, .head_dim = 32, .act = "silu", .dtype = VF_DTYPE_BF16};
    vf_model *m = tr_build(&sh);
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.mode = VF_MODE_TRAINING;
    o.train.optimizer = VF_OPT_ADAMW;
    vf__tarch a = {.n_layers = 2, .hidden = 256, .inter = 688, .vocab = 8192};
    vf__tcfg c = {.b = 2, .s = 256, .T = 512, .accum = 1, .gpus = 1, .tp = 1, .pp = 1, .ep = 1, .dp = 1,
                  .act = 2, .resid = 2, .w_bytes = 2, .g_bytes = 2, .st_bytes = 2};
    vf__tplace p;
    memset(&p, 0, sizeof p);
    vf__replay r;
    assert_int_equal(vf__replay_open(&r, &o, NULL), VF_OK);
    rec got = {0};
    r.on_request = record;
    r.on_request_ctx = &got;
    assert_true(vf__train_replay(&r, m, &o.train, &a, &c, acts, &p, 0, 0));
    assert_false(r.broken);
    vf__replay_close(&r);
    vf_model_free(m);
    return got;
}

static void test_gradient_order_is_torch(void **state)
{
    (void)state;
    uint64_t want[64];
    size_t n_want = torch_grads(want, 64);
    assert_int_equal(n_want, 2 + 2 * 7); /* head, embedding, 7 matrices per block */
    assert_int_equal(want[0], 4194304);
    assert_int_equal(want[1], 352256); /* down first: the block's last use */
    vf__tacts acts;
    memset(&acts, 0, sizeof acts);
    rec got = replay_trace_model(&acts);
    /* the inputs (int64 ids and labels, 4096 bytes each), then the 21 gradients */
    assert_true(got.n > 2 + 21);
    assert_int_equal(got.b[0], 8 * 512);
    assert_int_equal(got.b[1], 8 * 512);
    size_t n = 0;
    for (size_t k = 2; k < 2 + 21; k++)
        if (got.b[k] > 512) {
            assert_true(n < n_want);
            assert_int_equal(got.b[k], want[n]);
            n++;
        }
    assert_int_equal(n, n_want);
    free(got.b);
    free(got.live);
}

/* The loss's backward, against the same trace: its first allocations of
 * at least 1 MiB in s1.m0.backward are nll_loss's gradient (fp32 [T, V],
 * 16,777,216 B), log_softmax's (the same), the bf16 gradient of
 * logits.float() (8,388,608 B) and the head's weight gradient (4,194,304 B);
 * what was allocated before each, against before the first, says what
 * died between: +16,777,216 at the second (nll's alive), then nll's and the
 * saved log-probabilities freed before the bf16 one (-16,777,216 x 2 back
 * to the start), and the fp32 gradient freed before the head's (+8,388,608
 * - 16,777,216). The replay of the loss alone (logits, their fp32 copy,
 * the log-probabilities kept; every other activation 0) makes the same four
 * requests with the same allocated before each, to within the trace's
 * small tensors (the loss's 4-byte gradient, a 4 KiB one: 64 KiB). */
static void test_loss_backward_is_torch(void **state)
{
    (void)state;
    enum { MAX_EV = 1 << 14 };
    static tev e[MAX_EV];
    int64_t live0;
    size_t n_ev = trace_phase("s1.m0.backward", e, MAX_EV, &live0);
    uint64_t want_b[4];
    int64_t want_d[4], live = live0, first = 0;
    size_t n = 0;
    for (size_t k = 0; k < n_ev && n < 4; k++) {
        if (e[k].b >= (int64_t)MiB) {
            if (!n)
                first = live;
            want_b[n] = (uint64_t)e[k].b;
            want_d[n++] = live - first;
        }
        live += e[k].b;
    }
    assert_int_equal(n, 4);
    const uint64_t TV = 512 * 8192;
    assert_int_equal(want_b[0], 4 * TV);
    assert_int_equal(want_b[2], 2 * TV);
    vf__tacts acts;
    memset(&acts, 0, sizeof acts);
    acts.logits_tv = TV;
    acts.non_layer = 4 * TV;          /* the saved log-probabilities */
    acts.fwd_temp = 2 * TV + 4 * TV;  /* the bf16 logits and their fp32 copy */
    acts.bwd_start = 8 * TV;          /* nll's and log_softmax's gradients */
    rec got = replay_trace_model(&acts);
    /* step 1: the inputs, the forward's three (2TV, 4TV, 4TV), then the backward's */
    assert_true(got.n > 9);
    assert_int_equal(got.b[2], 2 * TV);
    assert_int_equal(got.b[3], 4 * TV);
    assert_int_equal(got.b[4], 4 * TV);
    for (size_t k = 0; k < 4; k++) {
        assert_int_equal(got.b[5 + k], want_b[k]);
        int64_t d = (int64_t)got.live[5 + k] - (int64_t)got.live[5];
        assert_true(d - want_d[k] <= (int64_t)(64 * KiB) && want_d[k] - d <= (int64_t)(64 * KiB));
    }
    free(got.b);
    free(got.live);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lora_trace),
        cmocka_unit_test(test_accumulation_trace),
        cmocka_unit_test(test_qlora_trace),
        cmocka_unit_test(test_zero3_trace),
        cmocka_unit_test(test_reserved_covers_allocated),
        cmocka_unit_test(test_gradient_order_is_torch),
        cmocka_unit_test(test_loss_backward_is_torch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
