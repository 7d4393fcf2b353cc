/* train_replay.c — one training step played into the caching allocator
 * model, twice: the second step meets the blocks the first one cached. The
 * sizes are the training model's own terms (train_act.c, train_states.c),
 * laid out as the tensors that hold them: parameters, gradients and
 * optimizer states per trainable piece (a parameter tensor; under LoRA each
 * adapter's A and B, per expert when stacked); a block's saved activations
 * as its s^2 attention tensors and hidden-sized ones; the logits and loss as
 * the vocabulary-sized ones. Order: PyTorch's autograd (forward saves block
 * by block, backward frees them last block first and makes each block's
 * gradients), then optimizer.step() (states on the first step, foreach
 * temporaries) and zero_grad(set_to_none=True). LoRA keeps the base frozen at
 * its storage (QLoRA: each matrix's 4-bit data and its absmax, quantized on
 * the GPU from its 16-bit source, and dequantized for each matmul forward and
 * backward); gradient accumulation plays the micro-batches with the
 * gradients alive between them. */
#include "memory/train/train_replay.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PIECES 64 /* tensors one term is laid out as */

typedef struct tset {
    uint32_t h[MAX_PIECES];
    size_t n;
} tset;

static bool trainable(const vf_tensor *t) { return vf__train_replay_trainable(t); }

/* A tensor of n elements (its last two dimensions in sh) as the allocator
 * meets its parameter, gradient, states and step temporary. */
static tpiece piece_of(const step_ctx *x, int32_t layer, bool emb, uint64_t n, const uint64_t *sh, uint32_t nd,
                       uint32_t w_bytes)
{
    const vf__tcfg *c = x->c;
    tpiece p = {.layer = layer, .emb = emb, .w = vf__smul(n, w_bytes), .g = vf__smul(n, c->g_bytes),
                .temp = vf__smul(n, c->st_bytes), .g1 = vf__smul(n, c->g_bytes), .m = vf__smul(n, c->master)};
    uint64_t st = vf__optim_state_bytes(x->t->optimizer, c, sh, nd, n) - vf__optim_paged_bytes(x->t->optimizer, n);
    bool adam = x->t->optimizer == VF_OPT_ADAMW || x->t->optimizer == VF_OPT_ADAM;
    if (adam && st > 4) {
        p.st[0] = (st - 4) / 2;
        p.st[1] = (st - 4) - (st - 4) / 2;
        p.st[2] = 4;
    } else {
        p.st[0] = st;
    }
    return p;
}

static uint64_t round512(uint64_t v) { return v > UINT64_MAX - 511 ? v : (v + 511) / 512 * 512; }

/* p joined to run (LoRA): true when run stays within SMALL_RUN each way. */
static bool run_join(tpiece *run, const tpiece *p)
{
    uint64_t a[7] = {run->w, run->g, run->temp, run->st[0], run->st[1], run->st[2], run->m};
    const uint64_t b[7] = {p->w, p->g, p->temp, p->st[0], p->st[1], p->st[2], p->m};
    if (run->layer != p->layer)
        return false;
    for (int k = 0; k < 7; k++) {
        a[k] = (a[k] ? round512(a[k]) : 0) + (b[k] ? round512(b[k]) : 0);
        if (a[k] > SMALL_RUN)
            return false;
    }
    run->w = a[0], run->g = a[1], run->temp = a[2], run->st[0] = a[3], run->st[1] = a[4], run->st[2] = a[5];
    run->m = a[6];
    if (p->g1 > run->g1)
        run->g1 = p->g1;
    return true;
}

/* Appends p; LoRA's small adapters join the run before. */
static void add_piece(step_ctx *x, const tpiece *p)
{
    if (x->c->lora && x->n_pc && run_join(&x->pc[x->n_pc - 1], p))
        return;
    x->pc[x->n_pc++] = *p;
}

/* Where a block's forward uses a parameter of this role, in the order a
 * pre-norm decoder block runs (attention's projections, its output, the
 * router, the MLP's gate, up and down); 0 for the rest (norms, biases,
 * embeddings), which take the place of the matrix before them (use_of). */
static uint8_t use_rank(vf_role role)
{
    switch (role) {
    case VF_ROLE_ATTN_Q:
    case VF_ROLE_ATTN_QKV:
    case VF_ROLE_ATTN_LORA:
        return 1;
    case VF_ROLE_ATTN_K:
        return 2;
    case VF_ROLE_ATTN_V:
        return 3;
    case VF_ROLE_ATTN_O:
        return 4;
    case VF_ROLE_ROUTER:
        return 5;
    case VF_ROLE_MLP_GATE:
    case VF_ROLE_EXPERT:
    case VF_ROLE_SHARED_EXPERT:
        return 6;
    case VF_ROLE_MLP_UP:
        return 7;
    case VF_ROLE_MLP_DOWN:
        return 8;
    case VF_ROLE_OUTPUT:
        return 9;
    default:
        return 0;
    }
}

/* Whether tensor t is in the pieces: trainable, or under LoRA a targeted matrix. */
static bool adapted(const step_ctx *x, const vf_tensor *t, const bool *target)
{
    if (!trainable(t))
        return false;
    return !x->c->lora || (vf__train_matrix_role(t->role) && t->n_dims >= 2 && target[t->role]);
}

/* The trainable pieces: every parameter tensor, or under LoRA each targeted
 * matrix's adapters A [r, in] and B [out, r] (per expert when stacked), as
 * PEFT registers them. */
static bool make_pieces(step_ctx *x)
{
    const vf_model *m = x->m;
    bool target[VF_ROLE_COUNT];
    if (x->c->lora && vf__lora_targets(x->t->lora_targets, target, NULL) != VF_OK)
        return false;
    uint32_t mask = x->c->lora ? (target[VF_ROLE_ATTN_Q] ? 1u : 0u) | (target[VF_ROLE_ATTN_K] ? 2u : 0u) |
                                     (target[VF_ROLE_ATTN_V] ? 4u : 0u)
                               : 0u;
    size_t cap = 0; /* before LoRA's runs join */
    for (size_t i = 0; i < m->n_tensors; i++) {
        const vf_tensor *t = &m->tensors[i];
        if (adapted(x, t, target))
            cap += x->c->lora ? 4 * (size_t)(t->n_experts > 1 ? t->n_experts : 1) : 1; /* 2 copies at most */
    }
    if (!(x->pc = calloc(cap ? cap : 1, sizeof *x->pc)))
        return false;
    int32_t last_layer = INT32_MIN;
    uint8_t last_use = 0;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const vf_tensor *t = &m->tensors[i];
        if (!adapted(x, t, target))
            continue;
        uint32_t nd = t->n_dims < VF_MAX_DIMS ? t->n_dims : VF_MAX_DIMS;
        uint8_t use = use_rank(t->role);
        if (!use && t->layer == last_layer)
            use = last_use; /* a norm or bias: beside the matrix before it */
        last_layer = t->layer, last_use = use;
        if (!x->c->lora) {
            bool emb = t->role == VF_ROLE_EMBED || t->role == VF_ROLE_POS_EMBED;
            tpiece p = piece_of(x, t->layer, emb, t->n_params, t->shape, nd, x->c->w_bytes);
            p.use = use;
            add_piece(x, &p);
            continue;
        }
        uint64_t e = t->n_experts > 1 ? t->n_experts : 1, r = x->c->lora_rank, copies, rows;
        vf__lora_adapter_layout(x->c, mask, t, &copies, &rows);
        e *= copies;
        uint64_t out = t->shape[nd - 2] / copies, in = t->shape[nd - 1];
        const uint64_t shA[2] = {rows, in}, shB[2] = {out, r};
        tpiece A = piece_of(x, t->layer, false, rows * in, shA, 2, x->c->w_bytes);
        tpiece Bp = piece_of(x, t->layer, false, out * r, shB, 2, x->c->w_bytes);
        A.use = Bp.use = use;
        for (uint64_t j = 0; j < e; j++) {
            add_piece(x, &A);
            add_piece(x, &Bp);
        }
    }
    return true;
}

/* Items 0..n-1 grouped by key (a counting sort, each group in item order):
 * key[i] in [0, n_keys), or -1 for items left out; group k is
 * order[first[k]] .. order[first[k + 1] - 1]. */
static bool bucket(const int64_t *key, size_t n, size_t n_keys, size_t **first, size_t **order)
{
    *first = calloc(n_keys + 1, sizeof **first);
    *order = calloc(n ? n : 1, sizeof **order);
    size_t *at = calloc(n_keys + 1, sizeof *at);
    bool ok = *first && *order && at;
    for (size_t i = 0; ok && i < n; i++)
        if (key[i] >= 0)
            (*first)[key[i] + 1]++;
    for (size_t k = 1; ok && k <= n_keys; k++)
        (*first)[k] += (*first)[k - 1];
    if (ok)
        memcpy(at, *first, (n_keys + 1) * sizeof *at);
    for (size_t i = 0; ok && i < n; i++)
        if (key[i] >= 0)
            (*order)[at[key[i]]++] = i;
    free(at);
    return ok;
}

/* QLoRA: each block's 4-bit matrices, dequantized to 16 bit per matmul (one
 * per stacked tensor: the experts' dequantized copies are made and freed one
 * after another, so the allocator meets the same block each time). */
static bool make_deq(step_ctx *x)
{
    const vf_model *m = x->m;
    int64_t *key = calloc(m->n_tensors ? m->n_tensors : 1, sizeof *key);
    bool ok = key != NULL;
    for (size_t i = 0; ok && i < m->n_tensors; i++) {
        const vf_tensor *t = &m->tensors[i];
        bool q = x->c->qlora && trainable(t) && t->layer >= 0 && t->layer < (int32_t)x->L && vf__train_quantized(x->c, t);
        key[i] = q ? t->layer : -1;
    }
    size_t *order = NULL;
    ok = ok && bucket(key, m->n_tensors, x->L, &x->deq_first, &order) &&
         (x->deq = calloc(m->n_tensors ? m->n_tensors : 1, sizeof *x->deq));
    for (size_t k = 0; ok && k < x->deq_first[x->L]; k++) {
        const vf_tensor *t = &m->tensors[order[k]];
        x->deq[k] = vf__smul(t->n_experts > 1 ? t->n_params / t->n_experts : t->n_params, 2);
    }
    free(order);
    free(key);
    return ok;
}

/* torchtune's optimizer_in_bwd: the gradient made, its parameter's own
 * optimizer stepped by the post-accumulate-grad hook (its states on the
 * first step, its temporary), then zero_grad() frees the gradient. */
static void step_in_backward(step_ctx *x, const tpiece *t)
{
    uint32_t g = vf__replay_alloc(x->r, t->g);
    for (int k = 0; k < 3 && !x->states_made; k++)
        vf__replay_alloc(x->r, t->st[k]);
    if (x->p->step_temp)
        vf__replay_free(x->r, vf__replay_alloc(x->r, t->temp < x->p->step_temp ? t->temp : x->p->step_temp));
    vf__replay_free(x->r, g);
}

/* Gradients of the parameters of block l (l = -1: outside the blocks; head
 * selects the final norm and head against the embeddings), in the order
 * autograd makes them: the engine's ready queue runs the node of the higher
 * sequence number first (torch/csrc/autograd/engine.cpp, CompareNodeTaskTime),
 * so a block's parameters get their gradients in reverse of registration
 * (down, up, gate, post-attention norm, o, v, k, q, input norm: the torch
 * 1.13 traces' s1.m0.backward). Which tensor lands where decides whether a
 * segment the gradients packed is left with a tail an optimizer state later
 * takes (docs/memory-model.md, "Order of the gradients"). */
static void make_grads(step_ctx *x, int32_t l, bool head)
{
    if (x->sh) { /* sharded: a unit's gradients at once, the outside's at the end */
        if (l >= 0 || !head)
            vf__shard_grads(x, (uint32_t)(l + 1));
        return;
    }
    for (size_t k = x->first[l + 1]; k < x->first[l + 2]; k++) {
        size_t i = x->by_layer[k];
        const tpiece *t = &x->pc[i];
        if (l < 0 && t->emb == head)
            continue;
        uint64_t g = t->g;
        if (x->c->optim_in_bwd) {
            step_in_backward(x, t);
            continue;
        }
        if (x->grads[i]) /* a kept gradient: AccumulateGrad adds the op's new one in place, then frees it
                            (a run's one at a time: its largest) */
            vf__replay_free(x->r, vf__replay_alloc(x->r, t->g1));
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

/* Activation offloading (torchtune OffloadActivations): the pack hook
 * copies each saved tensor of the block to pinned host memory and keeps
 * the GPU tensor only in its forward stash, dropped once VF__OFFLOAD_STASH
 * newer tensors were packed. */
static void offload_block(step_ctx *x, tset *s, uint32_t *stash, size_t *n)
{
    for (size_t i = 0; i < s->n; i++) {
        if (*n == VF__OFFLOAD_FLIGHT(x->c)) {
            vf__replay_free(x->r, stash[0]);
            memmove(stash, stash + 1, (*n - 1) * sizeof *stash);
            (*n)--;
        }
        stash[(*n)++] = s->h[i];
    }
    s->n = 0;
}

/* Backward brings block l's saved tensors back from the host as its nodes
 * unpack them, freed with the block's backward (laid out as save_block's:
 * the s^2 ones, the intermediate-width ones, the hidden-sized rest). */
static void bring_back(step_ctx *x, tset *s)
{
    const vf__tacts *A = x->acts;
    uint64_t sc = A->scores_kept, ff = A->ff_kept;
    if (sc + ff > A->layer_kept)
        sc = ff = 0;
    size_t n1 = 0, n2 = 0, n3 = 0;
    vf__replay_pieces(x->r, sc, vf__smul(A->attn_scores, x->c->act), s->h, MAX_PIECES / 4, &n1);
    vf__replay_pieces(x->r, ff, x->uff, s->h + n1, MAX_PIECES / 4, &n2);
    vf__replay_pieces(x->r, A->layer_kept - sc - ff, x->u, s->h + n1 + n2, MAX_PIECES - n1 - n2, &n3);
    s->n = n1 + n2 + n3;
}

/* Recomputation: what a checkpoint drops of a block's saved set (the s^2
 * scores, the MLP's intermediate-width tensors, then hidden-sized ones),
 * made again by its forward's rerun before the block's backward and alive
 * through it (torch.utils.checkpoint, reentrant or not: the same tensors). */
static void recompute_block(step_ctx *x, tset *s)
{
    const vf__tacts *A = x->acts;
    uint64_t drop = A->layer > A->layer_kept ? A->layer - A->layer_kept : 0;
    uint64_t sc = A->scores_recomputed < drop ? A->scores_recomputed : drop;
    uint64_t ff = A->ff_kept < drop - sc ? A->ff_kept : drop - sc;
    size_t n1 = 0, n2 = 0, n3 = 0;
    vf__replay_pieces(x->r, sc, vf__smul(A->attn_scores, x->c->act), s->h, MAX_PIECES / 4, &n1);
    vf__replay_pieces(x->r, ff, x->uff, s->h + n1, MAX_PIECES / 4, &n2);
    vf__replay_pieces(x->r, drop - sc - ff, x->u, s->h + n1 + n2, MAX_PIECES - n1 - n2, &n3);
    s->n = n1 + n2 + n3;
}

/* A checkpointed block's forward: the tensors its rerun will make, not
 * saved (no_grad, or the non-reentrant checkpoint's pack hook), so each
 * dies once the next op has read it. */
static void checkpointed_forward(step_ctx *x)
{
    const vf__tacts *A = x->acts;
    uint64_t drop = A->layer > A->layer_kept ? A->layer - A->layer_kept : 0;
    uint64_t sc = A->scores_recomputed < drop ? A->scores_recomputed : drop;
    uint64_t ff = A->ff_kept < drop - sc ? A->ff_kept : drop - sc;
    uint32_t win[2] = {0, 0};
    vf__train_stream(x, sc, vf__smul(A->attn_scores, x->c->act), win);
    vf__train_stream(x, drop - sc - ff, x->u, win);
    vf__train_stream(x, ff, x->uff, win);
    vf__replay_free(x->r, win[0]);
    vf__replay_free(x->r, win[1]);
}

/* A transient of bytes as tensors of piece bytes, made and freed. */
static void transient(step_ctx *x, uint64_t bytes, uint64_t piece)
{
    tset t;
    vf__replay_pieces(x->r, bytes, piece, t.h, MAX_PIECES, &t.n);
    vf__replay_free_all(x->r, t.h, &t.n);
}

/* optimizer.step(): states made on the first step, every parameter's
 * before any temporary (torch/optim/adamw.py: _init_group walks the whole
 * group before the foreach or per-tensor update runs), then the step's
 * temporaries (foreach: one per parameter tensor, all alive together; the
 * per-tensor loop: one at a time), then zero_grad. */
static void optimizer_step(step_ctx *x)
{
    if (x->c->optim_in_bwd) { /* every parameter was stepped in the backward */
        x->states_made = true;
        return;
    }
    uint64_t temp_left = x->p->step_temp;
    bool foreach = x->t->optim_impl == VF_OPTIM_FOREACH || x->t->optim_impl == VF_OPTIM_FOREACH_LEGACY;
    uint32_t *tmp = calloc(x->n_pc ? x->n_pc : 1, sizeof *tmp);
    if (!tmp) {
        x->r->broken = true;
        return;
    }
    for (size_t i = 0; i < x->n_pc && !x->states_made; i++)
        for (int k = 0; k < 3; k++) /* AdamW: exp_avg, exp_avg_sq, the step tensor */
            vf__replay_alloc(x->r, x->pc[i].st[k]);
    for (size_t i = 0; i < x->n_pc; i++) {
        const tpiece *t = &x->pc[i];
        uint64_t one = t->temp;
        if (!foreach) { /* the per-tensor loop: its denominator lives for one tensor */
            vf__replay_free(x->r, vf__replay_alloc(x->r, one));
        } else if (temp_left) {
            tmp[i] = vf__replay_alloc(x->r, one < temp_left ? one : temp_left);
            temp_left -= one < temp_left ? one : temp_left;
        }
    }
    x->states_made = true;
    for (size_t i = x->n_pc; i-- > 0;)
        vf__replay_free(x->r, tmp[i]);
    free(tmp);
    if (x->c->grads_kept) /* zero_grad(set_to_none=False): zeroed in place, kept */
        return;
    for (size_t i = 0; i < x->n_pc; i++) {
        vf__replay_free(x->r, x->grads[i]);
        x->grads[i] = 0;
    }
}

/* The backward's start: the loss's gradients, then the head's. HF's loss
 * (the whole logits, upcast) runs as autograd's nodes do in the torch 1.13
 * trace (tests/reference/train-runs/traces, s1.m0.backward): nll_loss's
 * gradient and log_softmax's (fp32, both alive), nll's freed and then the
 * log-probabilities log_softmax saved, ToCopyBackward's gradient in the
 * activation dtype (lg bytes; 0: the logits were fp32, no copy), the fp32
 * one freed, the head's weight gradient, and only then the head's input
 * and the rest kept outside the blocks. Other losses (chunked, fused,
 * LitGPT's) keep the plain order: their gradients, the outside freed, the
 * head's gradients. outside->h[n1..] are the log-probabilities. */
static void head_backward(step_ctx *x, tset *outside, size_t n1, uint64_t lg)
{
    vf__replay *r = x->r;
    tset bs;
    vf__replay_pieces(r, x->acts->bwd_start, x->ltv, bs.h, MAX_PIECES, &bs.n);
    uint32_t cast = 0;
    bool hf = x->c->loss == VF_LOSS_FULL && !x->c->litgpt && bs.n == 2 && outside->n > n1;
    if (hf) {
        vf__replay_free(r, bs.h[0]);
        for (size_t i = outside->n; i-- > n1;)
            vf__replay_free(r, outside->h[i]);
        outside->n = n1;
        if (lg && (cast = vf__replay_alloc(r, lg))) {
            vf__replay_free(r, bs.h[1]);
            bs.n = 0;
        } else {
            bs.h[0] = bs.h[1];
            bs.n = 1;
        }
    } else {
        vf__replay_free_all(r, outside->h, &outside->n);
    }
    vf__shard_backward(x, true);
    make_grads(x, -1, true);
    vf__replay_free(r, cast);
    vf__replay_free_all(r, outside->h, &outside->n);
    vf__replay_free_all(r, bs.h, &bs.n);
}

/* One micro-batch's forward and backward; in: its input ids and labels
 * (int64), which replace the previous micro-batch's (the loop's variable
 * holds the last through the optimizer step). */
static void micro_batch(step_ctx *x, tset *blocks, tset *outside, uint32_t in[2])
{
    vf__replay *r = x->r;
    const vf__tacts *A = x->acts;
    uint64_t T = x->c->T;
    uint32_t prev[2] = {in[0], in[1]};
    in[0] = vf__replay_alloc(r, 8 * T);
    in[1] = vf__replay_alloc(r, 8 * T);
    vf__replay_free(r, prev[1]);
    vf__replay_free(r, prev[0]);
    /* forward */
    uint32_t stash[VF__OFFLOAD_STASH];
    size_t n_stash = 0;
    vf__shard_gather(x, 0);
    for (uint32_t l = 0; l < x->L && !r->broken; l++) {
        vf__shard_gather(x, l + 1);
        vf__train_dequantize(x, l);
        save_block(x, &blocks[l]);
        if (x->c->act_offload)
            offload_block(x, &blocks[l], stash, &n_stash);
        checkpointed_forward(x);
    }
    vf__shard_release(x);
    /* the forward's end as HF's ForCausalLMLoss runs it: the head's input and
     * the rest outside the blocks, the logits in the activation dtype, their
     * fp32 copy (logits.float()), log_softmax's output (saved: the vocabulary
     * part of what is kept outside), then the copy and the logits die */
    uint64_t vocab = x->c->loss == VF_LOSS_FUSED ? 0 : vf__smul(vf__smul(A->logits_tv, 4), x->c->softmax_keeps_input ? 2 : 1);
    if (vocab > A->non_layer)
        vocab = A->non_layer;
    size_t n1 = 0, n2 = 0;
    vf__replay_pieces(r, A->non_layer - vocab, x->u, outside->h, MAX_PIECES / 2, &n1);
    uint64_t lg = vf__smul(A->logits_tv, x->c->act);
    uint32_t logits = lg < A->fwd_temp ? vf__replay_alloc(r, lg) : 0;
    tset copy;
    vf__replay_pieces(r, logits ? A->fwd_temp - lg : A->fwd_temp, x->ltv, copy.h, MAX_PIECES, &copy.n);
    vf__replay_pieces(r, vocab, x->ltv, outside->h + n1, MAX_PIECES - n1, &n2);
    outside->n = n1 + n2;
    vf__replay_free_all(r, copy.h, &copy.n);
    vf__replay_free(r, logits);
    /* backward: the loss's gradients, the head's, then block by block */
    head_backward(x, outside, n1, logits ? lg : 0);
    vf__replay_free_all(r, stash, &n_stash); /* the first backward node's hook empties the stash */
    for (uint32_t l = x->L; l-- > 0 && !r->broken;) {
        vf__shard_gather(x, l + 1);
        if (x->c->act_offload)
            bring_back(x, &blocks[l]);
        tset rc;
        recompute_block(x, &rc);
        vf__train_dequantize(x, l);
        make_grads(x, (int32_t)l, false);
        transient(x, A->bwd_mlp, x->uff);
        transient(x, A->bwd_attn, A->attn_scores ? vf__smul(A->attn_scores, 4) : x->u);
        vf__replay_free_all(r, rc.h, &rc.n);
        vf__replay_free_all(r, blocks[l].h, &blocks[l].n);
    }
    vf__shard_release(x);
    tset be;
    vf__replay_pieces(r, A->bwd_end, x->u, be.h, MAX_PIECES, &be.n);
    make_grads(x, -1, false);
    vf__replay_free_all(r, be.h, &be.n);
    vf__shard_backward(x, false);
}

/* MICRO_MAX: the micro-batches of an accumulated step that are played; from
 * the second on, each starts with the gradients alive and meets the blocks
 * the one before cached, so the rest repeat it. */
#define MICRO_MAX 2

static void one_step(step_ctx *x, tset *blocks, tset *outside)
{
    uint32_t n = x->c->accum < MICRO_MAX ? x->c->accum : MICRO_MAX, in[2] = {0, 0};
    for (uint32_t k = 0; k < (n ? n : 1) && !x->r->broken; k++)
        micro_batch(x, blocks, outside, in);
    if (x->sh)
        vf__shard_step(x);
    else
        optimizer_step(x);
    vf__replay_free(x->r, in[1]);
    vf__replay_free(x->r, in[0]);
}

/* One block's pieces (indices into x->pc, in registration order) put in
 * the order the backward makes their gradients: the later a parameter's
 * use in the forward, the earlier its gradient (autograd's ready queue runs
 * the node of the higher sequence number first, torch/csrc/autograd/
 * engine.cpp CompareNodeTaskTime); among pieces of one use, the later
 * registered first. A Llama block: down, up, gate, post-attention norm, o,
 * v, k, q, input norm, as the torch 1.13 traces' s1.m0.backward has them
 * (test_train_replay.c). */
typedef struct gkey {
    uint8_t use;
    size_t i;
} gkey;

static int by_grad_order(const void *pa, const void *pb)
{
    const gkey *a = pa, *b = pb;
    if (a->use != b->use)
        return a->use > b->use ? -1 : 1;
    return a->i > b->i ? -1 : a->i < b->i;
}

static bool grad_order(const step_ctx *x, size_t *v, size_t n)
{
    if (n < 2)
        return true;
    gkey *k = malloc(n * sizeof *k);
    if (!k)
        return false;
    for (size_t j = 0; j < n; j++)
        k[j] = (gkey){x->pc[v[j]].use, v[j]};
    qsort(k, n, sizeof *k, by_grad_order);
    for (size_t j = 0; j < n; j++)
        v[j] = k[j].i;
    free(k);
    return true;
}

/* The trainable pieces grouped by block (0: outside, l + 1: block l), each
 * group in order: the backward pass makes each block's gradients, and
 * scanning every piece per block would cost blocks x pieces. */
static bool group_by_layer(step_ctx *x)
{
    int64_t *key = calloc(x->n_pc ? x->n_pc : 1, sizeof *key);
    for (size_t i = 0; key && i < x->n_pc; i++) {
        const tpiece *t = &x->pc[i];
        key[i] = t->layer >= -1 && t->layer < (int32_t)x->L ? t->layer + 1 : -1;
    }
    bool ok = key && bucket(key, x->n_pc, (size_t)x->L + 1, &x->first, &x->by_layer);
    free(key);
    for (size_t g = 0; ok && g <= x->L; g++)
        ok = grad_order(x, x->by_layer + x->first[g], x->first[g + 1] - x->first[g]);
    return ok;
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
    uint64_t step_temp, ws, device_bytes, capacity, hold;
    uint64_t hidden, inter;
    uint32_t L, eval_batch;
    vf_optimizer optimizer;
    vf_optim_impl impl;
    vf_recompute recompute;
    vf__tplace place; /* the sharded layouts' shares (ZeRO, FSDP, offload) */
    int fsdp;
    char lora_targets[sizeof ((vf_train_opts *)0)->lora_targets];
    char qlora[sizeof ((vf_train_opts *)0)->qlora];
} vf__trkey;

typedef struct vf__trmemo {
    struct vf__trmemo *next;
    vf__trkey key;
    vf__tstats stats;
    uint64_t largest; /* the step's largest request (fit's margin) */
    uint64_t eval_allocated, eval_reserved; /* the evaluation step's own peaks */
} vf__trmemo;

#define TRMEMO_MAX 1024 /* past this many a model's steps are replayed every time */

static pthread_mutex_t trmemo_lock = PTHREAD_MUTEX_INITIALIZER;

static const char trmemo_slot = 0; /* names this file's memo on the model */

static void trmemo_free(void *p)
{
    vf__trmemo *l = p;
    while (l) {
        vf__trmemo *next = l->next;
        free(l);
        l = next;
    }
}

static void trmemo_key(vf__trkey *k, const vf__replay *r, const vf_train_opts *t, const vf__tarch *a,
                       const vf__tcfg *c, const vf__tacts *acts, const vf__tplace *p, uint64_t ws, uint64_t hold)
{
    memset(k, 0, sizeof *k);
    k->capacity = r->capacity;
    k->hold = hold;
    k->recompute = t->recompute;
    memcpy(&k->c, c, sizeof *c);
    memcpy(&k->acts, acts, sizeof *acts);
    memcpy(&k->conf, &r->conf, sizeof r->conf);
    k->step_temp = p->step_temp;
    memcpy(&k->place, p, sizeof *p);
    k->fsdp = t->fsdp;
    k->ws = ws;
    /* the device's size reaches the replay only as a memory fraction's limit */
    k->device_bytes = r->conf.fraction > 0 ? r->device_bytes : 0;
    k->hidden = a->hidden;
    k->inter = a->inter;
    k->L = a->n_layers;
    k->eval_batch = t->eval_batch;
    k->optimizer = t->optimizer;
    k->impl = t->optim_impl;
    if (c->lora) /* which matrices carry adapters; NF4 or NF4 with double quantization */
        snprintf(k->lora_targets, sizeof k->lora_targets, "%s", t->lora_targets);
    if (c->qlora)
        snprintf(k->qlora, sizeof k->qlora, "%s", t->qlora);
}

/* true: the figures of this key were kept (into r). */
static bool trmemo_get(vf__replay *r, const vf_model *m, const vf__trkey *k, size_t *n)
{
    *n = 0;
    pthread_mutex_lock(&trmemo_lock);
    const vf__trmemo *l = vf__model_memo(m, &trmemo_slot);
    for (; l && memcmp(&l->key, k, sizeof *k); l = l->next)
        (*n)++;
    if (l) {
        r->stats = l->stats;
        r->largest = l->largest;
        r->track_allocated = l->eval_allocated;
        r->track_reserved = l->eval_reserved;
        r->kept = true;
        r->oom = r->broken = l->stats.failed;
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
    e->eval_allocated = r->track_allocated;
    e->eval_reserved = r->track_reserved;
    pthread_mutex_lock(&trmemo_lock);
    e->next = vf__model_memo(m, &trmemo_slot);
    if (vf__model_memo_set(m, &trmemo_slot, e, trmemo_free))
        e = NULL;
    pthread_mutex_unlock(&trmemo_lock);
    free(e);
}

/* QLoRA's base as the load places it: each 4-bit matrix quantized on the
 * GPU from its 16-bit source (Params4bit.cuda: the packed data, then its
 * absmax and, with double quantization, the nested scales), the rest at the
 * compute dtype, buffers as stored. */
static void load_qlora(step_ctx *x)
{
    const vf_model *m = x->m;
    for (size_t i = 0; i < m->n_tensors && !x->r->broken; i++) {
        const vf_tensor *t = &m->tensors[i];
        if (t->flags & VF_TENSOR_MTP)
            continue;
        if (t->flags & VF_TENSOR_NOT_PARAM) {
            vf__replay_alloc(x->r, t->n_bytes);
            continue;
        }
        uint64_t b = vf__train_frozen_bytes(x->c, x->t->qlora, t, t->n_params);
        if (!vf__train_quantized(x->c, t)) {
            vf__replay_alloc(x->r, b);
            continue;
        }
        uint32_t src = vf__replay_alloc(x->r, t->n_bytes);
        uint64_t data = t->n_params / 2 + (t->n_params & 1);
        vf__replay_alloc(x->r, data);
        vf__replay_alloc(x->r, b > data ? b - data : 0);
        vf__replay_free(x->r, src);
    }
}

/* The model on the GPU: its parameters at the training precision, or the
 * frozen base at its storage and the adapters after it (get_peft_model);
 * LitGPT's own head for a tied model; its buffers. */
static void load_model(step_ctx *x)
{
    const vf__tcfg *c = x->c;
    if (c->qlora)
        load_qlora(x);
    else
        vf__replay_weights(x->r, x->m, "", VF_DTYPE_UNKNOWN, 1.0, c->lora ? (uint32_t)c->frozen_bytes : c->w_bytes);
    if (c->head_shape[0]) {
        vf_tensor h = {.role = VF_ROLE_OUTPUT, .n_dims = 2, .shape = {c->head_shape[0], c->head_shape[1]}};
        uint64_t n = c->head_shape[0] * c->head_shape[1];
        vf__replay_alloc(x->r, c->lora ? vf__train_frozen_bytes(c, x->t->qlora, &h, n) : vf__smul(n, c->w_bytes));
    }
    if (c->lora)
        for (size_t i = 0; i < x->n_pc; i++)
            vf__replay_alloc(x->r, x->pc[i].w);
}

static void ctx_free(step_ctx *x, tset *blocks)
{
    free(blocks);
    free(x->first);
    free(x->by_layer);
    free(x->grads);
    free(x->pc);
    free(x->deq);
    free(x->deq_first);
    vf__shard_close(x);
}

/* The step as the allocator meets it. */
static void replay_steps(vf__replay *r, const vf_model *m, const vf_train_opts *t, const vf__tarch *a,
                         const vf__tcfg *c, const vf__tacts *acts, const vf__tplace *p, uint64_t ws, uint64_t hold)
{
    step_ctx x = {.r = r, .m = m, .t = t, .c = c, .acts = acts, .p = p, .L = a->n_layers};
    x.u = vf__smul(vf__smul(c->act, c->T), a->hidden);
    x.uff = vf__smul(vf__smul(c->act, c->T), a->inter ? a->inter : a->hidden);
    /* the loss's fp32 tensors: the whole logits', or one chunk's (chunked, fused) */
    x.ltv = vf__smul(acts->logits_tv, 4) / (c->loss == VF_LOSS_CHUNKED ? c->loss_chunks : 1);
    if (c->loss == VF_LOSS_FUSED)
        x.ltv = x.u;
    tset *blocks = calloc(x.L ? x.L : 1, sizeof *blocks);
    tset outside = {{0}, 0};
    bool ok = blocks && make_pieces(&x) && make_deq(&x) && group_by_layer(&x) &&
              (x.grads = calloc(x.n_pc ? x.n_pc : 1, sizeof *x.grads)) && vf__shard_open(&x);
    if (!ok) {
        ctx_free(&x, blocks);
        r->broken = true;
        return;
    }
    if (x.sh)
        vf__shard_load(&x);
    else
        load_model(&x);
    r->largest = 0; /* the load's requests are not the step's */
    vf__replay_apply_capacity(r);
    vf__replay_alloc(r, hold);
    r->largest = 0;
    vf__replay_alloc(r, ws);
    for (int step = 0; step < 2 && !r->broken; step++)
        one_step(&x, blocks, &outside);
    if (t->eval_batch && !r->broken)
        vf__train_eval_step(&x);
    ctx_free(&x, blocks);
}

bool vf__train_replay(vf__replay *r, const vf_model *m, const vf_train_opts *t, const vf__tarch *a, const vf__tcfg *c,
                      const vf__tacts *acts, const vf__tplace *p, uint64_t ws, uint64_t hold)
{
    if (c->tp > 1 || c->pp > 1 ||
        a->n_layers > (1u << 12) || (c->lora && c->frozen_bytes != (double)(uint32_t)c->frozen_bytes))
        return false;
    vf__trkey k;
    size_t n;
    trmemo_key(&k, r, t, a, c, acts, p, ws, hold);
    if (trmemo_get(r, m, &k, &n))
        return true;
    replay_steps(r, m, t, a, c, acts, p, ws, hold);
    /* an incomplete replay (no host memory) is not kept; one that ran out of the device is */
    if ((!r->broken || r->oom) && n < TRMEMO_MAX)
        trmemo_put(r, m, &k);
    return true;
}
