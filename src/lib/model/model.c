/* model.c — the model description every reader fills: tensors, files, warnings, totals. */
#include "model/model.h"

#include <pthread.h>
#include "model/graph.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const role_names[] = {
#define VF_X_(name, s) [VF_ROLE_##name] = s,
    VF_ROLE_MAP(VF_X_)
#undef VF_X_
};

const char *vf_role_name(vf_role r) { return (unsigned)r < VF_ROLE_COUNT ? role_names[r] : "other"; }

vf_model *vf__model_new(vf_format fmt, const char *source)
{
    vf_model *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->format = fmt;
    m->source = strdup(source ? source : "");
    m->hp.torch_dtype = VF_DTYPE_UNKNOWN;
    if (!m->source) {
        free(m);
        return NULL;
    }
    return m;
}

void vf__hparams_free(vf_hparams *hp)
{
    free(hp->layer_n_heads);
    free(hp->layer_n_kv_heads);
    free(hp->layer_head_dim);
    free(hp->layer_is_swa);
    free(hp->layer_no_kv);
    free(hp->layer_recurrent);
    hp->layer_recurrent = NULL;
    free(hp->layer_ff);
    hp->layer_n_heads = hp->layer_n_kv_heads = hp->layer_head_dim = NULL;
    hp->layer_is_swa = hp->layer_no_kv = NULL;
    hp->layer_ff = NULL;
}

void vf_model_free(vf_model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_strings; i++)
        free(m->strings[i]);
    free(m->strings);
    for (size_t i = 0; i < m->n_warnings; i++)
        free(m->warnings[i]);
    free(m->warnings);
    free(m->tensors);
    free(m->files);
    vf__hparams_free(&m->hp);
    json_decref(m->config);
    json_decref(m->gguf_kv);
    for (size_t i = 0; i < VF_MODEL_MEMOS; i++)
        if (m->memos[i].key && m->memos[i].free)
            m->memos[i].free(m->memos[i].ptr);
    vf__graph_free(m->graph);
    free(m->source);
    free(m);
}

/* Names are many (100k+ tensors) and short: they are carved from 64 KiB
 * blocks listed in m->strings rather than malloc'd one by one. */
#define VF_ARENA_BLOCK ((size_t)64 << 10)

static const char *model_strdup(vf_model *m, const char *s)
{
    size_t n = strlen(s) + 1;
    if (n > m->arena_left) {
        if (!vf__grow((void **)&m->strings, &m->cap_strings, m->n_strings, sizeof *m->strings))
            return NULL;
        bool own = n > VF_ARENA_BLOCK / 4; /* a long one gets its own block; the current stays */
        char *b = malloc(own ? n : VF_ARENA_BLOCK);
        if (!b)
            return NULL;
        m->strings[m->n_strings++] = b;
        if (own)
            return memcpy(b, s, n);
        m->arena_next = b;
        m->arena_left = VF_ARENA_BLOCK;
    }
    char *d = memcpy(m->arena_next, s, n);
    m->arena_next += n;
    m->arena_left -= n;
    return d;
}

vf_tensor *vf__model_add_tensor(vf_model *m, const vf_tensor *t)
{
    if (m->n_tensors >= VF_MAX_TENSORS)
        return NULL;
    if (!vf__grow((void **)&m->tensors, &m->cap_tensors, m->n_tensors, sizeof *m->tensors))
        return NULL;
    const char *name = model_strdup(m, t->name ? t->name : "");
    if (!name)
        return NULL;
    vf_tensor *d = &m->tensors[m->n_tensors++];
    *d = *t;
    d->name = name;
    if (d->n_params == 0 && !(d->flags & VF_TENSOR_PACKED))
        d->n_params = d->n_elements;
    return d;
}

uint32_t vf__model_add_file(vf_model *m, const char *path, uint64_t size)
{
    if (m->n_files >= VF_MAX_SHARDS)
        return VF_NO_FILE;
    if (!vf__grow((void **)&m->files, &m->cap_files, m->n_files, sizeof *m->files))
        return VF_NO_FILE;
    const char *p = model_strdup(m, path);
    if (!p)
        return VF_NO_FILE;
    vf_file_info *f = &m->files[m->n_files];
    memset(f, 0, sizeof *f);
    f->path = p;
    f->size = size;
    f->alignment = 1;
    return (uint32_t)m->n_files++;
}

void vf__model_warn(vf_model *m, const char *fmt, ...)
{
    if (!vf__grow((void **)&m->warnings, &m->cap_warnings, m->n_warnings, sizeof *m->warnings))
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *w = strdup(buf);
    if (w)
        m->warnings[m->n_warnings++] = w;
}

/* ---- accessors ---- */
vf_format vf_model_format(const vf_model *m) { return m->format; }
const char *vf_model_source(const vf_model *m) { return m->source; }
const vf_hparams *vf_model_hparams(const vf_model *m) { return &m->hp; }
size_t vf_model_tensor_count(const vf_model *m) { return m->n_tensors; }
const vf_tensor *vf_model_tensor(const vf_model *m, size_t i) { return i < m->n_tensors ? &m->tensors[i] : NULL; }
size_t vf_model_file_count(const vf_model *m) { return m->n_files; }
const vf_file_info *vf_model_file(const vf_model *m, size_t i) { return i < m->n_files ? &m->files[i] : NULL; }
size_t vf_model_warning_count(const vf_model *m) { return m->n_warnings; }
const char *vf_model_warning(const vf_model *m, size_t i) { return i < m->n_warnings ? m->warnings[i] : NULL; }

const char *vf_model_approximate(const vf_model *m) { return m->approximate[0] ? m->approximate : NULL; }

const char *vf_model_priced_as(const vf_model *m) { return m && m->priced_as[0] ? m->priced_as : NULL; }

/* An MXFP4 block tensor (gpt-oss "*_blocks", U8): the Hub counts each byte's
 * two 4-bit values (openai/gpt-oss-20b: safetensors.total U8 19,707,494,400 =
 * the experts' 19,110,297,600 weights + 597,196,800 scale bytes). */
static bool mxfp4_blocks(const vf_tensor *x)
{
    size_t n = strlen(x->name);
    return x->dtype == VF_DTYPE_U8 && n > 7 && strcmp(x->name + n - 7, "_blocks") == 0;
}

uint64_t vf_model_stored_elements(const vf_model *m)
{
    uint64_t s = 0;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const vf_tensor *x = &m->tensors[i];
        s += mxfp4_blocks(x) ? 2 * x->n_elements : x->n_elements;
    }
    return s;
}

/* The table's own lock: owners of different memos set slots concurrently. */
static pthread_mutex_t memo_table_lock = PTHREAD_MUTEX_INITIALIZER;

void *vf__model_memo(const vf_model *m, const void *key)
{
    void *p = NULL;
    pthread_mutex_lock(&memo_table_lock);
    for (size_t i = 0; m && i < VF_MODEL_MEMOS && !p; i++)
        if (m->memos[i].key == key)
            p = m->memos[i].ptr;
    pthread_mutex_unlock(&memo_table_lock);
    return p;
}

bool vf__model_memo_set(const vf_model *m, const void *key, void *ptr, void (*free_fn)(void *))
{
    vf_model *mm = (vf_model *)m; /* a memo is not part of the model's value */
    bool set = false;
    pthread_mutex_lock(&memo_table_lock);
    for (size_t i = 0; i < VF_MODEL_MEMOS && !set; i++)
        if (mm->memos[i].key == key || !mm->memos[i].key) {
            mm->memos[i] = (vf__memo){.key = key, .ptr = ptr, .free = free_fn};
            set = true;
        }
    pthread_mutex_unlock(&memo_table_lock);
    return set;
}

/* Per-dtype sums, one pass over the tensors the first time they are asked
 * (inspect asks for every dtype): a memo on the model. Index
 * VF_DTYPE_COUNT holds the types this build does not know. */
typedef struct dtype_sums {
    uint64_t params[VF_DTYPE_COUNT + 1], bytes[VF_DTYPE_COUNT + 1];
} dtype_sums;

static const char sums_key = 0;
static pthread_mutex_t sums_lock = PTHREAD_MUTEX_INITIALIZER;

static dtype_sums *sums_build(const vf_model *m)
{
    dtype_sums *d = calloc(1, sizeof *d);
    for (size_t i = 0; d && i < m->n_tensors; i++) {
        const vf_tensor *x = &m->tensors[i];
        size_t k = (unsigned)x->dtype < VF_DTYPE_COUNT ? (size_t)x->dtype : VF_DTYPE_COUNT;
        d->bytes[k] += x->n_bytes;
        if (!(x->flags & VF_TENSOR_NOT_PARAM))
            d->params[k] += x->n_params;
    }
    return d;
}

void vf_model_dtype_totals(const vf_model *m, vf_dtype dt, uint64_t *params, uint64_t *bytes)
{
    const dtype_sums *d = NULL;
    if (m) {
        pthread_mutex_lock(&sums_lock);
        d = vf__model_memo(m, &sums_key);
        if (!d && (d = sums_build(m)) && !vf__model_memo_set(m, &sums_key, (void *)d, free)) {
            free((void *)d);
            d = NULL;
        }
        pthread_mutex_unlock(&sums_lock);
    }
    size_t k = (unsigned)dt < VF_DTYPE_COUNT ? (size_t)dt : VF_DTYPE_COUNT;
    if (params)
        *params = d ? d->params[k] : 0;
    if (bytes)
        *bytes = d ? d->bytes[k] : 0;
}

void vf_model_totals_get(const vf_model *m, vf_model_totals *t)
{
    memset(t, 0, sizeof *t);
    const vf_hparams *hp = &m->hp;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const vf_tensor *x = &m->tensors[i];
        t->elements += x->n_elements;
        t->bytes += x->n_bytes;
        if (x->flags & VF_TENSOR_NOT_PARAM) {
            t->buffer_elements += x->n_elements;
            continue;
        }
        t->params += x->n_params;
        if (x->flags & VF_TENSOR_MTP) {
            t->mtp_params += x->n_params;
            continue; /* not used per token in ordinary decoding */
        }
        if (x->role == VF_ROLE_EXPERT && hp->n_experts > 0 && hp->n_experts_active > 0 &&
            hp->n_experts_active < hp->n_experts)
            /* exact: expert tensors come in n_experts equal parts */
            t->active_params += x->n_params / hp->n_experts * hp->n_experts_active +
                                (x->n_params % hp->n_experts) * hp->n_experts_active / hp->n_experts;
        else
            t->active_params += x->n_params;
    }
}

uint64_t vf_model_host_side_params(const vf_model *m)
{
    uint64_t n = 0;
    for (size_t i = 0; m && i < m->n_tensors; i++) {
        const vf_tensor *t = &m->tensors[i];
        if (t->role == VF_ROLE_EMBED || t->role == VF_ROLE_POS_EMBED || (t->flags & (VF_TENSOR_MTP | VF_TENSOR_VISION)))
            n = vf__sadd(n, t->n_params);
    }
    return n;
}
