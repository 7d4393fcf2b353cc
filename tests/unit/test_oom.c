/* test_oom.c — the out-of-memory scanner on real messages (tests/data/oom/,
 * SOURCES.md gives each one's origin) and on hostile input.
 *
 * Every expected figure is derived by hand from the message text, by the
 * rule the engine printed it with: PyTorch's format_size writes "%.2f" of
 * the bytes over 2^10, 2^20 or 2^30 (so "15.70 GiB" stands for
 * round(15.70 × 2^30) bytes), vLLM's format_gib "%.2f" GiB, ggml "%.2f MiB"
 * and "%zu" bytes. F2(15, 70, GiB) below is that arithmetic. Figures a
 * message does not state must be absent: the table lists all present ones. */
#include "testutil.h"

#include <math.h>

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)
/* "I.FF UNIT" printed with two decimals, as bytes (rounded to the nearest) */
#define F2(i, f, unit) ((((uint64_t)(i) * 100 + (f)) * (unit) + 50) / 100)

typedef struct fig {
    vf_oom_figure f;
    uint64_t v;
} fig;

typedef struct expect {
    const char *file, *engine, *kind, *phase, *buffer;
    int gpu;
    uint64_t errors;
    fig figs[10];
    uint32_t derived; /* bits of figures that follow from the stated ones */
} expect;

#define BIT(f) (1u << (f))

static const expect corpus[] = {
    {"torch2_backward.log", "pytorch", "cuda_oom", "backward", "", 0, 1,
     {{VF_OOM_REQUESTED, F2(226, 0, MiB)}, {VF_OOM_TOTAL, F2(15, 70, GiB)}, {VF_OOM_FREE, F2(210, 38, MiB)},
      {VF_OOM_PROCESS, F2(15, 48, GiB)}, {VF_OOM_ALLOCATED, F2(14, 81, GiB)},
      {VF_OOM_RESERVED_UNALLOCATED, F2(336, 73, MiB)}, {VF_OOM_RESERVED, F2(14, 81, GiB) + F2(336, 73, MiB)}},
     BIT(VF_OOM_RESERVED)},
    /* a vLLM worker's OOM: the engine from the line's prefix; the next line is another worker's */
    {"torch2_vllm_worker.log", "vllm", "cuda_oom", "", "", 2, 1,
     {{VF_OOM_REQUESTED, F2(20, 0, MiB)}, {VF_OOM_TOTAL, F2(14, 62, GiB)}, {VF_OOM_FREE, F2(3, 31, MiB)},
      {VF_OOM_PROCESS, F2(14, 61, GiB)}, {VF_OOM_ALLOCATED, F2(14, 42, GiB)},
      {VF_OOM_RESERVED_UNALLOCATED, F2(23, 14, MiB)}, {VF_OOM_RESERVED, F2(14, 42, GiB) + F2(23, 14, MiB)}},
     BIT(VF_OOM_RESERVED)},
    {"torch2_deepspeed_zero3_step.log", "deepspeed", "cuda_oom", "optimizer_step", "", 1, 1,
     {{VF_OOM_REQUESTED, F2(3, 39, GiB)}, {VF_OOM_TOTAL, F2(79, 32, GiB)}, {VF_OOM_FREE, F2(2, 40, GiB)},
      {VF_OOM_PROCESSES, F2(76, 92, GiB)}, {VF_OOM_ALLOCATED, F2(73, 28, GiB)},
      {VF_OOM_RESERVED_UNALLOCATED, F2(1, 59, GiB)}, {VF_OOM_RESERVED, F2(73, 28, GiB) + F2(1, 59, GiB)}},
     BIT(VF_OOM_RESERVED)},
    /* PyTorch 2.1's "total capacty" */
    {"torch21_capacty.log", "pytorch", "cuda_oom", "", "", 0, 1,
     {{VF_OOM_REQUESTED, F2(55, 57, GiB)}, {VF_OOM_TOTAL, F2(12, 0, GiB)}, {VF_OOM_FREE, F2(9, 2, GiB)},
      {VF_OOM_ALLOCATED, F2(984, 52, MiB)}, {VF_OOM_RESERVED_UNALLOCATED, F2(463, 48, MiB)},
      {VF_OOM_RESERVED, F2(984, 52, MiB) + F2(463, 48, MiB)}},
     BIT(VF_OOM_RESERVED)},
    /* "0 bytes is free" (format_size below 1 KiB) */
    {"torch21_zero_bytes_free.log", "pytorch", "cuda_oom", "", "", 0, 1,
     {{VF_OOM_REQUESTED, F2(27, 12, GiB)}, {VF_OOM_TOTAL, F2(11, 99, GiB)}, {VF_OOM_FREE, 0},
      {VF_OOM_ALLOCATED, F2(16, 16, GiB)}, {VF_OOM_RESERVED_UNALLOCATED, F2(144, 59, MiB)},
      {VF_OOM_RESERVED, F2(16, 16, GiB) + F2(144, 59, MiB)}},
     BIT(VF_OOM_RESERVED)},
    /* the exception and a logger print the same message: one error */
    {"torch21_process_twice.log", "pytorch", "cuda_oom", "", "", 0, 1,
     {{VF_OOM_REQUESTED, F2(128, 0, GiB)}, {VF_OOM_TOTAL, F2(23, 65, GiB)}, {VF_OOM_FREE, F2(7, 95, GiB)},
      {VF_OOM_PROCESSES, F2(7, 10, GiB)}, {VF_OOM_PROCESS, F2(8, 58, GiB)}, {VF_OOM_ALLOCATED, F2(8, 13, GiB)},
      {VF_OOM_RESERVED_UNALLOCATED, F2(8, 94, MiB)}, {VF_OOM_RESERVED, F2(8, 13, GiB) + F2(8, 94, MiB)}},
     BIT(VF_OOM_RESERVED)},
    {"hip_zero_allocated.log", "pytorch", "hip_oom", "", "", 0, 1,
     {{VF_OOM_REQUESTED, F2(16, 0, GiB)}, {VF_OOM_TOTAL, F2(15, 24, GiB)}, {VF_OOM_FREE, F2(15, 9, GiB)},
      {VF_OOM_ALLOCATED, 0}, {VF_OOM_RESERVED_UNALLOCATED, 0}, {VF_OOM_RESERVED, 0}},
     BIT(VF_OOM_RESERVED)},
    {"hip_fragmented_forward.log", "pytorch", "hip_oom", "forward", "", 7, 1,
     {{VF_OOM_REQUESTED, F2(2, 0, MiB)}, {VF_OOM_TOTAL, F2(287, 98, GiB)}, {VF_OOM_FREE, F2(203, 49, GiB)},
      {VF_OOM_ALLOCATED, F2(68, 63, GiB)}, {VF_OOM_RESERVED_UNALLOCATED, F2(14, 93, GiB)},
      {VF_OOM_RESERVED, F2(68, 63, GiB) + F2(14, 93, GiB)}},
     BIT(VF_OOM_RESERVED)},
    {"hip_printed_twice.log", "pytorch", "hip_oom", "", "", 0, 1,
     {{VF_OOM_REQUESTED, F2(124, 0, MiB)}, {VF_OOM_TOTAL, F2(19, 94, GiB)}, {VF_OOM_FREE, F2(554, 47, MiB)},
      {VF_OOM_ALLOCATED, F2(15, 87, GiB)}, {VF_OOM_RESERVED_UNALLOCATED, F2(165, 29, MiB)},
      {VF_OOM_RESERVED, F2(15, 87, GiB) + F2(165, 29, MiB)}},
     BIT(VF_OOM_RESERVED)},
    /* 1.x: reserved in total; reserved − allocated is the unallocated part */
    {"torch1_fragmented.log", "pytorch", "cuda_oom", "", "", 0, 1,
     {{VF_OOM_REQUESTED, F2(978, 0, MiB)}, {VF_OOM_TOTAL, F2(4, 0, GiB)}, {VF_OOM_ALLOCATED, F2(1, 68, GiB)},
      {VF_OOM_FREE, 0}, {VF_OOM_RESERVED, F2(2, 72, GiB)},
      {VF_OOM_RESERVED_UNALLOCATED, F2(2, 72, GiB) - F2(1, 68, GiB)}},
     BIT(VF_OOM_RESERVED_UNALLOCATED)},
    /* wrapped over lines as pasted in the report */
    {"torch1_wrapped.log", "pytorch", "cuda_oom", "", "", 0, 1,
     {{VF_OOM_REQUESTED, F2(198, 0, MiB)}, {VF_OOM_TOTAL, F2(31, 75, GiB)}, {VF_OOM_ALLOCATED, F2(28, 5, GiB)},
      {VF_OOM_FREE, F2(137, 69, MiB)}, {VF_OOM_RESERVED, F2(28, 8, GiB)},
      {VF_OOM_RESERVED_UNALLOCATED, F2(28, 8, GiB) - F2(28, 5, GiB)}},
     BIT(VF_OOM_RESERVED_UNALLOCATED)},
    {"torch1_a100_zero3.log", "pytorch", "cuda_oom", "", "", 0, 1,
     {{VF_OOM_REQUESTED, F2(172, 0, MiB)}, {VF_OOM_TOTAL, F2(79, 35, GiB)}, {VF_OOM_ALLOCATED, F2(73, 95, GiB)},
      {VF_OOM_FREE, F2(12, 19, MiB)}, {VF_OOM_RESERVED, F2(76, 80, GiB)},
      {VF_OOM_RESERVED_UNALLOCATED, F2(76, 80, GiB) - F2(73, 95, GiB)}},
     BIT(VF_OOM_RESERVED_UNALLOCATED)},
    {"torch1_gpu1.log", "pytorch", "cuda_oom", "", "", 1, 1,
     {{VF_OOM_REQUESTED, F2(130, 0, MiB)}, {VF_OOM_TOTAL, F2(7, 80, GiB)}, {VF_OOM_ALLOCATED, F2(5, 91, GiB)},
      {VF_OOM_FREE, F2(33, 56, MiB)}, {VF_OOM_RESERVED, F2(6, 9, GiB)},
      {VF_OOM_RESERVED_UNALLOCATED, F2(6, 9, GiB) - F2(5, 91, GiB)}},
     BIT(VF_OOM_RESERVED_UNALLOCATED)},
    /* 0.4-1.3: "cached" is the allocator's unused memory; KiB units */
    {"torch04_cached_kib.log", "pytorch", "cuda_oom", "", "", 0, 1,
     {{VF_OOM_REQUESTED, F2(1024, 0, KiB)}, {VF_OOM_TOTAL, F2(11, 17, GiB)}, {VF_OOM_ALLOCATED, F2(10, 90, GiB)},
      {VF_OOM_FREE, F2(576, 0, KiB)}, {VF_OOM_RESERVED_UNALLOCATED, F2(30, 96, MiB)},
      {VF_OOM_RESERVED, F2(10, 90, GiB) + F2(30, 96, MiB)}},
     BIT(VF_OOM_RESERVED)},
    {"torch04_free_exceeds.log", "pytorch", "cuda_oom", "", "", 0, 1,
     {{VF_OOM_REQUESTED, F2(8, 13, GiB)}, {VF_OOM_TOTAL, F2(10, 76, GiB)}, {VF_OOM_ALLOCATED, F2(643, 57, MiB)},
      {VF_OOM_FREE, F2(8, 20, GiB)}, {VF_OOM_RESERVED_UNALLOCATED, F2(32, 43, MiB)},
      {VF_OOM_RESERVED, F2(643, 57, MiB) + F2(32, 43, MiB)}},
     BIT(VF_OOM_RESERVED)},
    {"torch04_pr13751.log", "pytorch", "cuda_oom", "", "", 0, 1,
     {{VF_OOM_REQUESTED, F2(16, 0, GiB)}, {VF_OOM_TOTAL, F2(11, 93, GiB)}, {VF_OOM_ALLOCATED, F2(4, 0, GiB)},
      {VF_OOM_FREE, F2(7, 33, GiB)}, {VF_OOM_RESERVED_UNALLOCATED, F2(179, 0, KiB)},
      {VF_OOM_RESERVED, F2(4, 0, GiB) + F2(179, 0, KiB)}},
     BIT(VF_OOM_RESERVED)},
    {"cuda_error_pytorch.log", "pytorch", "cuda_error", "", "", -1, 1, {{0, 0}}, 0},
    {"cuda_error_accelerator.log", "pytorch", "cuda_error", "", "", -1, 1, {{0, 0}}, 0},
    {"vllm_v0_kv.log", "vllm", "kv_cache_too_small", "kv_allocation", "", -1, 1,
     {{VF_OOM_MAX_SEQ_LEN, 32768}, {VF_OOM_MAX_CONTEXT, 7344}}, 0},
    {"vllm_v0_kv_frames.log", "vllm", "kv_cache_too_small", "kv_allocation", "", -1, 1,
     {{VF_OOM_MAX_SEQ_LEN, 60000}, {VF_OOM_MAX_CONTEXT, 58384}}, 0},
    {"vllm_v1_kv.log", "vllm", "kv_cache_too_small", "kv_allocation", "", -1, 1,
     {{VF_OOM_MAX_SEQ_LEN, 8192}, {VF_OOM_NEEDED, F2(2, 63, GiB)}, {VF_OOM_AVAILABLE, F2(1, 64, GiB)},
      {VF_OOM_MAX_CONTEXT, 5088}},
     0},
    {"vllm_v1_kv_wrapped.log", "vllm", "kv_cache_too_small", "kv_allocation", "", -1, 1,
     {{VF_OOM_MAX_SEQ_LEN, 40960}, {VF_OOM_NEEDED, F2(5, 62, GiB)}, {VF_OOM_AVAILABLE, F2(4, 50, GiB)},
      {VF_OOM_MAX_CONTEXT, 32768}},
     0},
    {"vllm_no_cache_blocks.log", "vllm", "no_cache_memory", "kv_allocation", "", -1, 1, {{0, 0}}, 0},
    /* free/total in GiB with one unit for both; the request is utilization × total */
    {"vllm_startup.log", "vllm", "startup_free_memory", "startup", "", -1, 1,
     {{VF_OOM_FREE, F2(31, 44, GiB)}, {VF_OOM_AVAILABLE, F2(31, 44, GiB)}, {VF_OOM_TOTAL, F2(47, 38, GiB)},
      {VF_OOM_NEEDED, F2(45, 1, GiB)}},
     0},
    {"vllm_startup_h200.log", "vllm", "startup_free_memory", "startup", "", -1, 1,
     {{VF_OOM_FREE, F2(7, 34, GiB)}, {VF_OOM_AVAILABLE, F2(7, 34, GiB)}, {VF_OOM_TOTAL, F2(139, 72, GiB)},
      {VF_OOM_NEEDED, F2(125, 75, GiB)}},
     0},
    {"vllm_startup_cuda0.log", "vllm", "startup_free_memory", "startup", "", 0, 1,
     {{VF_OOM_FREE, F2(19, 77, GiB)}, {VF_OOM_AVAILABLE, F2(19, 77, GiB)}, {VF_OOM_TOTAL, F2(22, 5, GiB)},
      {VF_OOM_NEEDED, F2(19, 84, GiB)}},
     0},
    /* ggml: the "%zu" buffer size is exact where "%.2f MiB" rounds */
    {"llama_load.log", "llamacpp", "cuda_malloc", "loading", "CUDA0", 0, 1, {{VF_OOM_REQUESTED, 151851674624ull}}, 0},
    {"llama_compute.log", "llamacpp", "cuda_malloc", "compute_buffers", "CUDA0", 0, 1,
     {{VF_OOM_REQUESTED, 292926534144ull}}, 0},
    {"llama_compute_dev4.log", "llamacpp", "cuda_malloc", "compute_buffers", "CUDA4", 4, 1,
     {{VF_OOM_REQUESTED, 150995968}}, 0},
    {"llama_kv.log", "llamacpp", "cuda_malloc", "kv_allocation", "", 3, 1, {{VF_OOM_REQUESTED, F2(4480, 0, MiB)}}, 0},
    /* four attempts in full (the excerpt cuts the fifth): the first line is the tail of an earlier one */
    {"llama_repeats.log", "llamacpp", "cuda_malloc", "compute_buffers", "CUDA1", 1, 4,
     {{VF_OOM_REQUESTED, 10345253120ull}}, 0},
    {"llama_old_cuda_error.log", "llamacpp", "cuda_error", "", "", -1, 1, {{0, 0}}, 0},
    {"llama_host_buffer.log", "llamacpp", "buffer_alloc", "loading", "CPU", -1, 1, {{VF_OOM_REQUESTED, 437944320}}, 0},
    {"ollama_cuda_error.log", "llamacpp", "cuda_error", "", "", -1, 1, {{0, 0}}, 0},
    {"accelerate_zero.log", "accelerate", "batch_size_zero", "", "", -1, 1, {{0, 0}}, 0},
};

static vf_oom_report scan_bytes(const char *data, size_t n, size_t chunk, uint64_t device)
{
    vf_oom_scanner *s = vf_oom_open();
    assert_non_null(s);
    for (size_t i = 0; i < n; i += chunk)
        vf_oom_feed(s, data + i, n - i < chunk ? n - i : chunk);
    vf_oom_report r;
    vf_oom_finish(s, device, &r);
    vf_oom_free(s);
    return r;
}

static char *slurp(const char *name, size_t *n)
{
    char path[256];
    snprintf(path, sizeof path, "tests/data/oom/%s", name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[1 << 16];
    *n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    char *d = malloc(*n + 1);
    memcpy(d, buf, *n);
    d[*n] = '\0';
    return d;
}

static void check_one(const expect *x, const vf_oom_report *r)
{
    if (!r->found)
        fail_msg("%s: nothing found", x->file);
    assert_string_equal(r->engine, x->engine);
    assert_string_equal(r->kind, x->kind);
    assert_string_equal(r->phase, x->phase);
    assert_string_equal(r->buffer, x->buffer);
    assert_int_equal(r->gpu, x->gpu);
    assert_int_equal(r->errors, x->errors);
    uint32_t want = 0;
    /* the list ends at its first {0, 0} (no message states "0 bytes asked") */
    for (size_t i = 0; i < 10 && (x->figs[i].v || x->figs[i].f); i++) {
        vf_oom_figure f = x->figs[i].f;
        want |= BIT(f);
        if (r->figure[f] != x->figs[i].v)
            fail_msg("%s: %s is %llu, the message says %llu", x->file, vf_oom_figure_name(f),
                     (unsigned long long)r->figure[f], (unsigned long long)x->figs[i].v);
    }
    assert_int_equal(r->stated | r->derived, want);
    assert_int_equal(r->derived, x->derived);
    assert_true(r->line >= 1);
    assert_true(r->message[0] != '\0');
}

/* Every message of the corpus, fed whole and byte by byte (the window and the
 * chunking change nothing). */
static void test_corpus(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof corpus / sizeof corpus[0]; i++) {
        size_t n;
        char *d = slurp(corpus[i].file, &n);
        vf_oom_report a = scan_bytes(d, n, n ? n : 1, 0), b = scan_bytes(d, n, 1, 0);
        check_one(&corpus[i], &a);
        check_one(&corpus[i], &b);
        assert_memory_equal(&a, &b, sizeof a);
        free(d);
    }
}

static bool advice_has(const vf_oom_report *r, const char *s)
{
    for (size_t i = 0; i < r->n_advice; i++)
        if (strstr(r->advice[i], s))
            return true;
    return false;
}

static vf_oom_report scan_file(const char *name, uint64_t device)
{
    size_t n;
    char *d = slurp(name, &n);
    vf_oom_report r = scan_bytes(d, n, n, device);
    free(d);
    return r;
}

/* The advice follows the figures: fragmentation when the unallocated memory
 * could have held the request; vLLM's own length; the utilization that holds
 * the asked length (0.9 default + (2.63 − 1.64) GiB over 24 GiB = 0.94125). */
static void test_advice(void **state)
{
    (void)state;
    vf_oom_report r = scan_file("torch1_fragmented.log", 0); /* 1.04 GiB unallocated ≥ 978 MiB asked */
    assert_true(advice_has(&r, "expandable_segments:True"));
    assert_true(advice_has(&r, "PYTORCH_CUDA_ALLOC_CONF"));
    r = scan_file("hip_fragmented_forward.log", 0); /* 14.93 GiB unallocated, 2 MiB asked */
    assert_true(advice_has(&r, "PYTORCH_HIP_ALLOC_CONF=expandable_segments:True"));
    assert_true(advice_has(&r, "in forward"));
    r = scan_file("torch2_backward.log", 0); /* 336.73 MiB unallocated < 226 MiB? no: 336.73 ≥ 226 */
    assert_true(advice_has(&r, "expandable_segments"));
    r = scan_file("torch21_capacty.log", 0); /* 55.57 GiB asked of 12 GiB: real demand */
    assert_true(advice_has(&r, "the demand is real"));
    r = scan_file("vllm_v1_kv.log", 24 * GiB);
    assert_true(advice_has(&r, "--max-model-len 5088"));
    assert_true(advice_has(&r, "--gpu-memory-utilization 0.95")); /* 0.94125, rounded up */
    r = scan_file("vllm_v1_kv.log", 0);
    assert_true(advice_has(&r, "give --gpu"));
    r = scan_file("vllm_startup.log", 0); /* 31.44 / 47.38 = 0.6636 */
    assert_true(advice_has(&r, "--gpu-memory-utilization 0.66 at most"));
    r = scan_file("llama_kv.log", 0);
    assert_true(advice_has(&r, "--cache-type-k q8_0"));
    r = scan_file("llama_load.log", 0);
    assert_true(advice_has(&r, "-ngl"));
    r = scan_file("llama_host_buffer.log", 0);
    assert_true(advice_has(&r, "host memory"));
    r = scan_file("torch2_deepspeed_zero3_step.log", 0);
    assert_true(advice_has(&r, "ZeRO"));
}

/* Frames name the phase: vLLM's profile run around a PyTorch OOM (frames of
 * vllm-project/vllm#7854 before the message of #14095: constructed from two
 * real excerpts); a logger that prints the message before the traceback. */
static void test_frames(void **state)
{
    (void)state;
    const char *profile =
        "[rank0]:   File \"/opt/conda/lib/python3.10/site-packages/vllm/worker/worker.py\", line 179, in "
        "determine_num_available_blocks\n"
        "[rank0]:     self.model_runner.profile_run()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 2 has a total capacity of "
        "14.62 GiB of which 3.31 MiB is free.\n";
    vf_oom_report r = scan_bytes(profile, strlen(profile), 7, 0);
    assert_string_equal(r.engine, "vllm");
    assert_string_equal(r.phase, "profile_run");
    assert_true(advice_has(&r, "--max-num-batched-tokens"));
    const char *late =
        "ERROR: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 11.91 GiB of which "
        "406.38 MiB is free.\nTraceback (most recent call last):\n  File \"/x/site-packages/accelerate/"
        "accelerator.py\", line 1, in backward\n    loss.backward()\n";
    r = scan_bytes(late, strlen(late), strlen(late), 0);
    assert_string_equal(r.engine, "accelerate");
    assert_string_equal(r.phase, "backward");
    /* a traceback long before does not name a later error */
    const char *old = "  File \"/x/deepspeed/engine.py\", line 1, in forward\nTraceback (most recent call last):\n"
                      "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB\n";
    r = scan_bytes(old, strlen(old), 3, 0);
    assert_string_equal(r.engine, "pytorch");
    assert_string_equal(r.phase, "");
    assert_int_equal(r.figure[VF_OOM_REQUESTED], 20 * MiB);
}

/* A message that straddles the window's edge, lines of any length, NUL bytes,
 * many errors: found, counted, in one pass. */
static void test_hostile(void **state)
{
    (void)state;
    const char *msg = "CUDA out of memory. Tried to allocate 20.00 MiB (GPU 3; 7.79 GiB total capacity; 6.39 GiB "
                      "already allocated; 3.56 MiB free; 6.60 GiB reserved in total by PyTorch)";
    size_t m = strlen(msg);
    for (size_t pad = 65536 - 4096 - 64; pad < 65536 + 64; pad += 17) {
        size_t n = pad + m + 1;
        char *d = malloc(n);
        memset(d, 0, pad); /* NUL bytes, no newline */
        memcpy(d + pad, msg, m);
        d[n - 1] = '\n';
        vf_oom_report r = scan_bytes(d, n, 4093, 0);
        assert_true(r.found);
        assert_int_equal(r.gpu, 3);
        assert_int_equal(r.figure[VF_OOM_RESERVED], F2(6, 60, GiB));
        assert_int_equal(r.line, 1);
        free(d);
    }
    /* 1,000 errors on 1,000 GPUs: the first explained, all counted */
    size_t n = 0, cap = 1000 * (m + 16);
    char *d = malloc(cap);
    for (int i = 0; i < 1000; i++)
        n += (size_t)snprintf(d + n, cap - n, "CUDA out of memory. Tried to allocate 20.00 MiB (GPU %d; x)\n", i);
    vf_oom_report r = scan_bytes(d, n, 1000, 0);
    assert_int_equal(r.errors, 1000);
    assert_int_equal(r.gpu, 0);
    assert_int_equal(r.lines, 1000);
    free(d);
    /* truncated forms and absurd numbers: no figure beyond what is there, none wrapped */
    const char *bad[] = {"out of memory. Tried to allocate", "out of memory. Tried to allocate 99999999999999999999999 GiB",
                         "max seq len (", "max seq len (5) is larger than the maximum number of tokens that can be stored in KV cache (",
                         "Free memory on device (1/", "_alloc_buffer: allocating 1.00 MiB on device 0: cudaMalloc failed: invalid argument",
                         "failed to allocate  buffer of size 1", "gpu_memory_utilization=7"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = scan_bytes(bad[i], strlen(bad[i]), 1, 0);
        assert_false(r.found);
    }
}

/* Nothing in the log: found false, the counts still said. */
static void test_empty(void **state)
{
    (void)state;
    vf_oom_report r = scan_bytes("all good\nreally\n", 16, 16, 0);
    assert_false(r.found);
    assert_int_equal(r.errors, 0);
    assert_int_equal(r.lines, 2);
    assert_int_equal(r.gpu, -1);
    r = scan_bytes("", 0, 1, 0);
    assert_false(r.found);
    assert_int_equal(r.lines, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus), cmocka_unit_test(test_advice), cmocka_unit_test(test_frames),
        cmocka_unit_test(test_hostile), cmocka_unit_test(test_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
