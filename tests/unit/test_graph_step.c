/* test_graph_step.c — the training step's peak of a graph as PyTorch's
 * autograd reaches it, on two small networks written here as torch.onnx
 * exports them and measured by tests/reference/torch-cnn/step_probe.py
 * (torch 1.13, CPU, oracle.py's method: baseline + the running-sum peak of a
 * steady-state step; step_probe.json):
 * - seg: the peak is the loss's backward, where F.cross_entropy's
 *   nll_loss_backward has made the log-softmax's gradient and
 *   _log_softmax_backward_data the logits' while the saved log-softmax is
 *   alive: three output-sized tensors beside the saved ones;
 * - mlp: backward frees the saved tensors of the sigmoid/tanh chain before
 *   the first layer's 4 MiB weight gradient is made, so the peak is far
 *   below gradients + saved tensors (that sum errs +23 %).
 * Neither peak is inside a convolution_backward (its scratch, graph_scratch.c,
 * is below them); the estimate counts no 4-byte scalars (the loss,
 * nll_loss's total_weight): within 0.01 % of the measurement. */
#include "onnx_testlib.h"

static const json_t *probe(const json_t *r, const char *name)
{
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(r, "networks"), i, x)
    {
        if (!strcmp(json_string_value(json_object_get(x, "network")), name))
            return x;
    }
    fail_msg("step_probe.json: no network %s", name);
    return NULL;
}

/* Conv2d(3, 8, 3, padding=1), ReLU(inplace=True), Conv2d(8, 21, 1) on [b, 3, 64, 64]. */
static void seg_graph(ow_buf *out)
{
    ow_net N;
    ow_begin(&N, 3, 64, 64);
    ow_conv(&N, "0", 8, 3, 1, 1, 1, 0);
    ow_unary(&N, "Relu");
    ow_conv(&N, "2", 21, 1, 1, 0, 1, 0);
    int64_t od[4] = {-1, 21, 64, 64};
    ow_end(&N, od, 4, out);
}

/* nn.Linear on a 2-D input as torch.onnx exports it: Gemm(x, W, b, transB=1). */
static void linear(ow_net *N, const char *pre, int64_t in, int64_t out)
{
    char w[96], b[96];
    int64_t wd[2] = {out, in}, bd[1] = {out};
    ow_param(N, pre, "weight", wd, 2, w, sizeof w);
    ow_param(N, pre, "bias", bd, 1, b, sizeof b);
    const char *x[] = {N->cur, w, b, NULL};
    ow_attr at = {"transB", 0, {1}, 1};
    snprintf(N->cur, sizeof N->cur, "%s", ow_node(&N->G, "Gemm", x, &at, 1));
}

/* Linear(256, 4096), ReLU(inplace=True), (Sigmoid, Tanh) x 3, Linear(4096, 10) on [b, 256]. */
static void mlp_graph(ow_buf *out)
{
    ow_net N;
    memset(&N, 0, sizeof N);
    int64_t id[2] = {-1, 256}, od[2] = {-1, 10};
    ow_value_info(&N.G, 11, "input", id, 2);
    snprintf(N.cur, sizeof N.cur, "input");
    linear(&N, "0", 256, 4096);
    ow_unary(&N, "Relu");
    for (int i = 0; i < 3; i++) {
        ow_unary(&N, "Sigmoid");
        ow_unary(&N, "Tanh");
    }
    linear(&N, "8", 4096, 10);
    ow_end(&N, od, 2, out);
}

static void check(const char *name, void (*graph)(ow_buf *), uint64_t batch, vf_optimizer opt)
{
    json_error_t je;
    json_t *r = json_load_file(CNN "/step_probe.json", 0, &je);
    assert_non_null(r);
    const json_t *x = probe(r, name);
    char *dir = tu_tmpdir(), *p = tu_path(dir, "net.onnx");
    ow_buf b;
    graph(&b);
    ow_write_file(p, &b);
    free(b.p);
    vf_model *m = ot_open(p);
    vf_estimate e;
    ot_estimate(m, batch, true, opt, &e);
    assert_int_equal(e.partial_nodes, 0);
    char what[64];
    snprintf(what, sizeof what, "%s saved", name);
    /* both with the image and the int64 targets (nll_loss saves them) */
    ot_within(what, e.activations, ot_u64(x, "saved_activation_bytes") + ot_u64(x, "saved_input_bytes"), -0.03, 0.03);
    snprintf(what, sizeof what, "%s step", name);
    ot_within(what, e.per_gpu_bytes, ot_u64(x, "train_step_peak"), -0.0001, 0.0001);
    assert_string_equal(e.peak_phase, "backward");
    vf_model_free(m);
    tu_rm_rf(dir);
    free(p);
    free(dir);
    json_decref(r);
}

static void test_loss_backward(void **state)
{
    (void)state;
    check("seg", seg_graph, 2, VF_OPT_ADAMW);
}

static void test_saved_freed_through_backward(void **state)
{
    (void)state;
    check("mlp", mlp_graph, 32, VF_OPT_SGD_MOMENTUM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loss_backward),
        cmocka_unit_test(test_saved_freed_through_backward),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
