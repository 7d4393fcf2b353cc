/* weights_tensors.c — each tensor's bytes under a weight scheme, priced once
 * per model and scheme and kept with the model: llama.cpp places tensor by
 * tensor (a layer split moves single tensors), and re-pricing them for every
 * estimate of a fit's searches (llama-quantize's type rules per tensor) was
 * most of `models --fits` on llama.cpp. Entries are never changed once listed;
 * the list grows only by valid scheme names. */
#include "memory/infer.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct tbytes {
    char scheme[32];
    vf_dtype keep;
    uint64_t *bytes; /* per tensor */
    struct tbytes *next;
} tbytes;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* walks and links only, never while pricing */
static const char memo_key = 0;

static const tbytes *find(const tbytes *l, const char *scheme, vf_dtype keep)
{
    for (; l; l = l->next)
        if (l->keep == keep && !strcmp(l->scheme, scheme))
            return l;
    return NULL;
}

static void list_free(void *p)
{
    for (tbytes *l = p, *next; l; l = next) {
        next = l->next;
        free(l->bytes);
        free(l);
    }
}

static vf_status price(const vf_model *m, const char *scheme, vf_dtype keep, tbytes *l, vf_error *err)
{
    vf__pricer pr;
    vf_status st = vf__pricer_init(&pr, m, scheme, keep, err);
    if (st != VF_OK)
        return st;
    l->bytes = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *l->bytes);
    if (!l->bytes) {
        vf__pricer_free(&pr);
        return vf__err(err, VF_ENOMEM, "", "out of memory");
    }
    for (size_t i = 0; i < m->n_tensors; i++) {
        bool quantized;
        l->bytes[i] = vf__pricer_tensor(&pr, i, &quantized);
    }
    vf__pricer_free(&pr);
    return VF_OK;
}

vf_status vf__weights_tensor_bytes(const vf_model *m, const char *scheme, vf_dtype keep, const uint64_t **out,
                                   vf_error *err)
{
    const char *s = scheme ? scheme : "";
    if (strlen(s) >= sizeof ((tbytes *)0)->scheme)
        return vf__err(err, VF_EINVAL, s, "unknown weight format (see vramfit dtypes)");
    pthread_mutex_lock(&lock);
    const tbytes *hit = find(vf__model_memo(m, &memo_key), s, keep);
    pthread_mutex_unlock(&lock);
    if (hit) {
        *out = hit->bytes;
        return VF_OK;
    }
    tbytes *l = calloc(1, sizeof *l);
    if (!l)
        return vf__err(err, VF_ENOMEM, "", "out of memory");
    memcpy(l->scheme, s, strlen(s) + 1);
    l->keep = keep;
    vf_status st = price(m, s, keep, l, err);
    if (st != VF_OK) {
        list_free(l);
        return st;
    }
    pthread_mutex_lock(&lock);
    hit = find(vf__model_memo(m, &memo_key), s, keep); /* another thread may have priced it meanwhile */
    if (!hit) {
        l->next = vf__model_memo(m, &memo_key);
        if (!vf__model_memo_set(m, &memo_key, l, list_free))
            l->next = NULL; /* no slot left: this caller keeps it (a leak only past VF_MODEL_MEMOS owners) */
        hit = l;
        l = NULL;
    }
    pthread_mutex_unlock(&lock);
    list_free(l);
    *out = hit->bytes;
    return VF_OK;
}
