/* weights_memo.c — the weights priced once per scheme and kept with the
 * model. A fit runs hundreds of estimates of one model; re-pricing ~90k
 * tensors each time (DeepSeek-V3) was most of its time. The list only grows
 * by valid scheme names (an unknown one fails before it is added), so it is
 * bounded by the dtype table; entries are never changed once listed. */
#include "memory/infer.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One lock for every model's list: held only to walk or link a list, never
 * while pricing. */
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;

static const vf__wlayers *find(const vf__wlayers *l, const char *scheme, vf_dtype keep)
{
    for (; l; l = l->next)
        if (l->keep == keep && !strcmp(l->scheme, scheme))
            return l;
    return NULL;
}

static void entry_free(vf__wlayers *l)
{
    free(l->sh);
    free(l->rep);
    free(l->ex);
    free(l->tensor_bytes);
    free(l);
}

static const char memo_key = 0; /* names this file's memo on the model */

static void memo_free(void *p)
{
    vf__wlayers *list = p;
    while (list) {
        vf__wlayers *next = list->next;
        entry_free(list);
        list = next;
    }
}

vf_status vf__weights_layers(const vf_model *m, const char *scheme, vf_dtype keep, const vf__wlayers **out,
                             vf_error *err)
{
    const char *s = scheme ? scheme : "";
    if (strlen(s) >= sizeof ((vf__wlayers *)0)->scheme)
        return vf__err(err, VF_EINVAL, s, "unknown weight format (see vramfit dtypes)");
    pthread_mutex_lock(&memo_lock);
    const vf__wlayers *hit = find(vf__model_memo(m, &memo_key), s, keep);
    pthread_mutex_unlock(&memo_lock);
    if (hit) {
        *out = hit;
        return VF_OK;
    }
    vf__wlayers *l = calloc(1, sizeof *l);
    if (!l)
        return vf__err(err, VF_ENOMEM, "", "out of memory");
    memcpy(l->scheme, s, strlen(s) + 1);
    l->keep = keep;
    vf_status st = vf__weights_build(m, s, keep, l, err);
    if (st != VF_OK) {
        entry_free(l);
        return st;
    }
    pthread_mutex_lock(&memo_lock);
    hit = find(vf__model_memo(m, &memo_key), s, keep); /* another thread may have priced it meanwhile */
    if (!hit) {
        l->next = vf__model_memo(m, &memo_key);
        if (vf__model_memo_set(m, &memo_key, l, memo_free)) {
            hit = l;
            l = NULL;
        }
    }
    pthread_mutex_unlock(&memo_lock);
    if (l && !hit) { /* no slot left: this caller keeps it (a leak only past VF_MODEL_MEMOS owners) */
        l->next = NULL;
        hit = l;
        l = NULL;
    }
    if (l)
        entry_free(l);
    *out = hit;
    return VF_OK;
}

/* The whole-model price under a scheme, from the memo, with its notes. */
vf_status vf__weights_price(const vf_model *m, const char *scheme, vf_dtype keep, vf__wprice *w, vf_estimate *e,
                            vf_error *err)
{
    memset(w, 0, sizeof *w);
    const vf__wlayers *L;
    vf_status st = vf__weights_layers(m, scheme, keep, &L, err);
    if (st != VF_OK)
        return st;
    *w = L->w;
    if (e) {
        if (L->requant)
            vf__assume(e, "weights = %s (%s): %.3f bits per weight achieved; %s", L->name, L->method, w->bits,
                       L->gguf ? "1-D tensors F32, routers and position embeddings kept, output Q6_K, llama.cpp's "
                                 "mix rules for V, down and output projections"
                               : L->keeps ? L->keeps : "");
        else
            vf__assume(e, "weights = as stored, %.3f bits per weight", w->bits);
        if (L->n_mtp)
            vf__assume(e, "multi-token-prediction layers (%zu tensors) not loaded", L->n_mtp);
        vf__explain(e, "weights = sum over %zu tensors of their %s bytes = %llu B", m->n_tensors - L->n_mtp,
                    L->requant ? "re-priced" : "stored", (unsigned long long)w->bytes);
    }
    return VF_OK;
}

vf_status vf__weights_tensor_bytes(const vf_model *m, const char *scheme, vf_dtype keep, const uint64_t **out,
                                   vf_error *err)
{
    const vf__wlayers *L;
    vf_status st = vf__weights_layers(m, scheme, keep, &L, err);
    if (st == VF_OK)
        *out = L->tensor_bytes;
    return st;
}
