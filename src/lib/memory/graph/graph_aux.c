/* graph_aux.c — the auxiliary classifiers torchvision's GoogLeNet and
 * Inception3 run in training only (self.training and aux_logits, the
 * default with weights=None), which an eval export leaves out: their
 * parameters (with gradients and optimizer state: the module trains them),
 * their buffers, what their forward saves for backward and their backward's
 * transients. From torchvision 0.14's source (Debian python3-torchvision,
 * the version measured in tests/reference/torch-cnn):
 * googlenet.py InceptionAux, on inception4a's output (aux1) and
 * inception4d's (aux2): adaptive_avg_pool2d(4, 4), BasicConv2d(C, 128, 1x1:
 * conv without bias, BatchNorm2d, relu in place), flatten, fc1
 * Linear(2048, 1024), relu in place, Dropout(0.7), fc2 Linear(1024, K);
 * inception.py InceptionAux(768, K), on Mixed_6e's output: avg_pool2d(5,
 * stride 3), conv0 BasicConv2d(768, 128, 1x1), conv1 BasicConv2d(128, 768,
 * 5x5), adaptive_avg_pool2d(1), flatten, fc Linear(768, K). What each op
 * saves is graph_train.c's rule for it (derivatives.yaml); the heads' input
 * is saved by the main branch's next convolutions already. */
#include "memory/graph/graph_mem.h"

#include <string.h>

static void tensor(vf__aux_head *h, uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    if (h->n_tensors >= VF_AUX_TENSORS)
        return;
    uint64_t *x = h->shape[h->n_tensors];
    x[0] = a, x[1] = b, x[2] = c, x[3] = d;
    uint32_t n = d ? 4 : c ? 3 : b ? 2 : 1;
    h->n_dims[h->n_tensors++] = n;
    h->params += a * (b ? b : 1) * (c ? c : 1) * (d ? d : 1);
}

/* BasicConv2d: conv (no bias) + BatchNorm2d(out) + relu_. Saved: the conv's
 * input (counted by the caller), the BN's input (the conv's output) and its
 * fp32 save_mean and save_invstd, relu's result (the BN output it
 * overwrote); buffers: running mean and variance, num_batches_tracked. */
static void basic_conv(vf__aux_head *h, uint64_t in, uint64_t out, uint64_t k, uint64_t out_el, uint32_t act)
{
    tensor(h, out, in, k, k);
    tensor(h, out, 0, 0, 0);
    tensor(h, out, 0, 0, 0);
    h->saved += 2 * out_el * act + 2 * 4 * out;
    h->buffer_bytes += 2 * 4 * out + 8;
}

/* The last node of a module by its scoped name ("/inception4a/..."): its
 * position in the order and first output, the module's output. */
static bool module_output(const vf__graph *g, const char *scope, uint32_t *pos, uint32_t *v)
{
    size_t len = strlen(scope);
    bool found = false;
    for (size_t p = 0; p < g->n_node; p++) {
        const vf__gnode *n = &g->node[g->order[p]];
        if (n->name && !strncmp(n->name, scope, len) && n->n_out && n->out[0] != VF_GRAPH_NONE)
            *pos = (uint32_t)p, *v = n->out[0], found = true;
    }
    return found;
}

/* The head's input [N, C, H, W] from the graph, torchvision's figures when
 * the module is not found by name (the head then priced at the backward's
 * end, erring high). */
static void attach(const vf__graph *g, const vf__shapes *s, const char *scope, const uint64_t dflt[3],
                   vf__aux_head *h, uint64_t chw[3], bool *placed)
{
    uint32_t p, v;
    if (module_output(g, scope, &p, &v) && s->v[v].rank == 4 && s->v[v].d[1] > 0 && s->v[v].d[2] > 0 &&
        s->v[v].d[3] > 0) {
        h->at = p;
        for (int k = 0; k < 3; k++)
            chw[k] = (uint64_t)s->v[v].d[k + 1];
        return;
    }
    h->at = 0;
    memcpy(chw, dflt, 3 * sizeof *chw);
    *placed = false;
}

static void googlenet_head(vf__aux_head *h, const uint64_t chw[3], uint64_t N, uint64_t K, uint32_t act)
{
    uint64_t C = chw[0], pooled = N * C * 16;
    h->saved += pooled * act; /* adaptive_avg_pool2d's output, the conv's input */
    basic_conv(h, C, 128, 1, N * 2048, act);
    tensor(h, 1024, 2048, 0, 0);
    tensor(h, 1024, 0, 0, 0);
    tensor(h, K, 1024, 0, 0);
    tensor(h, K, 0, 0, 0);
    /* fc1's input is relu's result (a view); relu_ on fc1's output keeps it;
     * dropout keeps its bool mask and fc2 its output (graph_train.c's
     * Dropout rule, native_dropout) */
    h->saved += N * 1024 * act + N * 1024 + N * 1024 * act;
    h->saved += N * K * 4; /* the head's cross-entropy: its fp32 log-softmax */
    /* adaptive_avg_pool2d_backward: the input's gradient beside the pooled one's */
    h->transient = N * C * chw[1] * chw[2] * act + pooled * act;
}

static void inception_head(vf__aux_head *h, const uint64_t chw[3], uint64_t N, uint64_t K, uint32_t act)
{
    uint64_t C = chw[0];
    uint64_t hp = chw[1] >= 5 ? (chw[1] - 5) / 3 + 1 : 1, wp = chw[2] >= 5 ? (chw[2] - 5) / 3 + 1 : 1;
    uint64_t hc = hp > 4 ? hp - 4 : 1, wc = wp > 4 ? wp - 4 : 1;
    uint64_t pooled = N * C * hp * wp;
    h->saved += pooled * act; /* avg_pool2d's output, conv0's input */
    basic_conv(h, C, 128, 1, N * 128 * hp * wp, act);
    basic_conv(h, 128, 768, 5, N * 768 * hc * wc, act);
    tensor(h, K, 768, 0, 0);
    tensor(h, K, 0, 0, 0);
    h->saved += N * 768 * act; /* adaptive_avg_pool2d(1)'s output, fc's input (its input: relu's result, kept) */
    h->saved += N * K * 4;
    h->transient = N * C * chw[1] * chw[2] * act + pooled * act; /* avg_pool2d_backward */
}

void vf__aux_heads(const vf_model *m, const vf__shapes *s, uint32_t act, vf__aux *out)
{
    memset(out, 0, sizeof *out);
    const vf__graph *g = m->graph;
    int net = 0;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const char *n = m->tensors[i].name;
        if (!n)
            continue;
        if (strstr(n, "aux1.") || strstr(n, "aux2.") || strstr(n, "AuxLogits."))
            return; /* a training export: the heads are in the graph */
        if (!strncmp(n, "inception3a.", 12))
            net = 1;
        else if (!strncmp(n, "Mixed_5b.", 9))
            net = 2;
    }
    if (!net)
        return;
    uint64_t N = s->batch ? s->batch : 1, K = 1000;
    if (g->n_outputs && s->v[g->outputs[0]].rank == 2 && s->v[g->outputs[0]].d[1] > 0)
        K = (uint64_t)s->v[g->outputs[0]].d[1];
    out->placed = true;
    uint64_t chw[3];
    if (net == 1) {
        static const uint64_t d1[3] = {512, 14, 14}, d2[3] = {528, 14, 14};
        out->net = "GoogLeNet aux1 on inception4a, aux2 on inception4d";
        out->n = 2;
        attach(g, s, "/inception4a/", d1, &out->h[0], chw, &out->placed);
        googlenet_head(&out->h[0], chw, N, K, act);
        attach(g, s, "/inception4d/", d2, &out->h[1], chw, &out->placed);
        googlenet_head(&out->h[1], chw, N, K, act);
    } else {
        static const uint64_t d[3] = {768, 17, 17};
        out->net = "Inception3 AuxLogits on Mixed_6e";
        out->n = 1;
        attach(g, s, "/Mixed_6e/", d, &out->h[0], chw, &out->placed);
        inception_head(&out->h[0], chw, N, K, act);
    }
}
