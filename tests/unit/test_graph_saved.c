/* test_graph_saved.c — what autograd saves for torchvision's shifted-window
 * attention (swin_transformer.py shifted_window_attention), on a small graph
 * written here as torch.onnx exports it: q, k, v selected from a permuted
 * qkv, q scaled, q.matmul(k.transpose(-2, -1)), softmax, F.dropout(p=0.0),
 * attn.matmul(v). The figure is PyTorch 1.13's (saved-tensor hooks on the
 * same computation, CPU): the input of the qkv product 384 B, copies of q,
 * k^T and v that matmul's reshape makes for bmm (128 B each), the softmax
 * result once (256 B: dropout with p = 0 returns it), 1,024 B; the
 * estimate's cross-entropy adds a log-softmax the size of the output, 128 B,
 * and its int64 targets, one per output element but axis 1: 16 x 8 = 128 B. */
#include "onnx_testlib.h"

/* A Constant node holding one scalar of type elem from raw little-endian bytes. */
static void scalar(ow_graph *G, const char *out, int elem, const void *raw, size_t n)
{
    ow_buf nd = {0}, a = {0}, t = {0};
    ow_int(&t, 2, elem);
    ow_bytes(&t, 9, raw, n);
    ow_str(&a, 1, "value");
    ow_msg(&a, 5, &t);
    ow_int(&a, 20, 4);
    ow_str(&nd, 2, out);
    ow_str(&nd, 3, out);
    ow_str(&nd, 4, "Constant");
    ow_msg(&nd, 5, &a);
    ow_msg(&G->g, 1, &nd);
}

static void node(ow_graph *G, const char *op, const char *const *in, const char *out, const ow_attr *at, int n_at)
{
    ow_node_named(G, op, out, in, out, at, n_at);
}

/* x [2, 4, 12] (2 windows of 4 tokens, 2 heads of 2 channels) -> qkv ->
 * [2, 4, 3, 2, 2] -> permute(2, 0, 3, 1, 4) -> q, k, v [2, 2, 4, 2]. */
static void window_attention(ow_buf *out)
{
    ow_graph G;
    memset(&G, 0, sizeof G);
    int64_t xd[3] = {2, 4, 12}, wd[2] = {12, 12}, od[4] = {2, 2, 4, 2};
    ow_value_info(&G, 11, "x", xd, 3);
    ow_init(&G, "qkv.weight", 1, wd, 2);
    const char *mm[] = {"x", "qkv.weight", NULL};
    node(&G, "MatMul", mm, "qkv", NULL, 0);
    int64_t shape[5] = {2, 4, 3, 2, 2};
    char sh[64];
    snprintf(sh, sizeof sh, "%s", ow_const_ints(&G, shape, 5));
    const char *rs[] = {"qkv", sh, NULL};
    node(&G, "Reshape", rs, "qkv5", NULL, 0);
    ow_attr perm = {"perm", 5, {2, 0, 3, 1, 4}, 0};
    const char *tr[] = {"qkv5", NULL};
    node(&G, "Transpose", tr, "qkvp", &perm, 1);
    const char *names[3] = {"q", "k", "v"}, *idx[3] = {"i0", "i1", "i2"};
    for (int64_t i = 0; i < 3; i++) {
        scalar(&G, idx[i], 7, &i, 8);
        const char *ga[] = {"qkvp", idx[i], NULL};
        node(&G, "Gather", ga, names[i], NULL, 0);
    }
    float half = 0.5f, zero = 0.0f;
    uint8_t yes = 1;
    scalar(&G, "scale", 1, &half, 4);
    const char *mu[] = {"q", "scale", NULL};
    node(&G, "Mul", mu, "qs", NULL, 0);
    ow_attr kt = {"perm", 4, {0, 1, 3, 2}, 0};
    const char *tk[] = {"k", NULL};
    node(&G, "Transpose", tk, "kt", &kt, 1);
    const char *m1[] = {"qs", "kt", NULL};
    node(&G, "MatMul", m1, "attn", NULL, 0);
    const char *sm[] = {"attn", NULL};
    ow_attr ax = {"axis", 0, {-1}, 1};
    node(&G, "Softmax", sm, "soft", &ax, 1);
    scalar(&G, "ratio", 1, &zero, 4);
    scalar(&G, "training", 9, &yes, 1);
    const char *dr[] = {"soft", "ratio", "training", NULL};
    node(&G, "Dropout", dr, "drop", NULL, 0);
    const char *m2[] = {"drop", "v", NULL};
    node(&G, "MatMul", m2, "y", NULL, 0);
    ow_value_info(&G, 12, "y", od, 4);
    ow_model(&G, out);
}

static void test_window_attention_saved(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *p = tu_path(dir, "swa.onnx");
    ow_buf b;
    window_attention(&b);
    ow_write_file(p, &b);
    free(b.p);
    vf_model *m = ot_open(p);
    vf_estimate e;
    ot_estimate(m, 1, true, VF_OPT_ADAMW, &e);
    assert_int_equal(e.partial_nodes, 0);
    assert_int_equal(e.activations, 1024 + 128 + 128);
    assert_int_equal(e.gradients, 12 * 12 * 4);
    ot_estimate(m, 1, false, VF_OPT_ADAMW, &e);
    /* inference, at the softmax: x (384), qkv (384, under the views q, k,
     * v), its input and its result (256 each); q * scale died at the first
     * product; dropout makes no tensor */
    assert_int_equal(e.activations, 384 + 384 + 256 + 256);
    vf_model_free(m);
    tu_rm_rf(dir);
    free(p);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_attention_saved),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
