/* graph_scratch.c — the kernel scratch a 2-D convolution's backward
 * allocates and frees inside aten::convolution_backward as PyTorch 1.13
 * runs it on CPU in fp32 with one thread (the reference measurements,
 * tests/reference/torch-cnn/wide.py), docs/memory-model.md "Kernel scratch":
 *  - the backend (aten/src/ATen/native/Convolution.cpp, use_mkldnn): oneDNN
 *    when (strided || dilated || N >= 16 || kernel not 1x1 || threads > 1)
 *    && (groups > 1 || kernel > 3x3 || N > 1 || N*C*H*W > 20480); else
 *    slow_conv2d (ConvolutionMM2d.cpp);
 *  - oneDNN (ideep over plain NCHW tensors): backward-data reorders dy and
 *    the weights to blocked layouts and writes dx blocked before reordering
 *    it back; backward-weights reorders x and dy and writes dw blocked. Each
 *    blocked tensor holds its channels rounded up to the 16-lane block
 *    (AVX-512); a first convolution (fewer than 16 input channels, one
 *    group) reads x and writes dw in their plain layout. The two run one
 *    after the other: the scratch is the larger;
 *  - slow_conv2d: the im2col columns, (C/g x KH x KW) x (OH x OW) per
 *    sample, none for a 1x1 kernel with stride 1 and no padding.
 * Not modelled: oneDNN's gemm fallback for dilations whose taps mostly fall
 * in the padding (deeplabv3's ASPP), which needs more (the step's
 * assumption says so). */
#include "memory/graph/graph_mem.h"

#include <string.h>

static int64_t up16(int64_t c) { return (c + 15) / 16 * 16; }

static int64_t attr_prod_ne(const vf__gnode *n, const char *name, int64_t v)
{
    const vf__gattr *a = vf__gattr_find(n, name);
    for (uint32_t i = 0; a && a->ints && i < a->n_ints; i++)
        if (a->ints[i] != v)
            return 1;
    return 0;
}

static bool dims4(const vf__vshape *v)
{
    if (!v || v->rank != 4)
        return false;
    for (int i = 0; i < 4; i++)
        if (v->d[i] <= 0)
            return false;
    return true;
}

uint64_t vf__conv_bwd_scratch(const vf__gnode *n, const vf__shapes *s, bool dx)
{
    if (strcmp(n->op, "Conv") || n->n_in < 2 || n->n_out < 1 || n->in[0] == VF_GRAPH_NONE ||
        n->in[1] == VF_GRAPH_NONE || n->out[0] == VF_GRAPH_NONE)
        return 0;
    const vf__vshape *x = &s->v[n->in[0]], *w = &s->v[n->in[1]], *y = &s->v[n->out[0]];
    if (!dims4(x) || !dims4(w) || !dims4(y) || x->elem != VF_ONNX_FLOAT)
        return 0;
    int64_t N = x->d[0], C = x->d[1], H = x->d[2], W = x->d[3], O = y->d[1], OH = y->d[2], OW = y->d[3];
    int64_t KH = w->d[2], KW = w->d[3], g = vf__gattr_int(n, "group", 1);
    bool strided = attr_prod_ne(n, "strides", 1), dilated = attr_prod_ne(n, "dilations", 1);
    bool padded = attr_prod_ne(n, "pads", 0);
    bool k1 = KH == 1 && KW == 1;
    /* every factor is a known positive dimension of a shaped tensor: the
     * products are below the tensors' own byte counts, which fit */
    bool mkldnn = (strided || dilated || N >= 16 || !k1) && (g > 1 || (KH > 3 && KW > 3) || N > 1 || N * C * H * W > 20480);
    if (!mkldnn)
        return k1 && !strided && !padded ? 0 : (uint64_t)N * (uint64_t)(w->d[1] * KH * KW) * (uint64_t)(OH * OW) * 4;
    bool first = C < 16 && g == 1;
    uint64_t dy = (uint64_t)N * (uint64_t)up16(O) * (uint64_t)(OH * OW) * 4;
    uint64_t wb = (uint64_t)up16(O) * (uint64_t)(g > 1 ? 1 : up16(w->d[1])) * (uint64_t)(KH * KW) * 4;
    uint64_t wplain = (uint64_t)O * (uint64_t)w->d[1] * (uint64_t)(KH * KW) * 4;
    uint64_t xb = (uint64_t)N * (uint64_t)up16(C) * (uint64_t)(H * W) * 4;
    uint64_t data = dx ? dy + wb + xb : 0;
    uint64_t weights = (first ? 0 : xb) + dy + (first ? wplain : wb);
    return data > weights ? data : weights;
}
