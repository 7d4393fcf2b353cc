/* train_replay.c — one plain training step played into the caching
 * allocator model, twice: the second step meets the blocks the first one
 * cached. The sizes are the training model's own terms (train_act.c,
 * train_states.c), laid out as the tensors that hold them: parameters,
 * gradients and optimizer states per parameter tensor; a block's saved
 * activations as its s^2 attention tensors and hidden-sized ones; the
 * logits and loss as the vocabulary-sized ones. Order: PyTorch's autograd
 * (forward saves block by block, backward frees them last block first and
 * makes each block's gradients), then optimizer.step() (states on the first
 * step, foreach temporaries) and zero_grad(set_to_none=True). */
#include "replay_torch.h"
#include "train_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PIECES 64 /* tensors one term is laid out as */

typedef struct tset {
    uint32_t h[MAX_PIECES];
    size_t n;
} tset;

typedef struct step_ctx {
    vf__replay *r;
    const vf_model *m;
    const vf_train_opts *t;
    const vf__tcfg *c;
    const vf__tacts *acts;
    const vf__tplace *p;
    uint32_t L;
    uint64_t u;       /* one hidden-sized activation, act x tokens x hidden */
    uint64_t uff;     /* one intermediate-sized one, act x tokens x ff */
    uint64_t ltv;     /* one fp32 logits-sized tensor */
    uint32_t *grads;  /* per tensor, 0 when none */
    size_t *by_layer;   /* the trainable tensors of block l - 1 (0: outside) in file order, */
    size_t *first;      /* from by_layer[first[l]] to by_layer[first[l + 1]] */
    bool states_made;
} step_ctx;

static bool trainable(const vf_tensor *t) { return !(t->flags & (VF_TENSOR_NOT_PARAM | VF_TENSOR_MTP)); }

/* Gradients of the parameters of block l (l = -1: outside the blocks; head
 * selects the final norm and head against the embeddings). */
static void make_grads(step_ctx *x, int32_t l, bool head)
{
    for (size_t k = x->first[l + 1]; k < x->first[l + 2]; k++) {
        size_t i = x->by_layer[k];
        const vf_tensor *t = &x->m->tensors[i];
        bool emb = t->role == VF_ROLE_EMBED || t->role == VF_ROLE_POS_EMBED;
        if (l < 0 && emb == head)
            continue;
        uint64_t g = vf__smul(t->n_params, x->c->g_bytes);
        if (x->grads[i]) /* a kept gradient: AccumulateGrad adds the op's new one in place, then frees it */
            vf__replay_free(x->r, vf__replay_alloc(x->r, g));
        else
            x->grads[i] = vf__replay_alloc(x->r, g);
    }
}

/* Saved activations of one block: its attention's s^2 tensors, its MLP's
 * intermediate-width ones, then the hidden-sized rest. */
static void save_block(step_ctx *x, tset *s)
{
    const vf__tacts *A = x->acts;
    uint64_t sc = A->scores_kept, ff = A->ff_kept;
    if (sc + ff > A->layer_kept)
        sc = ff = 0;
    uint64_t rest = A->layer_kept - sc - ff;
    size_t n1 = 0, n2 = 0, n3 = 0;
    uint64_t st = vf__smul(A->attn_scores, x->c->act);
    /* eager attention's forward before its softmax: q k^T, its scaled copy,
     * the mask added, each a new tensor that frees the one before */
    uint32_t t1 = 0, t2 = 0, t3 = 0;
    if (sc) {
        t1 = vf__replay_alloc(x->r, st);
        t2 = vf__replay_alloc(x->r, st);
        vf__replay_free(x->r, t1);
        t3 = vf__replay_alloc(x->r, st);
        vf__replay_free(x->r, t2);
    }
    /* PyTorch < 1.11: the softmax keeps its input, the masked scores */
    bool keep_in = t3 && x->c->softmax_keeps_input && sc >= st;
    if (keep_in)
        sc -= st;
    vf__replay_pieces(x->r, sc, st, s->h, MAX_PIECES / 4 - 1, &n1);
    if (keep_in)
        s->h[n1++] = t3;
    else
        vf__replay_free(x->r, t3);
    vf__replay_pieces(x->r, ff, x->uff, s->h + n1, MAX_PIECES / 4, &n2);
    vf__replay_pieces(x->r, rest, x->u, s->h + n1 + n2, MAX_PIECES - n1 - n2, &n3);
    s->n = n1 + n2 + n3;
}

/* A transient of bytes as tensors of piece bytes, made and freed. */
static void transient(step_ctx *x, uint64_t bytes, uint64_t piece)
{
    tset t;
    vf__replay_pieces(x->r, bytes, piece, t.h, MAX_PIECES, &t.n);
    vf__replay_free_all(x->r, t.h, &t.n);
}

/* optimizer.step(): states made on the first step, then the step's
 * temporaries (foreach: one per parameter tensor, all alive together; the
 * per-tensor loop: one at a time), then zero_grad. */
static void optimizer_step(step_ctx *x)
{
    const vf__tcfg *c = x->c;
    uint64_t temp_left = x->p->step_temp;
    bool foreach = x->t->optim_impl == VF_OPTIM_FOREACH || x->t->optim_impl == VF_OPTIM_FOREACH_LEGACY;
    uint32_t *tmp = calloc(x->m->n_tensors ? x->m->n_tensors : 1, sizeof *tmp);
    if (!tmp) {
        x->r->broken = true;
        return;
    }
    for (size_t i = 0; i < x->m->n_tensors; i++) {
        const vf_tensor *t = &x->m->tensors[i];
        if (!trainable(t))
            continue;
        if (!x->states_made) {
            uint64_t st = vf__optim_state_bytes(x->t->optimizer, c, t->shape, t->n_dims, t->n_params);
            bool adam = x->t->optimizer == VF_OPT_ADAMW || x->t->optimizer == VF_OPT_ADAM;
            if (adam && st > 4) { /* exp_avg, exp_avg_sq, the step tensor */
                vf__replay_alloc(x->r, (st - 4) / 2);
                vf__replay_alloc(x->r, (st - 4) - (st - 4) / 2);
                vf__replay_alloc(x->r, 4);
            } else {
                vf__replay_alloc(x->r, st);
            }
        }
        uint64_t one = vf__smul(t->n_params, c->st_bytes);
        if (!foreach) { /* the per-tensor loop: its denominator lives for one tensor */
            vf__replay_free(x->r, vf__replay_alloc(x->r, one));
        } else if (temp_left) {
            tmp[i] = vf__replay_alloc(x->r, one < temp_left ? one : temp_left);
            temp_left -= one < temp_left ? one : temp_left;
        }
    }
    x->states_made = true;
    for (size_t i = x->m->n_tensors; i-- > 0;)
        vf__replay_free(x->r, tmp[i]);
    free(tmp);
    if (c->grads_kept) /* zero_grad(set_to_none=False): zeroed in place, kept */
        return;
    for (size_t i = 0; i < x->m->n_tensors; i++) {
        vf__replay_free(x->r, x->grads[i]);
        x->grads[i] = 0;
    }
}

static void one_step(step_ctx *x, tset *blocks, tset *outside)
{
    vf__replay *r = x->r;
    const vf__tacts *A = x->acts;
    uint64_t T = x->c->T;
    uint32_t in0 = vf__replay_alloc(r, 8 * T), in1 = vf__replay_alloc(r, 8 * T); /* input ids, labels */
    /* forward */
    for (uint32_t l = 0; l < x->L && !r->broken; l++)
        save_block(x, &blocks[l]);
    uint64_t outside_rest = A->non_layer > 4 * x->ltv ? A->non_layer - 4 * x->ltv : 0;
    size_t n1 = 0, n2 = 0;
    vf__replay_pieces(r, A->non_layer - outside_rest, 4 * x->ltv, outside->h, MAX_PIECES / 2, &n1);
    vf__replay_pieces(r, outside_rest, x->u, outside->h + n1, MAX_PIECES - n1, &n2);
    outside->n = n1 + n2;
    transient(x, A->fwd_temp, 4 * x->ltv); /* the logits and their fp32 copy */
    /* backward: the loss's gradients, the head's, then block by block */
    tset bs;
    vf__replay_pieces(r, A->bwd_start, 4 * x->ltv, bs.h, MAX_PIECES, &bs.n);
    vf__replay_free_all(r, outside->h, &outside->n);
    make_grads(x, -1, true);
    vf__replay_free_all(r, bs.h, &bs.n);
    for (uint32_t l = x->L; l-- > 0 && !r->broken;) {
        make_grads(x, (int32_t)l, false);
        transient(x, A->bwd_mlp, x->uff);
        transient(x, A->bwd_attn, A->attn_scores ? vf__smul(A->attn_scores, 4) : x->u);
        vf__replay_free_all(r, blocks[l].h, &blocks[l].n);
    }
    tset be;
    vf__replay_pieces(r, A->bwd_end, x->u, be.h, MAX_PIECES, &be.n);
    make_grads(x, -1, false);
    vf__replay_free_all(r, be.h, &be.n);
    optimizer_step(x);
    vf__replay_free(r, in1);
    vf__replay_free(r, in0);
}

/* The trainable tensors grouped by block, each group in file order (a
 * counting sort): the backward pass makes each block's gradients, and
 * scanning every tensor per block would cost blocks x tensors. */
static bool group_by_layer(step_ctx *x)
{
    const vf_model *m = x->m;
    x->first = calloc((size_t)x->L + 3, sizeof *x->first);
    x->by_layer = calloc(m->n_tensors ? m->n_tensors : 1, sizeof *x->by_layer);
    if (!x->first || !x->by_layer)
        return false;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const vf_tensor *t = &m->tensors[i];
        if (trainable(t) && t->layer >= -1 && t->layer < (int32_t)x->L)
            x->first[(size_t)(t->layer + 2)]++;
    }
    for (size_t l = 1; l < (size_t)x->L + 3; l++)
        x->first[l] += x->first[l - 1];
    size_t *at = calloc((size_t)x->L + 2, sizeof *at);
    if (!at)
        return false;
    memcpy(at, x->first, ((size_t)x->L + 2) * sizeof *at);
    for (size_t i = 0; i < m->n_tensors; i++) {
        const vf_tensor *t = &m->tensors[i];
        if (trainable(t) && t->layer >= -1 && t->layer < (int32_t)x->L)
            x->by_layer[at[t->layer + 1]++] = i;
    }
    free(at);
    return true;
}

/* Everything a replay reads besides the model: a fit or a sweep asks for
 * the same step many times (each needed-bytes probe twice over, layouts
 * that leave one GPU's step as it is), so its figures are kept with the
 * model, per key, and a second ask is answered from there. The key's parts
 * are zero-filled before they are set (memcmp compares them). */
typedef struct vf__trkey {
    vf__tcfg c;
    vf__tacts acts;
    vf__tconf conf;
    uint64_t step_temp, ws, device_bytes;
    uint64_t hidden, inter;
    uint32_t L;
    vf_optimizer optimizer;
    vf_optim_impl impl;
} vf__trkey;

typedef struct vf__trmemo {
    struct vf__trmemo *next;
    vf__trkey key;
    vf__tstats stats;
    uint64_t largest; /* the step's largest request (fit's margin) */
} vf__trmemo;

#define TRMEMO_MAX 64 /* past this many a model's steps are replayed every time */

static pthread_mutex_t trmemo_lock = PTHREAD_MUTEX_INITIALIZER;

static void trmemo_free(vf__trmemo *l)
{
    while (l) {
        vf__trmemo *next = l->next;
        free(l);
        l = next;
    }
}

static void trmemo_key(vf__trkey *k, const vf__replay *r, const vf_train_opts *t, const vf__tarch *a,
                       const vf__tcfg *c, const vf__tacts *acts, const vf__tplace *p, uint64_t ws)
{
    memset(k, 0, sizeof *k);
    memcpy(&k->c, c, sizeof *c);
    memcpy(&k->acts, acts, sizeof *acts);
    memcpy(&k->conf, &r->conf, sizeof r->conf);
    k->step_temp = p->step_temp;
    k->ws = ws;
    /* the device's size reaches the replay only as a memory fraction's limit */
    k->device_bytes = r->conf.fraction > 0 ? r->device_bytes : 0;
    k->hidden = a->hidden;
    k->inter = a->inter;
    k->L = a->n_layers;
    k->optimizer = t->optimizer;
    k->impl = t->optim_impl;
}

/* true: the figures of this key were kept (into r). */
static bool trmemo_get(vf__replay *r, const vf_model *m, const vf__trkey *k, size_t *n)
{
    *n = 0;
    pthread_mutex_lock(&trmemo_lock);
    const vf__trmemo *l = m->trmemo;
    for (; l && memcmp(&l->key, k, sizeof *k); l = l->next)
        (*n)++;
    if (l) {
        r->stats = l->stats;
        r->largest = l->largest;
        r->kept = true;
    }
    pthread_mutex_unlock(&trmemo_lock);
    return l != NULL;
}

static void trmemo_put(const vf__replay *r, const vf_model *m, const vf__trkey *k)
{
    vf__trmemo *e = malloc(sizeof *e);
    if (!e)
        return;
    e->key = *k;
    e->stats = vf__replay_stats(r);
    e->largest = r->largest;
    vf_model *mm = (vf_model *)m; /* the cache is not part of the model's value */
    pthread_mutex_lock(&trmemo_lock);
    e->next = mm->trmemo;
    mm->trmemo = e;
    mm->trmemo_free = trmemo_free;
    pthread_mutex_unlock(&trmemo_lock);
}

/* The step as the allocator meets it. */
static void replay_steps(vf__replay *r, const vf_model *m, const vf_train_opts *t, const vf__tarch *a,
                         const vf__tcfg *c, const vf__tacts *acts, const vf__tplace *p, uint64_t ws)
{
    step_ctx x = {.r = r, .m = m, .t = t, .c = c, .acts = acts, .p = p, .L = a->n_layers};
    x.u = vf__smul(vf__smul(c->act, c->T), a->hidden);
    x.uff = vf__smul(vf__smul(c->act, c->T), a->inter ? a->inter : a->hidden);
    x.ltv = vf__smul(acts->logits_tv, 4);
    x.grads = calloc(m->n_tensors ? m->n_tensors : 1, sizeof *x.grads);
    tset *blocks = calloc(x.L ? x.L : 1, sizeof *blocks);
    tset outside = {{0}, 0};
    if (!x.grads || !blocks || !group_by_layer(&x)) {
        free(x.first);
        free(x.by_layer);
        free(x.grads);
        free(blocks);
        r->broken = true;
        return;
    }
    /* the model on the GPU (its parameters at the training precision, its buffers) */
    vf__replay_weights(r, m, "", VF_DTYPE_UNKNOWN, 1.0, c->w_bytes);
    vf__replay_alloc(r, ws);
    for (int step = 0; step < 2 && !r->broken; step++)
        one_step(&x, blocks, &outside);
    free(blocks);
    free(x.first);
    free(x.by_layer);
    free(x.grads);
}

bool vf__train_replay(vf__replay *r, const vf_model *m, const vf_train_opts *t, const vf__tarch *a, const vf__tcfg *c,
                      const vf__tacts *acts, const vf__tplace *p, uint64_t ws)
{
    if (c->lora || c->qlora || c->zero || c->tp > 1 || c->pp > 1 || t->offload != VF_OFFLOAD_NONE || c->accum > 1 ||
        t->recompute != VF_RECOMPUTE_NONE || a->n_layers > (1u << 12))
        return false;
    vf__trkey k;
    size_t n;
    trmemo_key(&k, r, t, a, c, acts, p, ws);
    if (trmemo_get(r, m, &k, &n))
        return true;
    replay_steps(r, m, t, a, c, acts, p, ws);
    if (!r->broken && n < TRMEMO_MAX) /* an incomplete replay (no host memory) is not kept */
        trmemo_put(r, m, &k);
    return true;
}
