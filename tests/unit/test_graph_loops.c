/* test_graph_loops.c — a loop over a ModuleList in a module's forward
 * (graph_loops.c) on a small feature pyramid written here with torch.onnx's
 * scoped node names, as torchvision's FeaturePyramidNetwork.forward runs it:
 * the peak derived by hand from Python's rebinding of inner_lateral,
 * inner_top_down and last_inner. */
#include "onnx_testlib.h"

/* A 1x1 convolution (4 -> 4 channels) of stride st, its weight an initializer. */
static void conv(ow_graph *G, const char *name, const char *x, const char *out, int64_t st)
{
    char w[128];
    snprintf(w, sizeof w, "%s.weight", name);
    int64_t wd[4] = {4, 4, 1, 1};
    ow_init(G, w, 1, wd, 4);
    const char *in[] = {x, w, NULL};
    ow_attr at[2] = {{"kernel_shape", 2, {1, 1}, 0}, {"strides", 2, {st, st}, 0}};
    ow_node_named(G, "Conv", name, in, out, at, 2);
}

static void resize(ow_graph *G, const char *name, const char *x, const char *out, int64_t hw)
{
    int64_t sz[4] = {1, 4, hw, hw};
    const char *sizes = ow_const_ints(G, sz, 4);
    char keep[64];
    snprintf(keep, sizeof keep, "%s", sizes);
    const char *in[] = {x, "", "", keep, NULL};
    ow_node_named(G, "Resize", name, in, out, NULL, 0);
}

static void add(ow_graph *G, const char *name, const char *a, const char *b, const char *out)
{
    const char *in[] = {a, b, NULL};
    ow_node_named(G, "Add", name, in, out, NULL, 0);
}

/* body: three maps (4 channels, 8x8, 4x4, 2x2); fpn: inner_blocks.k and
 * layer_blocks.k 1x1 convolutions, the top-down loop over idx 1 and 0, and
 * extra_blocks' max_pool2d(k=1, s=2) of the coarsest result. */
static void mini_fpn(ow_buf *out)
{
    ow_graph G;
    memset(&G, 0, sizeof G);
    int64_t in_d[4] = {1, 4, 8, 8};
    ow_value_info(&G, 11, "input", in_d, 4);
    conv(&G, "/m/body/l0/Conv", "input", "c0", 1);
    conv(&G, "/m/body/l1/Conv", "c0", "c1", 2);
    conv(&G, "/m/body/l2/Conv", "c1", "c2", 2);
    conv(&G, "/m/fpn/inner_blocks.2/inner_blocks.2.0/Conv", "c2", "i2", 1);
    conv(&G, "/m/fpn/layer_blocks.2/layer_blocks.2.0/Conv", "i2", "out2", 1);
    conv(&G, "/m/fpn/inner_blocks.1/inner_blocks.1.0/Conv", "c1", "i1", 1);
    resize(&G, "/m/fpn/Resize", "i2", "r1", 4);
    add(&G, "/m/fpn/Add", "i1", "r1", "a1");
    conv(&G, "/m/fpn/layer_blocks.1/layer_blocks.1.0/Conv", "a1", "out1", 1);
    conv(&G, "/m/fpn/inner_blocks.0/inner_blocks.0.0/Conv", "c0", "i0", 1);
    resize(&G, "/m/fpn/Resize_1", "a1", "r0", 8);
    add(&G, "/m/fpn/Add_1", "i0", "r0", "a0");
    conv(&G, "/m/fpn/layer_blocks.0/layer_blocks.0.0/Conv", "a0", "out0", 1);
    const char *pin[] = {"out2", NULL};
    ow_attr pa[2] = {{"kernel_shape", 2, {1, 1}, 0}, {"strides", 2, {2, 2}, 0}};
    ow_node_named(&G, "MaxPool", "/m/fpn/extra_blocks/MaxPool", pin, "pool", pa, 2);
    int64_t d0[4] = {1, 4, 8, 8}, d1[4] = {1, 4, 4, 4}, d2[4] = {1, 4, 2, 2}, dp[4] = {1, 4, 1, 1};
    ow_value_info(&G, 12, "out0", d0, 4);
    ow_value_info(&G, 12, "out1", d1, 4);
    ow_value_info(&G, 12, "out2", d2, 4);
    ow_value_info(&G, 12, "pool", dp, 4);
    ow_model(&G, out);
}

/* Bytes (fp32, 4 channels): an 8x8 map 1,024, 4x4 256, 2x2 64, the pool 16.
 * At extra_blocks' max_pool2d PyTorch holds the input (1,024), the body's
 * maps (the FPN's argument x, held by its caller: 1,344), the results
 * (1,344) and the pool (16), and the last iteration's inner_lateral (i0),
 * inner_top_down (r0) and last_inner (a0), 3 x 1,024: 6,800 B, the peak.
 * Node by node, with the module-level Adds held as locals to the end and
 * i0, r0 freed at their last use, it was a0 + a1 at the end: 5,008 B; the
 * peak 6,016 B at Add_1. */
static void test_fpn_loop(void **state)
{
    (void)state;
    ow_buf b;
    mini_fpn(&b);
    assert_int_equal(ot_buf_peak(&b, "fpn.onnx", 1), 6800);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fpn_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
