/* onnx_writer.h — a small ONNX writer for the tests: protobuf wire format by
 * hand (onnx/onnx.proto field numbers), graphs built node by node, and the
 * two networks the reference measured but whose graphs are not stored here:
 * torchvision's ResNet-50 and the reference's U-Net (tests/reference/
 * torch-cnn/README.md gives its code). Initializers carry dims and type
 * only: their bytes are what the reader counts, never reads. */
#ifndef VF_ONNX_WRITER_H
#define VF_ONNX_WRITER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ow_buf {
    uint8_t *p;
    size_t n, cap;
} ow_buf;

static inline void ow_put(ow_buf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 256;
        b->p = realloc(b->p, b->cap);
        if (!b->p)
            abort();
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static inline void ow_varint(ow_buf *b, uint64_t v)
{
    uint8_t t[10];
    int n = 0;
    do {
        t[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            t[n] |= 0x80;
        n++;
    } while (v);
    ow_put(b, t, (size_t)n);
}

static inline void ow_tag(ow_buf *b, uint32_t field, uint32_t wt) { ow_varint(b, (uint64_t)field << 3 | wt); }
static inline void ow_int(ow_buf *b, uint32_t field, int64_t v)
{
    ow_tag(b, field, 0);
    ow_varint(b, (uint64_t)v);
}
static inline void ow_bytes(ow_buf *b, uint32_t field, const void *d, size_t n)
{
    ow_tag(b, field, 2);
    ow_varint(b, n);
    ow_put(b, d, n);
}
static inline void ow_str(ow_buf *b, uint32_t field, const char *s) { ow_bytes(b, field, s, strlen(s)); }
/* Appends inner as a length-delimited field and frees it. */
static inline void ow_msg(ow_buf *b, uint32_t field, ow_buf *inner)
{
    ow_bytes(b, field, inner->p ? inner->p : (const uint8_t *)"", inner->n);
    free(inner->p);
    memset(inner, 0, sizeof *inner);
}

/* ---- graphs ---- */

typedef struct ow_graph {
    ow_buf g;   /* GraphProto fields */
    int uid;
    char last[64];
} ow_graph;

/* A TensorProto: name, dims, type; data only when ival (int64s) is given. */
static inline void ow_tensor(ow_buf *t, const char *name, int elem, const int64_t *dims, int rank,
                             const int64_t *ival, int n)
{
    for (int i = 0; i < rank; i++)
        ow_int(t, 1, dims[i]);
    ow_int(t, 2, elem);
    if (name)
        ow_str(t, 8, name);
    if (ival) {
        ow_buf raw = {0};
        for (int i = 0; i < n; i++)
            ow_put(&raw, &ival[i], 8); /* little-endian hosts */
        ow_bytes(t, 9, raw.p, raw.n);
        free(raw.p);
    }
}

static inline void ow_init(ow_graph *G, const char *name, int elem, const int64_t *dims, int rank)
{
    ow_buf t = {0};
    ow_tensor(&t, name, elem, dims, rank, NULL, 0);
    ow_msg(&G->g, 5, &t);
}

/* ValueInfoProto of a float tensor; a dim < 0 is the symbol "batch". */
static inline void ow_value_info(ow_graph *G, uint32_t field, const char *name, const int64_t *dims, int rank)
{
    ow_buf shape = {0}, tt = {0}, ty = {0}, vi = {0};
    for (int i = 0; i < rank; i++) {
        ow_buf d = {0};
        if (dims[i] < 0)
            ow_str(&d, 2, "batch");
        else
            ow_int(&d, 1, dims[i]);
        ow_msg(&shape, 1, &d);
    }
    ow_int(&tt, 1, 1);
    ow_msg(&tt, 2, &shape);
    ow_msg(&ty, 1, &tt);
    ow_str(&vi, 1, name);
    ow_msg(&vi, 2, &ty);
    ow_msg(&G->g, field, &vi);
}

typedef struct ow_attr {
    const char *name;
    int n;            /* ints; 0 with is_int: one int */
    int64_t v[8];
    int is_int;
} ow_attr;

/* A node named name (torch.onnx's scope path, "/m/fpn/Add") with one output out. */
static inline void ow_node_named(ow_graph *G, const char *op, const char *name, const char *const *in, const char *out,
                                 const ow_attr *at, int n_at)
{
    ow_buf nd = {0};
    for (int i = 0; in[i]; i++)
        ow_str(&nd, 1, in[i]);
    ow_str(&nd, 2, out);
    ow_str(&nd, 3, name);
    ow_str(&nd, 4, op);
    for (int i = 0; i < n_at; i++) {
        ow_buf a = {0};
        ow_str(&a, 1, at[i].name);
        if (at[i].is_int) {
            ow_int(&a, 3, at[i].v[0]);
            ow_int(&a, 20, 2);
        } else {
            for (int k = 0; k < at[i].n; k++)
                ow_int(&a, 8, at[i].v[k]);
            ow_int(&a, 20, 7);
        }
        ow_msg(&nd, 5, &a);
    }
    ow_msg(&G->g, 1, &nd);
}

/* A node of op with inputs in[] (NULL-terminated) and one output named
 * after the op and a counter (torch 1.13's "Conv_12" style); returns it. */
static inline const char *ow_node(ow_graph *G, const char *op, const char *const *in, const ow_attr *at, int n_at)
{
    snprintf(G->last, sizeof G->last, "%s_%d", op, G->uid++);
    ow_node_named(G, op, G->last, in, G->last, at, n_at);
    return G->last;
}

/* A Constant node holding int64 values (shape arithmetic); returns its output. */
static inline const char *ow_const_ints(ow_graph *G, const int64_t *v, int n)
{
    ow_buf nd = {0}, a = {0}, t = {0};
    int64_t d[1] = {n};
    ow_tensor(&t, NULL, 7, d, 1, v, n);
    ow_str(&a, 1, "value");
    ow_msg(&a, 5, &t);
    ow_int(&a, 20, 4);
    snprintf(G->last, sizeof G->last, "Constant_%d", G->uid++);
    ow_str(&nd, 2, G->last);
    ow_str(&nd, 3, G->last);
    ow_str(&nd, 4, "Constant");
    ow_msg(&nd, 5, &a);
    ow_msg(&G->g, 1, &nd);
    return G->last;
}

/* The model around the graph: ir_version 7, opset 14, as the reference export. */
static inline void ow_model(ow_graph *G, ow_buf *out)
{
    ow_buf op = {0};
    memset(out, 0, sizeof *out);
    ow_int(out, 1, 7);
    ow_str(out, 2, "vramfit-tests");
    ow_str(&G->g, 2, "g");
    ow_msg(out, 7, &G->g);
    ow_int(&op, 2, 14);
    ow_msg(out, 8, &op);
}

/* ---- layers, named as torch names parameters ---- */

typedef struct ow_net {
    ow_graph G;
    char cur[64];
    int64_t c;        /* channels of cur */
} ow_net;

static inline void ow_param(ow_net *N, const char *prefix, const char *what, const int64_t *dims, int rank,
                            char *name, size_t cap)
{
    snprintf(name, cap, "%s.%s", prefix, what);
    ow_init(&N->G, name, 1, dims, rank);
}

static inline void ow_conv(ow_net *N, const char *pre, int64_t cout, int64_t k, int64_t s, int64_t p, int bias,
                           int transpose)
{
    char w[96], b[96];
    int64_t wd[4] = {transpose ? N->c : cout, transpose ? cout : N->c, k, k}, bd[1] = {cout};
    ow_param(N, pre, "weight", wd, 4, w, sizeof w);
    if (bias)
        ow_param(N, pre, "bias", bd, 1, b, sizeof b);
    const char *in[] = {N->cur, w, bias ? b : NULL, NULL};
    ow_attr at[] = {{"kernel_shape", 2, {k, k}, 0}, {"strides", 2, {s, s}, 0}, {"pads", 4, {p, p, p, p}, 0}};
    snprintf(N->cur, sizeof N->cur, "%s", ow_node(&N->G, transpose ? "ConvTranspose" : "Conv", in, at, 3));
    N->c = cout;
}

static inline void ow_bn(ow_net *N, const char *pre)
{
    char n[4][96];
    const char *what[] = {"weight", "bias", "running_mean", "running_var"};
    int64_t d[1] = {N->c};
    for (int i = 0; i < 4; i++)
        ow_param(N, pre, what[i], d, 1, n[i], sizeof n[i]);
    const char *in[] = {N->cur, n[0], n[1], n[2], n[3], NULL};
    snprintf(N->cur, sizeof N->cur, "%s", ow_node(&N->G, "BatchNormalization", in, NULL, 0));
}

static inline void ow_unary(ow_net *N, const char *op)
{
    const char *in[] = {N->cur, NULL};
    snprintf(N->cur, sizeof N->cur, "%s", ow_node(&N->G, op, in, NULL, 0));
}

static inline void ow_binary(ow_net *N, const char *op, const char *other, const ow_attr *at, int n_at)
{
    const char *in[] = {N->cur, other, NULL};
    snprintf(N->cur, sizeof N->cur, "%s", ow_node(&N->G, op, in, at, n_at));
}

static inline void ow_maxpool(ow_net *N, int64_t k, int64_t s, int64_t p)
{
    const char *in[] = {N->cur, NULL};
    ow_attr at[] = {{"kernel_shape", 2, {k, k}, 0}, {"strides", 2, {s, s}, 0}, {"pads", 4, {p, p, p, p}, 0}};
    snprintf(N->cur, sizeof N->cur, "%s", ow_node(&N->G, "MaxPool", in, at, 3));
}

/* torchvision's Bottleneck (v1.5: the stride on the 3x3). */
static inline void ow_bottleneck(ow_net *N, const char *pre, int64_t width, int64_t stride, int down)
{
    char x[64], p[96], ident[64];
    snprintf(x, sizeof x, "%s", N->cur);
    int64_t cin = N->c;
    snprintf(p, sizeof p, "%s.conv1", pre), ow_conv(N, p, width, 1, 1, 0, 0, 0);
    snprintf(p, sizeof p, "%s.bn1", pre), ow_bn(N, p), ow_unary(N, "Relu");
    snprintf(p, sizeof p, "%s.conv2", pre), ow_conv(N, p, width, 3, stride, 1, 0, 0);
    snprintf(p, sizeof p, "%s.bn2", pre), ow_bn(N, p), ow_unary(N, "Relu");
    snprintf(p, sizeof p, "%s.conv3", pre), ow_conv(N, p, width * 4, 1, 1, 0, 0, 0);
    snprintf(p, sizeof p, "%s.bn3", pre), ow_bn(N, p);
    char main_out[64];
    snprintf(main_out, sizeof main_out, "%s", N->cur);
    snprintf(ident, sizeof ident, "%s", x);
    if (down) {
        snprintf(N->cur, sizeof N->cur, "%s", x);
        N->c = cin;
        snprintf(p, sizeof p, "%s.downsample.0", pre), ow_conv(N, p, width * 4, 1, stride, 0, 0, 0);
        snprintf(p, sizeof p, "%s.downsample.1", pre), ow_bn(N, p);
        snprintf(ident, sizeof ident, "%s", N->cur);
    }
    snprintf(N->cur, sizeof N->cur, "%s", main_out);
    ow_binary(N, "Add", ident, NULL, 0);
    ow_unary(N, "Relu");
    N->c = width * 4;
}

static inline void ow_begin(ow_net *N, int64_t c, int64_t h, int64_t w)
{
    memset(N, 0, sizeof *N);
    int64_t d[4] = {-1, c, h, w};
    ow_value_info(&N->G, 11, "input", d, 4);
    snprintf(N->cur, sizeof N->cur, "input");
    N->c = c;
}

static inline void ow_end(ow_net *N, const int64_t *dims, int rank, ow_buf *out)
{
    const char *in[] = {N->cur, NULL};
    ow_node(&N->G, "Identity", in, NULL, 0);
    /* the graph output is named "output", as torch.onnx.export's output_names */
    ow_buf nd = {0};
    ow_str(&nd, 1, N->G.last);
    ow_str(&nd, 2, "output");
    ow_str(&nd, 4, "Identity");
    ow_msg(&N->G.g, 1, &nd);
    ow_value_info(&N->G, 12, "output", dims, rank);
    ow_model(&N->G, out);
}

/* torchvision resnet50: 25,557,032 parameters. */
static inline void ow_resnet50(ow_buf *out)
{
    ow_net N;
    ow_begin(&N, 3, 224, 224);
    ow_conv(&N, "conv1", 64, 7, 2, 3, 0, 0);
    ow_bn(&N, "bn1");
    ow_unary(&N, "Relu");
    ow_maxpool(&N, 3, 2, 1);
    const int blocks[4] = {3, 4, 6, 3};
    for (int l = 0; l < 4; l++)
        for (int b = 0; b < blocks[l]; b++) {
            char pre[32];
            snprintf(pre, sizeof pre, "layer%d.%d", l + 1, b);
            ow_bottleneck(&N, pre, 64 << l, b == 0 && l > 0 ? 2 : 1, b == 0);
        }
    ow_unary(&N, "GlobalAveragePool");
    ow_unary(&N, "Flatten");
    char w[32] = "fc.weight", bb[32] = "fc.bias";
    int64_t wd[2] = {1000, 2048}, bd[1] = {1000};
    ow_init(&N.G, w, 1, wd, 2);
    ow_init(&N.G, bb, 1, bd, 1);
    const char *in[] = {N.cur, w, bb, NULL};
    ow_attr at[] = {{"transB", 0, {1}, 1}};
    snprintf(N.cur, sizeof N.cur, "%s", ow_node(&N.G, "Gemm", in, at, 1));
    int64_t od[2] = {-1, 1000};
    ow_end(&N, od, 2, out);
}

static inline void ow_double_conv(ow_net *N, const char *pre, int64_t cout)
{
    char p[96];
    snprintf(p, sizeof p, "%s.0", pre), ow_conv(N, p, cout, 3, 1, 1, 0, 0);
    snprintf(p, sizeof p, "%s.1", pre), ow_bn(N, p), ow_unary(N, "Relu");
    snprintf(p, sizeof p, "%s.3", pre), ow_conv(N, p, cout, 3, 1, 1, 0, 0);
    snprintf(p, sizeof p, "%s.4", pre), ow_bn(N, p), ow_unary(N, "Relu");
}

/* The reference's UNet(in 1, out 1, base 32, depth 4) on 256x256: 7,762,465 parameters. */
static inline void ow_unet(ow_buf *out)
{
    ow_net N;
    ow_begin(&N, 1, 256, 256);
    char skips[4][64], pre[32];
    int64_t skc[4];
    ow_double_conv(&N, "inc", 32);
    for (int i = 0; i < 4; i++) {
        snprintf(skips[i], sizeof skips[i], "%s", N.cur);
        skc[i] = N.c;
        ow_maxpool(&N, 2, 2, 0);
        snprintf(pre, sizeof pre, "downs.%d", i);
        ow_double_conv(&N, pre, 32 << (i + 1));
    }
    for (int i = 0; i < 4; i++) {
        int lvl = 3 - i;
        snprintf(pre, sizeof pre, "ups.%d", i);
        ow_conv(&N, pre, 32 << lvl, 2, 2, 0, 1, 1);
        const char *in[] = {skips[lvl], N.cur, NULL};
        ow_attr at[] = {{"axis", 0, {1}, 1}};
        snprintf(N.cur, sizeof N.cur, "%s", ow_node(&N.G, "Concat", in, at, 1));
        N.c = skc[lvl] + (32 << lvl);
        snprintf(pre, sizeof pre, "decs.%d", i);
        ow_double_conv(&N, pre, 32 << lvl);
    }
    ow_conv(&N, "outc", 1, 1, 1, 0, 1, 0);
    int64_t od[4] = {-1, 1, 256, 256};
    ow_end(&N, od, 4, out);
}

static inline void ow_write_file(const char *path, const ow_buf *b)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b->p, 1, b->n, f) != b->n || fclose(f))
        abort();
}

#endif
