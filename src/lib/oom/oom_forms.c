/* oom_forms.c — reading one out-of-memory message from its anchor.
 *
 * Each form follows the engine's own format string (tests/data/oom/SOURCES.md
 * gives the source lines): PyTorch's CUDACachingAllocator message in its 0.x,
 * 1.x and 2.x shapes (format_size: "N bytes", "%.2f KiB|MiB|GiB"), vLLM's
 * KV-cache and start-up checks, ggml's buffer allocations. A space in a
 * pattern matches any run of whitespace, so a message wrapped over lines (as
 * pasted in bug reports) still reads. Every read stays inside [start, end),
 * which the scanner bounds to OOM_SPAN bytes past the anchor. */
#include "oom/oom.h"

#include <string.h>

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static void skip_ws(const char **pp, const char *end)
{
    while (*pp < end && is_ws(**pp))
        (*pp)++;
}

/* Matches pat at *pp; a space in pat matches one or more whitespace bytes. */
static bool lit(const char **pp, const char *end, const char *pat)
{
    const char *p = *pp;
    for (const char *l = pat; *l; l++) {
        if (*l == ' ') {
            if (p >= end || !is_ws(*p))
                return false;
            skip_ws(&p, end);
        } else {
            if (p >= end || *p != *l)
                return false;
            p++;
        }
    }
    *pp = p;
    return true;
}

/* The first occurrence of s in [p, end), or NULL (spans are short: naive). */
static const char *find(const char *p, const char *end, const char *s)
{
    size_t n = strlen(s);
    for (; p + n <= end; p++)
        if (*p == *s && memcmp(p, s, n) == 0)
            return p;
    return NULL;
}

typedef struct num {
    uint64_t ip, frac;       /* integer part (saturated), first fdig fraction digits */
    unsigned fdig;
} num;

static bool number(const char **pp, const char *end, num *n)
{
    const char *p = *pp;
    *n = (num){0, 0, 0};
    if (p >= end || !is_digit(*p))
        return false;
    const char *s = p;
    for (; p < end && is_digit(*p); p++)
        if (p - s < 19) /* 19 digits fit in 64 bits; more is not a figure any engine prints */
            n->ip = n->ip * 10 + (uint64_t)(*p - '0');
    if (p - s > 19)
        return false;
    if (p + 1 < end && *p == '.' && is_digit(p[1])) {
        for (p++; p < end && is_digit(*p); p++)
            if (n->fdig < 9) {
                n->frac = n->frac * 10 + (uint64_t)(*p - '0');
                n->fdig++;
            }
    }
    *pp = p;
    return true;
}

/* n as a real number ("0.95") */
static double value(num n)
{
    double pw = 1;
    for (unsigned i = 0; i < n.fdig; i++)
        pw *= 10;
    return (double)n.ip + (double)n.frac / pw;
}

/* n × unit in bytes, the fraction rounded to the nearest byte; saturating. */
static uint64_t scaled(num n, uint64_t unit)
{
    unsigned __int128 v = (unsigned __int128)n.ip * unit, pow = 1;
    for (unsigned i = 0; i < n.fdig; i++)
        pow *= 10;
    v += ((unsigned __int128)n.frac * unit + pow / 2) / pow;
    return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

/* The unit word at *pp ("bytes", "KiB", "MiB", "GiB", "TiB"): its size, 0 when none. */
static uint64_t unit(const char **pp, const char *end)
{
    static const struct {
        const char *s;
        uint64_t m;
    } u[] = {{"bytes", 1}, {"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30}, {"TiB", 1ull << 40}};
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
        if (lit(pp, end, u[i].s))
            return u[i].m;
    return 0;
}

/* "20.00 MiB", "0 bytes", "1.5 GiB" → bytes. */
static bool size(const char **pp, const char *end, uint64_t *out)
{
    const char *p = *pp;
    num n;
    if (!number(&p, end, &n))
        return false;
    skip_ws(&p, end);
    uint64_t m = unit(&p, end);
    if (!m)
        return false;
    *out = scaled(n, m);
    *pp = p;
    return true;
}

static bool uint_(const char **pp, const char *end, uint64_t *out)
{
    num n;
    const char *p = *pp;
    if (!number(&p, end, &n) || n.fdig)
        return false;
    *out = n.ip;
    *pp = p;
    return true;
}

static void put(oom_rec *r, vf_oom_figure f, uint64_t v)
{
    r->v[f] = v;
    r->stated |= OOM_BIT(f);
}

/* a figure that follows from stated ones */
static void derived(oom_rec *r, vf_oom_figure f, uint64_t v)
{
    r->v[f] = v;
    r->derived |= OOM_BIT(f);
}

static bool size_into(const char **pp, const char *end, oom_rec *r, vf_oom_figure f)
{
    uint64_t v;
    if (!size(pp, end, &v))
        return false;
    put(r, f, v);
    return true;
}

static bool gpu_into(const char **pp, const char *end, oom_rec *r)
{
    uint64_t g;
    if (!uint_(pp, end, &g))
        return false;
    r->gpu = g > INT32_MAX ? INT32_MAX : (int32_t)g;
    return true;
}

/* ---- PyTorch ---- */

/* 2.x: the sentences between "is free." and "Of the allocated memory". */
static void torch2_processes(const char *p, const char *end, oom_rec *r)
{
    for (const char *q = p; (q = find(q, end, "Process ")) != NULL; q++) {
        const char *s = q + 8;
        uint64_t pid, v;
        if (uint_(&s, end, &pid) && lit(&s, end, " has ") && size(&s, end, &v) && lit(&s, end, " memory in use")) {
            r->v[VF_OOM_PROCESSES] = r->v[VF_OOM_PROCESSES] + v < v ? UINT64_MAX : r->v[VF_OOM_PROCESSES] + v;
            r->stated |= OOM_BIT(VF_OOM_PROCESSES);
            r->processes++;
        }
    }
    const char *s = find(p, end, "this process has ");
    if (s) {
        s += 17;
        size_into(&s, end, r, VF_OOM_PROCESS);
    }
    /* "8.00 GiB allowed; " (set_per_process_memory_fraction) */
    for (const char *q = p; q < end; q++) {
        const char *x = q;
        if ((q == p || is_ws(q[-1])) && is_digit(*q)) {
            uint64_t v;
            if (size(&x, end, &v) && lit(&x, end, " allowed;")) {
                put(r, VF_OOM_ALLOWED, v);
                break;
            }
        }
    }
}

/* "GPU 0 has a total capacity of X of which Y is free. [...] Of the allocated
 * memory A is allocated by PyTorch, [with P allocated in private pools (e.g.,
 * CUDA Graphs), ]and U is reserved by PyTorch but unallocated." */
static void torch2(const char *p, const char *end, oom_rec *r)
{
    if (!gpu_into(&p, end, r) || !lit(&p, end, " has a total "))
        return;
    if (!lit(&p, end, "capacity") && !lit(&p, end, "capacty")) /* the 2.1 spelling */
        return;
    if (!lit(&p, end, " of ") || !size_into(&p, end, r, VF_OOM_TOTAL) || !lit(&p, end, " of which ") ||
        !size_into(&p, end, r, VF_OOM_FREE) || !lit(&p, end, " is free."))
        return;
    const char *lim = end - p > 2048 ? p + 2048 : end;
    const char *a = find(p, lim, "Of the allocated memory");
    torch2_processes(p, a ? a : lim, r);
    if (!a)
        return;
    p = a;
    if (!lit(&p, end, "Of the allocated memory ") || !size_into(&p, end, r, VF_OOM_ALLOCATED) ||
        !lit(&p, end, " is allocated by PyTorch, "))
        return;
    const char *w = p;
    if (lit(&w, end, "with ") && size_into(&w, end, r, VF_OOM_PRIVATE_POOLS) &&
        lit(&w, end, " allocated in private pools (e.g., CUDA Graphs), "))
        p = w;
    if (lit(&p, end, "and ") && size_into(&p, end, r, VF_OOM_RESERVED_UNALLOCATED) &&
        lit(&p, end, " is reserved by PyTorch but unallocated")) {
        /* the allocator prints reserved − allocated (both with the private pools) */
        derived(r, VF_OOM_RESERVED, r->v[VF_OOM_ALLOCATED] + r->v[VF_OOM_RESERVED_UNALLOCATED]);
    }
}

/* 1.x: "(GPU 0; X total capacity; A already allocated; F free; [L allowed; ]
 * R reserved in total by PyTorch)"; 0.4-1.3: "... F free; C cached)". */
static void torch1(const char *p, const char *end, oom_rec *r)
{
    uint64_t v;
    if (!gpu_into(&p, end, r) || !lit(&p, end, "; ") || !size_into(&p, end, r, VF_OOM_TOTAL) ||
        !lit(&p, end, " total capacity; ") || !size_into(&p, end, r, VF_OOM_ALLOCATED) ||
        !lit(&p, end, " already allocated; ") || !size_into(&p, end, r, VF_OOM_FREE) || !lit(&p, end, " free; ") ||
        !size(&p, end, &v))
        return;
    if (lit(&p, end, " allowed; ")) {
        put(r, VF_OOM_ALLOWED, v);
        if (!size(&p, end, &v))
            return;
    }
    if (lit(&p, end, " reserved in total by PyTorch")) {
        put(r, VF_OOM_RESERVED, v);
        if (v >= r->v[VF_OOM_ALLOCATED])
            derived(r, VF_OOM_RESERVED_UNALLOCATED, v - r->v[VF_OOM_ALLOCATED]);
    } else if (lit(&p, end, " cached")) {
        /* "cached": held by the allocator, not used by the program (the allocator's comment) */
        put(r, VF_OOM_RESERVED_UNALLOCATED, v);
        derived(r, VF_OOM_RESERVED, r->v[VF_OOM_ALLOCATED] + v);
    }
}

bool vf__oom_torch(oom_text t, oom_rec *r)
{
    const char *p = t.p + strlen("out of memory. Tried to allocate"), *end = t.end;
    skip_ws(&p, end);
    if (!size_into(&p, end, r, VF_OOM_REQUESTED))
        return false;
    r->engine = E_PYTORCH;
    r->kind = "oom";
    if (t.p - t.start >= 5 && memcmp(t.p - 5, "CUDA ", 5) == 0)
        r->kind = "cuda_oom";
    else if (t.p - t.start >= 4 && memcmp(t.p - 4, "HIP ", 4) == 0)
        r->kind = "hip_oom";
    const char *q = p;
    if (lit(&q, end, ". GPU "))
        torch2(q, end, r);
    else if (q = p, lit(&q, end, " (GPU "))
        torch1(q, end, r);
    return true;
}

/* "CUDA error: out of memory" (PyTorch's C10_CUDA_CHECK, ggml_cuda_error with
 * "current device: N"), "CUDA error 2 at ggml-cuda.cu:359: out of memory"
 * (llama.cpp of 2023). */
bool vf__oom_cuda_error(oom_text t, oom_rec *r)
{
    const char *p = t.p + strlen("CUDA error"), *end = t.end;
    bool old = false;
    if (!lit(&p, end, ": out of memory")) {
        const char *nl = p;
        while (nl < end && nl - p < 160 && *nl != '\n')
            nl++;
        const char *m = find(p, nl, ": out of memory");
        if (!m || !find(p, m, "ggml"))
            return false;
        old = true;
        p = m + strlen(": out of memory");
    }
    r->engine = old ? E_LLAMACPP : E_PYTORCH;
    r->kind = "cuda_error";
    const char *lim = end - p > 400 ? p + 400 : end;
    const char *d = find(p, lim, "current device: ");
    if (d) {
        d += strlen("current device: ");
        gpu_into(&d, end, r);
        r->engine = E_LLAMACPP;
    }
    return true;
}

/* ---- vLLM ---- */

/* V0 (worker.py raise_if_cache_size_invalid): "The model's max seq len (N) is
 * larger than the maximum number of tokens that can be stored in KV cache (M)".
 * V1 (kv_cache_utils.py): "... max seq len (N), (X GiB KV cache is needed,
 * which is larger than the available KV cache memory (Y GiB). Based on the
 * available memory, the estimated maximum model length is M." */
bool vf__oom_vllm_len(oom_text t, oom_rec *r)
{
    const char *p = t.p + strlen("max seq len ("), *end = t.end;
    uint64_t n, m;
    if (!uint_(&p, end, &n) || !lit(&p, end, ")"))
        return false;
    if (lit(&p, end, " is larger than the maximum number of tokens that can be stored in KV cache (") &&
        uint_(&p, end, &m)) {
        put(r, VF_OOM_MAX_CONTEXT, m);
    } else if (lit(&p, end, ", (") && size_into(&p, end, r, VF_OOM_NEEDED) &&
               lit(&p, end, " KV cache is needed, which is larger than the available KV cache memory (") &&
               size_into(&p, end, r, VF_OOM_AVAILABLE)) {
        const char *lim = end - p > 400 ? p + 400 : end;
        const char *e = find(p, lim, "estimated maximum model length is ");
        if (e) {
            e += strlen("estimated maximum model length is ");
            if (uint_(&e, end, &m))
                put(r, VF_OOM_MAX_CONTEXT, m);
        }
    } else {
        return false;
    }
    put(r, VF_OOM_MAX_SEQ_LEN, n);
    r->engine = E_VLLM;
    r->kind = "kv_cache_too_small";
    r->phase = P_KV;
    return true;
}

/* V1 (worker/utils.py request_memory): "Free memory on device cuda:0
 * (12.18/23.56 GiB) on startup is less than desired GPU memory utilization
 * (0.92, 21.67 GiB)." (earlier releases leave the device name out). */
bool vf__oom_vllm_startup(oom_text t, oom_rec *r)
{
    const char *p = t.p + strlen("Free memory on device"), *end = t.end;
    skip_ws(&p, end);
    if (p < end && *p != '(') {
        const char *d = p;
        if (lit(&d, end, "cuda:"))
            gpu_into(&d, end, r);
        while (p < end && !is_ws(*p) && p - t.p < 64)
            p++;
        skip_ws(&p, end);
    }
    num f, tot, u;
    uint64_t m;
    if (!lit(&p, end, "(") || !number(&p, end, &f) || !lit(&p, end, "/") || !number(&p, end, &tot))
        return false;
    skip_ws(&p, end);
    if (!(m = unit(&p, end)) || !lit(&p, end, ") on startup is less than desired GPU memory utilization (") ||
        !number(&p, end, &u) || !lit(&p, end, ", ") || !size_into(&p, end, r, VF_OOM_NEEDED))
        return false;
    put(r, VF_OOM_FREE, scaled(f, m));
    put(r, VF_OOM_AVAILABLE, scaled(f, m));
    put(r, VF_OOM_TOTAL, scaled(tot, m));
    r->utilization = value(u);
    r->engine = E_VLLM;
    r->kind = "startup_free_memory";
    r->phase = P_STARTUP;
    return true;
}

/* ---- llama.cpp (ggml) ---- */

/* ggml-cuda.cu: "%s: allocating %.2f MiB on device %d: cudaMalloc failed: %s" */
bool vf__oom_ggml_alloc(oom_text t, oom_rec *r)
{
    const char *p = t.p + strlen("_alloc_buffer: allocating "), *end = t.end;
    if (!size_into(&p, end, r, VF_OOM_REQUESTED) || !lit(&p, end, " on device ") || !gpu_into(&p, end, r) ||
        !lit(&p, end, ": cudaMalloc failed: out of memory"))
        return false;
    r->engine = E_LLAMACPP;
    r->kind = "cuda_malloc";
    return true;
}

/* The function that printed the line: the identifier before ": " on its line. */
static bool printed_by(oom_text t, const char *fn)
{
    size_t n = strlen(fn);
    const char *q = t.p;
    while (q > t.start && q[-1] != '\n' && t.p - q < 96)
        q--;
    const char *s = find(q, t.p, fn);
    return s && s + n + 2 <= t.p && s[n] == ':';
}

/* ggml-alloc.c: "%s: failed to allocate %s buffer of size %zu" (alloc_tensor_range
 * when loading, ggml_gallocr_reserve_n for compute buffers); llama.cpp: "failed
 * to allocate buffer for kv cache", "failed to allocate compute buffers". */
bool vf__oom_ggml_failed(oom_text t, oom_rec *r)
{
    const char *p = t.p + strlen("failed to allocate "), *end = t.end;
    r->engine = E_LLAMACPP;
    r->kind = "buffer_alloc";
    r->companion = true;
    if (lit(&p, end, "buffer for kv cache")) {
        r->phase = P_KV;
        return true;
    }
    if (lit(&p, end, "compute buffers")) {
        r->phase = P_COMPUTE;
        return true;
    }
    const char *name = p;
    while (p < end && p - name < 23 && (is_digit(*p) || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '_'))
        p++;
    size_t n = (size_t)(p - name);
    if (!n || !lit(&p, end, " buffer of size ") || !uint_(&p, end, &r->v[VF_OOM_REQUESTED]))
        return false;
    r->stated |= OOM_BIT(VF_OOM_REQUESTED);
    memcpy(r->buffer, name, n);
    r->buffer[n] = '\0';
    r->cpu_buffer = strncmp(r->buffer, "CPU", 3) == 0 || strstr(r->buffer, "_Host") != NULL;
    const char *d = name + n;
    while (d > name && is_digit(d[-1]))
        d--;
    if (!r->cpu_buffer && d < name + n)
        gpu_into(&d, end, r);
    if (printed_by(t, "alloc_tensor_range"))
        r->phase = P_LOADING;
    else if (printed_by(t, "ggml_gallocr_reserve_n"))
        r->phase = P_COMPUTE;
    return true;
}

double vf__oom_utilization(oom_text t)
{
    const char *p = t.p + strlen("gpu_memory_utilization"), *end = t.end;
    for (int i = 0; i < 3 && p < end && (*p == '=' || *p == ':' || *p == ' ' || *p == '"' || *p == '\''); i++)
        p++;
    num n;
    if (!number(&p, end, &n) || n.ip > 1)
        return 0;
    double u = value(n);
    return u > 0 && u <= 1 ? u : 0;
}
