/* models_fits.c — vramfit models --fits GPU[xN]: for every catalog model the
 * best configuration that fits the devices (as stored, else the runtime's
 * weight formats from best quality down; llama.cpp with --host-memory: layers
 * on the CPU), its memory per device, headroom and longest context, each the
 * answer `vramfit fit MODEL --gpu GPU --weights W` gives.
 *
 * Fast because most models are never opened: the build counted every model
 * (vf_catalog_info), and weights alone at a format's bits per parameter bound
 * what the devices must hold from below; a format past the devices' memory
 * (and the host's, for llama.cpp) by that bound cannot fit and is not
 * estimated. A model that is estimated runs fit without its searches but the
 * longest context. */
#include "builtin/models_fits.h"
#include "args/estimate_opts.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* A weight format of the ladder with its bits per weight, scales included
 * (vramfit dtypes): weights at it hold at least params x bits / 8 bytes. */
typedef struct step {
    const char *weights; /* as --weights takes it */
    double bits;
} step;

/* Best quality first: llama-quantize's usual types, vLLM's fp8 and 4-bit AWQ,
 * bitsandbytes' int8 and NF4 for the PyTorch runtimes (fit's advice offers the same engines' formats). */
static const step ladder_llamacpp[] = {{"q8_0", 8.5},   {"q6_k", 6.5625},  {"q5_k_m", 5.5},
                                       {"q4_k_m", 4.5}, {"q3_k_m", 3.4375}, {"q2_k", 2.625}};
static const step ladder_vllm[] = {{"fp8", 8}, {"awq", 4.15625}};
static const step ladder_torch[] = {{"int8", 8}, {"nf4", 4.5}};

#define MAX_STEPS 8

typedef struct row {
    vf_catalog_info ci;
    bool skipped;       /* not listed: an approximate config (fit refuses it), one that does not open, or
                           one the runtime estimates at no format */
    bool estimated;     /* false: every format bounded out without an estimate */
    bool fits;
    char weights[32];   /* "stored" or a --weights argument */
    int32_t ngl;        /* llama.cpp layers on the GPU; -1 all */
    uint64_t needed, max_context;
    int64_t headroom;
} row;

bool vf_cli_family_matches(const char *family, const char *want)
{
    size_t n = strlen(want);
    return strncasecmp(family, want, n) == 0 &&
           (family[n] == 0 || (family[n] == '_' && !isdigit((unsigned char)family[n + 1])));
}

bool vf_cli_task_matches(const char *task, const char *want)
{
    return !strcmp(task, want) || (!strcmp(want, "chat") && !strcmp(task, "vision"));
}

/* The formats to try, best first: as stored, then the ladder's formats clearly
 * smaller than that (Q8_0 is no gain on an FP8 checkpoint); --weights: that one. */
static size_t steps_for(const vf_cli_models_query *q, vf_runtime rt, const vf_catalog_info *ci, step *out)
{
    double stored = ci->params ? 8.0 * (double)ci->bytes / (double)ci->params : 16;
    if (q->weights_set) {
        out[0] = (step){q->a.est.weights, 0}; /* bounded only by what is known: nothing */
        return 1;
    }
    size_t n = 0;
    out[n++] = (step){"", stored};
    if (q->a.est.mode == VF_MODE_TRAINING)
        return n; /* training's weights are the --train knobs' (--qlora) */
    const step *l = rt == VF_RUNTIME_LLAMACPP ? ladder_llamacpp : rt == VF_RUNTIME_VLLM ? ladder_vllm : ladder_torch;
    size_t k = rt == VF_RUNTIME_LLAMACPP ? 6 : 2;
    for (size_t i = 0; i < k && n < MAX_STEPS; i++)
        if (stored > l[i].bits * 1.2)
            out[n++] = l[i];
    return n;
}

/* Whether the weights alone at s exceed what can hold them: every runtime
 * holds them on its devices but llama.cpp, which keeps its host-side
 * parameters (embeddings, ...) in host memory and, with --host-memory, layers. */
static bool bounded_out(const step *s, const vf_catalog_info *ci, vf_runtime rt, uint64_t devices, uint64_t host)
{
    uint64_t p = rt == VF_RUNTIME_LLAMACPP ? ci->params - ci->host_side_params : ci->params;
    return (double)p * s->bits / 8 > (double)devices + (double)host;
}

/* fit_one's options (cmd_fit.c) with only the searches asked for. */
static vf_status fit_at(const vf_cli_fit_args *a, const vf_model *m, const vf_gpu_choice *c, bool context, vf_fit *f)
{
    vf_fit_opts fo = {.est = a->est, .gpu_bytes = c->gpu.memory_bytes, .gpus = c->count,
                      .gpu = c->gpu.bandwidth_gbs > 0 || c->from_catalog ? &c->gpu : NULL,
                      .no_search = !context, .searches = VF_FIT_SEARCH_CONTEXT | VF_FIT_SEARCH_IF_FITS};
    return vf_fit_run(m, &fo, f, NULL);
}

static void take(row *r, const vf_fit *f, const char *weights, int32_t ngl)
{
    r->estimated = true;
    r->fits = vf_fit_fits(f);
    snprintf(r->weights, sizeof r->weights, "%s", weights[0] ? weights : "stored");
    r->ngl = ngl;
    r->needed = vf_fit_needed_bytes(f);
    r->headroom = vf_fit_headroom_bytes(f);
    r->max_context = vf_fit_max_context(f);
}

/* Whether ngl layers on the GPU fit, and what the devices need then (0: no answer). */
static bool fits_layers(vf_cli_fit_args *a, const vf_model *m, const vf_gpu_choice *c, int32_t ngl, vf_fit *f,
                        uint64_t *need)
{
    a->est.infer.n_gpu_layers = ngl;
    bool ok = fit_at(a, m, c, false, f) == VF_OK;
    *need = ok ? vf_fit_needed_bytes(f) : 0;
    return ok && vf_fit_fits(f);
}

/* llama.cpp with host memory: the most layers the devices hold, the rest on
 * the CPU if the host holds them; true when that fits. The most layers as a
 * bisection finds them (what the devices need grows with the layers on
 * them), in fewer fits: each layer adds about the same bytes, so once both
 * ends of the bracket have a figure the count where the line through them
 * meets the devices' memory is tried, then its neighbour across the
 * boundary; bisection again after a few such tries or where figures lack. */
static bool layers_on_cpu(vf_cli_fit_args *a, const vf_model *m, const vf_gpu_choice *c, uint64_t host, vf_fit *f,
                          row *r)
{
    const vf_hparams *hp = vf_model_hparams(m);
    int32_t lo = -1, hi = hp && hp->n_layers ? (int32_t)hp->n_layers + 1 : 0;
    uint64_t nlo = 0, nhi = 0, budget = c->gpu.memory_bytes; /* figures at lo and hi; 0: none */
    int tries = 0, moved = 0; /* guided probes; which end the last one moved: -1 lo, 1 hi */
    while (hi - lo > 1) { /* fits(lo) (or lo = -1), !fits(hi) */
        int32_t g = lo + (hi - lo) / 2;
        if (tries < 6 && moved) { /* the neighbour across the boundary of the last guided probe */
            g = moved < 0 ? lo + 1 : hi - 1;
            tries++;
        } else if (tries < 6 && nlo && nhi > nlo && budget >= nlo) {
            int64_t x = lo + (int64_t)((double)(budget - nlo) / (double)(nhi - nlo) * (double)(hi - lo));
            g = x <= lo ? lo + 1 : x >= hi ? hi - 1 : (int32_t)x;
            tries++;
        }
        bool guided = tries > 0 && g != lo + (hi - lo) / 2;
        uint64_t need;
        if (fits_layers(a, m, c, g, f, &need)) {
            lo = g;
            nlo = need;
            moved = guided && !moved ? -1 : 0;
        } else {
            hi = g;
            nhi = need;
            moved = guided && !moved ? 1 : 0;
        }
    }
    if (lo < 0)
        return false;
    a->est.infer.n_gpu_layers = lo;
    if (fit_at(a, m, c, true, f) != VF_OK || !vf_fit_fits(f) || vf_estimate_host_bytes(vf_fit_estimate(f)) > host)
        return false;
    take(r, f, a->est.weights, lo);
    return true;
}

static void answer(const vf_cli_models_query *q, const vf_gpu_choice *c, vf_fit *f, row *r)
{
    vf_runtime rt = q->a.runtime_set ? q->a.est.runtime : VF_RUNTIME_TRANSFORMERS; /* a config's default */
    step s[MAX_STEPS];
    size_t n = steps_for(q, rt, &r->ci, s);
    uint64_t devices = c->count && c->gpu.memory_bytes > UINT64_MAX / c->count ? UINT64_MAX
                                                                              : c->gpu.memory_bytes * c->count;
    uint64_t host = rt == VF_RUNTIME_LLAMACPP ? q->host_bytes : 0;
    bool live[MAX_STEPS], any = false;
    for (size_t i = 0; i < n; i++)
        any |= live[i] = !r->ci.counted || s[i].bits == 0 || !bounded_out(&s[i], &r->ci, rt, devices, host);
    r->ngl = -1;
    snprintf(r->weights, sizeof r->weights, "%s", s[n - 1].weights[0] ? s[n - 1].weights : "stored");
    if (!any)
        return;
    vf_model *m = NULL;
    vf_open_opts oo = {.offline = true};
    if (vf_model_open_with(r->ci.id, &oo, &m, NULL) != VF_OK || vf_model_approximate(m)) {
        r->skipped = true;
        vf_model_free(m);
        return;
    }
    vf_cli_fit_args a = q->a;
    vf_cli_fit_settle(&a, m);
    for (size_t i = 0; i < n; i++) {
        if (!live[i])
            continue;
        snprintf(a.est.weights, sizeof a.est.weights, "%s", s[i].weights);
        if (fit_at(&a, m, c, true, f) != VF_OK) /* the longest context only for the configuration chosen */
            continue;                              /* a format this model or runtime cannot take */
        take(r, f, s[i].weights, -1);
        if (r->fits)
            break;
    }
    if (!r->estimated)
        r->skipped = true; /* the runtime takes none of the formats (an architecture it does not run) */
    if (!r->fits && r->estimated && host && a.est.infer.n_gpu_layers < 0)
        for (size_t i = 0; i < n && !r->fits; i++) {
            snprintf(a.est.weights, sizeof a.est.weights, "%s", s[i].weights);
            if (live[i])
                layers_on_cpu(&a, m, c, host, f, r);
            a.est.infer.n_gpu_layers = -1;
        }
    vf_model_free(m);
}

/* Fitting models first, then by parameters, largest first; the id breaks ties. */
static int cmp_rows(const void *x, const void *y)
{
    const row *a = x, *b = y;
    if (a->fits != b->fits)
        return a->fits ? -1 : 1;
    if (a->ci.params != b->ci.params)
        return a->ci.params > b->ci.params ? -1 : 1;
    return strcasecmp(a->ci.id, b->ci.id);
}

static bool wanted(const vf_cli_models_query *q, const vf_catalog_info *ci)
{
    return (!q->family || vf_cli_family_matches(ci->family, q->family)) &&
           (!q->task || vf_cli_task_matches(ci->task, q->task)) && (!q->max_params || ci->params <= q->max_params);
}

static json_t *rows_json(const vf_gpu_choice *c, const vf_cli_models_query *q, const row *rows, size_t k)
{
    json_t *o = json_object(), *arr = json_array();
    json_object_set_new(o, "gpu", json_string(c->name));
    json_object_set_new(o, "gpu_count", json_integer(c->count));
    json_object_set_new(o, "gpu_bytes", vf_json_u64(c->gpu.memory_bytes));
    json_object_set_new(o, "host_memory_bytes", vf_json_u64(q->host_bytes));
    json_object_set_new(o, "mode", json_string(vf_cli_mode_name(&q->a.est)));
    for (size_t i = 0; i < k; i++) {
        const row *r = &rows[i];
        json_t *e = json_object();
        json_object_set_new(e, "id", json_string(r->ci.id));
        json_object_set_new(e, "fits", json_boolean(r->fits));
        json_object_set_new(e, "weights", json_string(r->weights));
        json_object_set_new(e, "needed_bytes", r->estimated ? vf_json_u64(r->needed) : json_null());
        json_object_set_new(e, "headroom_bytes", r->estimated ? json_integer((json_int_t)r->headroom) : json_null());
        json_object_set_new(e, "max_context", vf_json_u64(r->fits ? r->max_context : 0));
        json_object_set_new(e, "n_gpu_layers", json_integer(r->ngl));
        json_object_set_new(e, "params", vf_json_u64(r->ci.params));
        json_object_set_new(e, "family", json_string(r->ci.family));
        json_object_set_new(e, "task", json_string(r->ci.task));
        json_object_set_new(e, "estimated", json_boolean(r->estimated));
        json_array_append_new(arr, e);
    }
    json_object_set_new(o, "models", arr);
    return o;
}

static void rows_print(const vf_gpu_choice *c, const vf_cli_models_query *q, const row *rows, size_t k)
{
    char b1[32], b2[32], b3[32];
    vf_units u = q->a.units;
    size_t fit = 0;
    printf("Models that fit %s x%u (%s each, %s)%s:\n", c->name, c->count,
           vf_fmt_bytes(c->gpu.memory_bytes, u, b1, sizeof b1), vf_cli_mode_name(&q->a.est),
           q->host_bytes ? ", layers on the CPU allowed" : "");
    printf("  %-48s %8s %-8s %12s %12s %12s\n", "model", "params", "weights", "needs/GPU", "headroom", "max context");
    for (size_t i = 0; i < k && rows[i].fits; i++, fit++) {
        const row *r = &rows[i];
        char w[48];
        snprintf(w, sizeof w, r->ngl >= 0 ? "%s ngl %d" : "%s", r->weights, (int)r->ngl);
        printf("  %-48s %8s %-8s %12s %12s %12llu\n", r->ci.id, vf_fmt_short(r->ci.params, b1, sizeof b1), w,
               vf_fmt_bytes(r->needed, u, b2, sizeof b2), vf_fmt_bytes((uint64_t)r->headroom, u, b3, sizeof b3),
               (unsigned long long)r->max_context);
    }
    printf("\n%zu of %zu models fit; largest first. weights: 'stored' as the checkpoint stores them, else the "
           "--weights format; 'ngl N': llama.cpp with N layers on the GPU, the rest in host memory.\n"
           "Each row is what 'vramfit fit MODEL --gpu ... --weights W' answers; --json lists the others too.\n",
           fit, k);
}

/* The models are answered by several threads, each with its own fit and
 * each model opened by one: rows are taken largest first (the slowest), so
 * that none is left alone at the end. The answer does not depend on which
 * thread answered a row, nor on their number. */
typedef struct work {
    const vf_cli_models_query *q;
    const vf_gpu_choice *c;
    row *rows;
    size_t n;
    atomic_size_t next;
    atomic_bool nomem;
} work;

static void *worker(void *arg)
{
    work *w = arg;
    vf_fit *f = vf_fit_new();
    if (!f) {
        atomic_store(&w->nomem, true);
        return NULL;
    }
    for (size_t i; (i = atomic_fetch_add(&w->next, 1)) < w->n;)
        answer(w->q, w->c, f, &w->rows[i]);
    vf_fit_free(f);
    return NULL;
}

#define MAX_WORKERS 8

static int cmp_params(const void *x, const void *y)
{
    const row *a = x, *b = y;
    return a->ci.params != b->ci.params ? (a->ci.params > b->ci.params ? -1 : 1) : strcasecmp(a->ci.id, b->ci.id);
}

/* Answers rows[0..n): false when no thread could be given memory. */
static bool answer_all(const vf_cli_models_query *q, const vf_gpu_choice *c, row *rows, size_t n)
{
    qsort(rows, n, sizeof *rows, cmp_params);
    work w = {.q = q, .c = c, .rows = rows, .n = n};
    atomic_init(&w.next, 0);
    atomic_init(&w.nomem, false);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t k = cpus < 1 ? 1 : cpus > MAX_WORKERS ? MAX_WORKERS : (size_t)cpus, started = 0;
    pthread_t th[MAX_WORKERS];
    while (started + 1 < k && pthread_create(&th[started], NULL, worker, &w) == 0)
        started++;
    worker(&w); /* this thread too; alone when no other could start */
    for (size_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    return atomic_load(&w.next) >= n || !atomic_load(&w.nomem);
}

int vf_cli_models_fits(vf_cli_models_query *q)
{
    vf_gpu_choice c;
    int rc = vf_cli_fit_gpu(&q->a, &c);
    if (rc >= 0)
        return rc;
    size_t n = vf_catalog_count(), k = 0;
    row *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows) {
        fprintf(stderr, "vramfit: models: out of memory\n");
        return VF_EXIT_IO;
    }
    for (size_t i = 0; i < n; i++) {
        row *r = &rows[k];
        memset(r, 0, sizeof *r);
        if (vf_catalog_entry(i, &r->ci) == VF_OK && wanted(q, &r->ci))
            k++;
    }
    if (!answer_all(q, &c, rows, k)) {
        free(rows);
        fprintf(stderr, "vramfit: models: out of memory\n");
        return VF_EXIT_IO;
    }
    size_t kept = 0;
    for (size_t i = 0; i < k; i++)
        if (!rows[i].skipped)
            rows[kept++] = rows[i];
    k = kept;
    qsort(rows, k, sizeof *rows, cmp_rows);
    bool any = k && rows[0].fits;
    if (q->a.json)
        rc = vf_print_json(rows_json(&c, q, rows, k));
    else {
        rows_print(&c, q, rows, k);
        rc = fflush(stdout) ? VF_EXIT_IO : VF_EXIT_OK;
    }
    free(rows);
    return rc == VF_EXIT_OK && !any ? VF_EXIT_NOFIT : rc;
}
