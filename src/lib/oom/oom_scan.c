/* oom_scan.c — one pass over a log of any size in bounded memory.
 *
 * The log streams through a fixed window (OOM_WIN bytes). Each byte is
 * checked once against a small set of anchors (a table by first byte); a
 * form then reads at most OOM_SPAN bytes from its anchor, and the window
 * keeps that many unscanned bytes when it slides, so a message is never cut.
 * Total work is linear in the log, memory is the window: no line is ever
 * gathered, so a log without newlines or with NUL bytes costs the same.
 *
 * Tracebacks: Python prints the frames before the exception, so frames seen
 * since the last "Traceback (most recent call last)" name the engine
 * (DeepSpeed, Accelerate, vLLM around a PyTorch OOM) and the phase. A logger
 * that prints the message first and the frames after is covered by the
 * lines that follow the error (OOM_GROUP bytes), which also carry llama.cpp's
 * companion lines and the repeats of one error (a message printed by the
 * exception and again by a logger counts once). */
#include "oom/oom.h"

#include <stdlib.h>
#include <string.h>

#define OOM_WIN (64 * 1024)
#define OOM_GROUP 8192

enum { H_VLLM, H_DEEPSPEED, H_ACCELERATE, H_GGML, H_PROFILE, H_KV, H_OPTIM, H_BACKWARD, H_LOAD, H_FORWARD, H_COMPUTE,
       H_COUNT };

typedef enum {
    A_TORCH, A_CUDA_ERR, A_MAX_SEQ, A_NO_CACHE, A_STARTUP, A_GGML_ALLOC, A_FAILED, A_LOAD_ERR, A_ACCEL,
    A_TRACEBACK, A_UTIL, A_HINT
} anchor_kind;

typedef struct anchor {
    const char *s;
    anchor_kind kind;
    int hint;
} anchor;

static const anchor anchors[] = {
    {"out of memory. Tried to allocate", A_TORCH, 0},
    {"CUDA error", A_CUDA_ERR, 0},
    {"max seq len (", A_MAX_SEQ, 0},
    {"No available memory for the cache blocks", A_NO_CACHE, 0},
    {"Free memory on device", A_STARTUP, 0},
    {"free memory on device", A_STARTUP, 0},
    {"_alloc_buffer: allocating ", A_GGML_ALLOC, 0},
    {"failed to allocate ", A_FAILED, 0},
    {"error loading model: unable to allocate", A_LOAD_ERR, 0},
    {"No executable batch size found, reached zero", A_ACCEL, 0},
    {"Traceback (most recent call last)", A_TRACEBACK, 0},
    {"gpu_memory_utilization", A_UTIL, 0},
    {"gpu-memory-utilization", A_UTIL, 0},
    /* frames and log lines that say who and when */
    {"/vllm/", A_HINT, H_VLLM},
    {"VllmWorker", A_HINT, H_VLLM},
    {"EngineCore", A_HINT, H_VLLM},
    {"/deepspeed/", A_HINT, H_DEEPSPEED},
    {"deepspeed.initialize", A_HINT, H_DEEPSPEED},
    {"/accelerate/", A_HINT, H_ACCELERATE},
    {"ggml_", A_HINT, H_GGML},
    {"llama runner", A_HINT, H_GGML},
    {"profile_run", A_HINT, H_PROFILE},
    {"determine_num_available_blocks", A_HINT, H_PROFILE},
    {"determine_available_memory", A_HINT, H_PROFILE},
    {"_initialize_kv_caches", A_HINT, H_KV},
    {"initialize_cache", A_HINT, H_KV},
    {"_allocate_kv_cache", A_HINT, H_KV},
    {"initialize_from_config", A_HINT, H_KV},
    {"llama_kv_cache", A_HINT, H_KV},
    {"optimizer.step", A_HINT, H_OPTIM},
    {"_optimizer_step", A_HINT, H_OPTIM},
    {"/torch/optim/", A_HINT, H_OPTIM},
    {".backward(", A_HINT, H_BACKWARD},
    {"run_backward", A_HINT, H_BACKWARD},
    {"in backward", A_HINT, H_BACKWARD},
    {"from_pretrained", A_HINT, H_LOAD},
    {"load_model", A_HINT, H_LOAD},
    {"load_state_dict", A_HINT, H_LOAD},
    {"load_weights", A_HINT, H_LOAD},
    {"load_tensors", A_HINT, H_LOAD},
    {"_configure_distributed_model", A_HINT, H_LOAD},
    {"in forward", A_HINT, H_FORWARD},
    {"forward_call", A_HINT, H_FORWARD},
    {"_conv_forward", A_HINT, H_FORWARD},
    {"graph_reserve", A_HINT, H_COMPUTE},
    {"compute buffer", A_HINT, H_COMPUTE},
};
#define N_ANCHORS (sizeof anchors / sizeof anchors[0])

struct vf_oom_scanner {
    char buf[OOM_WIN];
    size_t len, pos;            /* bytes in buf; the next one to check */
    uint64_t base;              /* stream offset of buf[0] */
    uint64_t lines, bytes;      /* newlines before buf[pos]; bytes fed */
    char last_byte;
    uint8_t first[256], count[256]; /* anchors by first byte: order[first[c] ..] */
    uint8_t pair[8192];         /* bit (c0 << 8 | c1): some anchor starts with these two bytes */
    uint8_t order[N_ANCHORS], alen[N_ANCHORS];
    uint64_t hint[H_COUNT];     /* offset + 1 where each hint was last seen since a traceback */
    double log_util;            /* a gpu_memory_utilization the log states */
    uint64_t errors, group_end; /* lines before group_end belong to the last error */
    oom_rec last, first_rec;
    int phase_from;             /* the first error's phase: 0 unknown, 1 frames, 2 the message */
    bool late_traceback;        /* a traceback began right after the first error */
    uint64_t first_line;
    char message[VF_OOM_MESSAGE_LEN];
};

vf_oom_scanner *vf_oom_open(void)
{
    vf_oom_scanner *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    /* anchors sorted by first byte, by counting */
    size_t at = 0;
    for (unsigned c = 0; c < 256; c++) {
        s->first[c] = (uint8_t)at;
        for (size_t i = 0; i < N_ANCHORS; i++)
            if ((unsigned char)anchors[i].s[0] == c) {
                s->order[at++] = (uint8_t)i;
                s->count[c]++;
            }
    }
    for (size_t i = 0; i < N_ANCHORS; i++) {
        s->alen[i] = (uint8_t)strlen(anchors[i].s);
        unsigned p = (unsigned char)anchors[i].s[0] << 8 | (unsigned char)anchors[i].s[1];
        s->pair[p >> 3] |= (uint8_t)(1u << (p & 7));
    }
    return s;
}

void vf_oom_free(vf_oom_scanner *s) { free(s); }

/* ---- who and when ---- */

static oom_phase phase_from_hints(const vf_oom_scanner *s, oom_engine e)
{
    if (e == E_LLAMACPP) { /* the stage logged last */
        static const struct { int h; oom_phase p; } st[] = {{H_LOAD, P_LOADING}, {H_KV, P_KV}, {H_COMPUTE, P_COMPUTE}};
        oom_phase p = P_NONE;
        uint64_t at = 0;
        for (size_t i = 0; i < 3; i++)
            if (s->hint[st[i].h] > at)
                at = s->hint[st[i].h], p = st[i].p;
        return p;
    }
    /* Python frames: the most specific phase in the stack wins */
    static const struct { int h; oom_phase p; } pr[] = {{H_PROFILE, P_PROFILE}, {H_KV, P_KV},
        {H_OPTIM, P_OPTIMIZER}, {H_BACKWARD, P_BACKWARD}, {H_LOAD, P_LOADING}, {H_FORWARD, P_FORWARD}};
    for (size_t i = 0; i < sizeof pr / sizeof pr[0]; i++)
        if (s->hint[pr[i].h])
            return pr[i].p;
    return P_NONE;
}

/* A PyTorch error raised inside another engine's frames is that engine's. */
static oom_engine engine_from_hints(const vf_oom_scanner *s, oom_engine e, const char *kind)
{
    if (e != E_PYTORCH)
        return e;
    if (s->hint[H_GGML] && !strcmp(kind, "cuda_error")) /* ggml's CUDA_CHECK, ollama's runner */
        return E_LLAMACPP;
    if (s->hint[H_VLLM])
        return E_VLLM;
    if (s->hint[H_DEEPSPEED])
        return E_DEEPSPEED;
    if (s->hint[H_ACCELERATE])
        return E_ACCELERATE;
    return e;
}

static void resolve_first(vf_oom_scanner *s)
{
    oom_rec *f = &s->first_rec;
    f->engine = engine_from_hints(s, f->engine, f->kind);
    if (s->phase_from < 2) {
        oom_phase p = phase_from_hints(s, f->engine == E_LLAMACPP ? E_LLAMACPP : E_PYTORCH);
        if (p != P_NONE) {
            f->phase = p;
            s->phase_from = 1;
        }
    }
}

/* ---- errors ---- */

static bool same(const oom_rec *a, const oom_rec *b)
{
    if (a->engine != b->engine || strcmp(a->kind, b->kind) || a->gpu != b->gpu || a->stated != b->stated)
        return false;
    for (int f = 0; f < VF_OOM_N_FIGURES; f++)
        if ((a->stated & OOM_BIT(f)) && a->v[f] != b->v[f])
            return false;
    return true;
}

/* A llama.cpp line that says more about the error before it. */
static void merge(oom_rec *into, const oom_rec *c)
{
    for (int f = 0; f < VF_OOM_N_FIGURES; f++)
        if ((c->stated & OOM_BIT(f)) && (!(into->stated & OOM_BIT(f)) || f == VF_OOM_REQUESTED)) {
            into->v[f] = c->v[f]; /* "buffer of size %zu" is exact where "%.2f MiB" rounds */
            into->stated |= OOM_BIT(f);
        }
    if (c->buffer[0] && !into->buffer[0]) {
        memcpy(into->buffer, c->buffer, sizeof into->buffer);
        into->cpu_buffer = c->cpu_buffer;
    }
    if (into->gpu < 0)
        into->gpu = c->gpu;
    if (c->phase != P_NONE)
        into->phase = c->phase;
}

/* The first error's text from the start of its line, printable ASCII, one line. */
static void keep_message(vf_oom_scanner *s, size_t i)
{
    size_t b = i;
    while (b > 0 && i - b < 200 && s->buf[b - 1] != '\n')
        b--;
    size_t n = 0;
    bool space = false;
    for (size_t k = b; k < s->len && n + 1 < sizeof s->message && k < i + 1024; k++) {
        unsigned char c = (unsigned char)s->buf[k];
        /* a message wrapped over lines reads on; a long line is the message */
        if (c == '\n' && ((k + 1 < s->len && s->buf[k + 1] == '\n') || n >= 100))
            break;
        bool ws = c < 0x21 || c > 0x7e;
        if (ws && (space || n == 0))
            continue;
        s->message[n++] = ws ? ' ' : (char)c;
        space = ws;
    }
    while (n && s->message[n - 1] == ' ')
        n--;
    s->message[n] = '\0';
}

static void on_error(vf_oom_scanner *s, oom_rec *r, uint64_t off, size_t i)
{
    bool open = s->errors && off < s->group_end;
    if (open && r->companion && s->last.engine == E_LLAMACPP) {
        merge(&s->last, r);
        if (s->errors == 1) {
            merge(&s->first_rec, r);
            if (r->phase != P_NONE)
                s->phase_from = 2;
        }
        s->group_end = off + OOM_GROUP;
        return;
    }
    if (open && same(&s->last, r)) { /* the same error printed again */
        s->group_end = off + OOM_GROUP;
        return;
    }
    /* a llama.cpp line with no figures (the tail of an earlier attempt) gives
     * way to the allocation that follows it: the same error, better told */
    bool replaces = open && s->last.companion && !s->last.stated && !r->companion;
    if (!replaces)
        s->errors++;
    s->last = *r;
    s->group_end = off + OOM_GROUP;
    if (s->errors > 1)
        return;
    s->first_rec = *r;
    s->phase_from = r->phase != P_NONE ? 2 : 0;
    s->first_line = s->lines + 1;
    keep_message(s, i);
    resolve_first(s);
}

/* The frames of a traceback printed right after the first error (a logger
 * that prints the message before its traceback) still name its engine and
 * phase; other lines after it do not (another worker's). */
static void late_hint(vf_oom_scanner *s)
{
    if (!s->late_traceback)
        return;
    if (s->first_rec.engine == E_PYTORCH)
        s->first_rec.engine = engine_from_hints(s, E_PYTORCH, s->first_rec.kind);
    if (s->phase_from == 0)
        resolve_first(s);
}

static bool read_form(anchor_kind k, oom_text t, oom_rec *r)
{
    switch (k) {
    case A_TORCH: return vf__oom_torch(t, r);
    case A_CUDA_ERR: return vf__oom_cuda_error(t, r);
    case A_MAX_SEQ: return vf__oom_vllm_len(t, r);
    case A_STARTUP: return vf__oom_vllm_startup(t, r);
    case A_GGML_ALLOC: return vf__oom_ggml_alloc(t, r);
    case A_FAILED: return vf__oom_ggml_failed(t, r);
    case A_NO_CACHE: /* vLLM: the budget left nothing for the KV cache */
        *r = (oom_rec){.engine = E_VLLM, .kind = "no_cache_memory", .phase = P_KV, .gpu = -1};
        return true;
    case A_LOAD_ERR: /* llama_model_load: error loading model: unable to allocate CUDA0 buffer */
        *r = (oom_rec){.engine = E_LLAMACPP, .kind = "buffer_alloc", .phase = P_LOADING, .gpu = -1, .companion = true};
        return true;
    case A_ACCEL: /* accelerate's find_executable_batch_size halved down to 0 */
        *r = (oom_rec){.engine = E_ACCELERATE, .kind = "batch_size_zero", .gpu = -1};
        return true;
    default: return false;
    }
}

static void on_anchor(vf_oom_scanner *s, const anchor *a, size_t i)
{
    uint64_t off = s->base + i;
    oom_text t = {s->buf + (i > OOM_BACK ? i - OOM_BACK : 0), s->buf + i,
                  s->buf + (s->len - i > OOM_SPAN ? i + OOM_SPAN : s->len)};
    if (a->kind == A_TRACEBACK) {
        memset(s->hint, 0, sizeof s->hint);
        if (s->errors == 1 && off < s->group_end)
            s->late_traceback = true;
        return;
    }
    if (a->kind == A_UTIL) {
        double u = vf__oom_utilization(t);
        if (u > 0 && (!s->errors || s->log_util == 0))
            s->log_util = u;
        return;
    }
    if (a->kind == A_HINT) {
        s->hint[a->hint] = off + 1;
        if (s->errors == 1 && off < s->group_end)
            late_hint(s);
        return;
    }
    oom_rec r;
    memset(&r, 0, sizeof r);
    r.gpu = -1;
    if (read_form(a->kind, t, &r))
        on_error(s, &r, off, i);
}

/* Checks every byte in [pos, limit) for an anchor. */
static void scan(vf_oom_scanner *s, size_t limit)
{
    const unsigned char *b = (const unsigned char *)s->buf;
    for (size_t i = s->pos; i < limit; i++) {
        unsigned c = b[i];
        if (c == '\n') {
            s->lines++;
            continue;
        }
        /* two bytes filter out nearly every position before any anchor is compared */
        unsigned p = i + 1 < s->len ? c << 8 | b[i + 1] : c << 8;
        if (!(s->pair[p >> 3] & (1u << (p & 7))))
            continue;
        for (unsigned k = 0, n = s->count[c]; k < n; k++) {
            unsigned ai = s->order[s->first[c] + k];
            if (s->len - i >= s->alen[ai] && memcmp(s->buf + i, anchors[ai].s, s->alen[ai]) == 0)
                on_anchor(s, &anchors[ai], i);
        }
    }
    s->pos = limit;
}

/* Scans what has its whole span in the window, then drops what no form can need. */
static void slide(vf_oom_scanner *s)
{
    size_t limit = s->len - OOM_SPAN;
    scan(s, limit);
    size_t from = limit - OOM_BACK;
    memmove(s->buf, s->buf + from, s->len - from);
    s->base += from;
    s->len -= from;
    s->pos = OOM_BACK;
}

void vf_oom_feed(vf_oom_scanner *s, const void *data, size_t n)
{
    const char *d = data;
    if (n)
        s->last_byte = d[n - 1];
    s->bytes += n;
    while (n) {
        size_t k = OOM_WIN - s->len < n ? OOM_WIN - s->len : n;
        memcpy(s->buf + s->len, d, k);
        s->len += k;
        d += k;
        n -= k;
        if (s->len == OOM_WIN)
            slide(s);
    }
}

/* ---- the report ---- */

static const char *engine_name(oom_engine e)
{
    static const char *const n[] = {"", "pytorch", "vllm", "llamacpp", "deepspeed", "accelerate"};
    return n[e];
}

static const char *phase_name(oom_phase p)
{
    static const char *const n[] = {"", "forward", "loading", "backward", "optimizer_step", "kv_allocation",
                                    "compute_buffers", "profile_run", "startup"};
    return n[p];
}

const char *vf_oom_figure_name(vf_oom_figure f)
{
    static const char *const n[VF_OOM_N_FIGURES] = {"requested", "total", "free", "allocated", "reserved",
        "reserved_unallocated", "process", "processes", "allowed", "private_pools", "needed", "available",
        "max_context", "max_seq_len"};
    return (unsigned)f < VF_OOM_N_FIGURES ? n[f] : "";
}

void vf_oom_finish(vf_oom_scanner *s, uint64_t device_bytes, vf_oom_report *out)
{
    scan(s, s->len);
    memset(out, 0, sizeof *out);
    out->gpu = -1;
    out->fragmentation = -1;
    out->errors = s->errors;
    out->bytes = s->bytes;
    out->lines = s->lines + (s->bytes && s->last_byte != '\n');
    out->utilization = s->log_util;
    if (!s->errors)
        return;
    const oom_rec *r = &s->first_rec;
    out->found = true;
    snprintf(out->engine, sizeof out->engine, "%s", engine_name(r->engine));
    snprintf(out->kind, sizeof out->kind, "%s", r->kind);
    snprintf(out->phase, sizeof out->phase, "%s", phase_name(r->phase));
    memcpy(out->buffer, r->buffer, sizeof out->buffer);
    out->gpu = r->gpu;
    memcpy(out->figure, r->v, sizeof out->figure);
    out->stated = r->stated;
    out->derived = r->derived & ~r->stated;
    out->processes = r->processes;
    if (r->utilization > 0)
        out->utilization = r->utilization;
    uint32_t known = out->stated | out->derived;
    uint64_t a = r->v[VF_OOM_ALLOCATED], u = r->v[VF_OOM_RESERVED_UNALLOCATED];
    if ((known & OOM_BIT(VF_OOM_ALLOCATED)) && (known & OOM_BIT(VF_OOM_RESERVED_UNALLOCATED)) && a + u > 0)
        out->fragmentation = (double)u / ((double)a + (double)u);
    out->line = s->first_line;
    memcpy(out->message, s->message, sizeof out->message);
    vf__oom_advise(out, device_bytes);
}
