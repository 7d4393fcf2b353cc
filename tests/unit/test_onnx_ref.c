/* test_onnx_ref.c — the graph memory model against PyTorch's own
 * measurements (tests/reference/torch-cnn: torch 1.13, fp32, CPU, the
 * profiler's allocation events; README.md there says how): initializer
 * bytes exact, saved activations within 3 %, the inference peak without
 * kernel scratch and the training step's peak within 10 %. ResNet-50 and
 * the reference's U-Net, whose graphs are not stored, are built by
 * onnx_writer.h and checked against the figures README.md tabulates. */
#include "onnx_testlib.h"
#include "memory/graph/graph_mem.h"

static const char *const nets[] = {"resnet18", "mobilenet_v2", "vgg11_bn"};

static const json_t *model_row(const json_t *r, const char *name)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(r, "models"), i, m) if (!strcmp(json_string_value(json_object_get(m, "name")),
                                                                        name)) return m;
    fail_msg("no model %s in results.json", name);
    return NULL;
}

/* Initializers exact: the eval graph's sum is the export's
 * onnx_initializer_bytes; the graph that keeps BatchNormalization holds
 * every parameter and buffer but num_batches_tracked (the Identity copies
 * the exporter made of equal tensors counted). The weights are never read. */
static void test_initializer_bytes(void **state)
{
    (void)state;
    json_t *r = ot_results();
    char *dir = tu_tmpdir();
    for (size_t k = 0; k < 3; k++) {
        const json_t *row = model_row(r, nets[k]);
        char nf[64];
        snprintf(nf, sizeof nf, "%s.nofold", nets[k]);
        char *p = ot_graph(dir, nets[k], nets[k]), *q = ot_graph(dir, nf, nf);
        vf_model *m = ot_open(p), *n = ot_open(q);
        vf_model_totals t, u;
        vf_model_totals_get(m, &t);
        vf_model_totals_get(n, &u);
        assert_int_equal(t.bytes, ot_u64(row, "onnx_initializer_bytes"));
        vf_graph_info gi, gn;
        assert_true(vf_model_graph_info(m, &gi));
        assert_true(vf_model_graph_info(n, &gn));
        assert_int_equal(gi.alias_bytes, ot_u64(row, "onnx_identity_alias_bytes"));
        const json_t *kinds = json_object_get(row, "buffer_bytes_by_kind");
        assert_int_equal(u.bytes + gn.alias_bytes, ot_u64(row, "param_bytes") + ot_u64(row, "buffer_bytes") -
                                                       ot_u64(kinds, "num_batches_tracked"));
        assert_true(gi.bytes_read < ((uint64_t)128 << 10)); /* the graph, not its weights */
        assert_true(gi.external_bytes > 0 && gi.external_bytes + gi.inline_bytes == t.bytes);
        vf_model_free(m);
        vf_model_free(n);
        free(p);
        free(q);
    }
    tu_rm_rf(dir);
    free(dir);
    json_decref(r);
}

/* Inference: the graph that keeps BatchNormalization against the eager
 * module (fp32_nchw), the folded graph against the module with BN fused
 * (fp32_bn_folded, an fx GraphModule), both without the kernels' scratch
 * (forward_peak_delta_excl_intra_op). The measurement is a delta above the
 * inputs: the estimate's activations include them (the caller holds them).
 * The folded graph keeps torchvision's module scopes, whose arguments eager
 * execution holds; fx frees them at last use: that errs high (mobilenet_v2
 * +13 %), so the folded band is [0, +15 %]. */
static void test_inference_reference(void **state)
{
    (void)state;
    json_t *r = ot_results();
    char *dir = tu_tmpdir();
    size_t i, checked = 0;
    json_t *x;
    json_array_foreach(json_object_get(r, "records"), i, x)
    {
        const char *meas = json_string_value(json_object_get(x, "measurement"));
        const char *var = json_string_value(json_object_get(x, "variant"));
        if (!meas || strcmp(meas, "forward_peak_delta_excl_intra_op") || !strcmp(var, "fp32_channels_last"))
            continue;
        const char *name = json_string_value(json_object_get(x, "model"));
        bool folded = !strcmp(var, "fp32_bn_folded");
        char g[64];
        snprintf(g, sizeof g, folded ? "%s" : "%s.nofold", name);
        char *p = ot_graph(dir, g, g);
        vf_model *m = ot_open(p);
        uint64_t b = ot_u64(x, "batch");
        vf_estimate e;
        ot_estimate(m, b, false, VF_OPT_ADAMW, &e);
        assert_int_equal(e.partial_nodes, 0);
        uint64_t input = b * 3 * 224 * 224 * 4;
        char what[96];
        snprintf(what, sizeof what, "%s %s b=%llu", g, var, (unsigned long long)b);
        ot_within(what, e.activations - input, ot_u64(x, "value_bytes"), folded ? 0 : -0.10, folded ? 0.15 : 0.10);
        vf_model_free(m);
        free(p);
        checked++;
    }
    assert_true(checked >= 20);
    tu_rm_rf(dir);
    free(dir);
    json_decref(r);
}

/* Training (fp32, model.train(), SGD momentum and AdamW, foreach=False):
 * saved activations (the measurement's own plus the inputs it saved apart)
 * within 3 %, the step's absolute peak within 10 %. */
static void test_training_reference(void **state)
{
    (void)state;
    json_t *r = ot_results();
    char *dir = tu_tmpdir();
    size_t i, saved = 0, steps = 0;
    json_t *x;
    json_array_foreach(json_object_get(r, "records"), i, x)
    {
        const char *meas = json_string_value(json_object_get(x, "measurement"));
        bool sv = meas && !strcmp(meas, "saved_activation_bytes"), st = meas && !strcmp(meas, "train_step_peak");
        if (!sv && !st)
            continue;
        const char *name = json_string_value(json_object_get(x, "model"));
        char g[64];
        snprintf(g, sizeof g, "%s.nofold", name);
        char *p = ot_graph(dir, g, g);
        vf_model *m = ot_open(p);
        uint64_t b = ot_u64(x, "batch");
        const char *optn = st ? json_string_value(json_object_get(x, "optimizer")) : "SGD";
        vf_estimate e;
        ot_estimate(m, b, true, !strncmp(optn, "SGD", 3) ? VF_OPT_SGD_MOMENTUM : VF_OPT_ADAMW, &e);
        char what[96];
        snprintf(what, sizeof what, "%s %s b=%llu %s", g, meas, (unsigned long long)b, optn);
        if (sv) {
            ot_within(what, e.activations, ot_u64(x, "value_bytes") + ot_u64(x, "saved_input_bytes"), -0.03, 0.03);
            saved++;
        } else {
            ot_within(what, e.per_gpu_bytes, ot_u64(x, "value_bytes"), -0.10, 0.10);
            steps++;
        }
        vf_model_free(m);
        free(p);
    }
    assert_true(saved >= 9 && steps >= 18);
    tu_rm_rf(dir);
    free(dir);
    json_decref(r);
}

/* ResNet-50 and U-Net, written by onnx_writer.h in torch 1.13's layout
 * (unscoped node names), against README.md's tables: parameters exact,
 * the tensor-level inference peak ("excl"), saved activations and
 * ResNet-50's step peaks. The U-Net is the network the previous model
 * erred low on (its skips and concatenations held by the caller). */
static void test_resnet50_unet(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    ow_buf b;
    char *r50 = tu_path(dir, "resnet50.onnx"), *un = tu_path(dir, "unet.onnx");
    ow_resnet50(&b);
    ow_write_file(r50, &b);
    free(b.p);
    ow_unet(&b);
    ow_write_file(un, &b);
    free(b.p);
    vf_model *m = ot_open(r50), *u = ot_open(un);
    vf_model_totals t;
    vf_model_totals_get(m, &t);
    assert_int_equal(t.params, 25557032); /* README: resnet50 25,557,032 params */
    vf_model_totals_get(u, &t);
    assert_int_equal(t.params, 7762465); /* README: UNet 7,762,465 parameters */
    /* README "resnet50" table, column "inference peak delta excl" */
    static const uint64_t rb[] = {1, 8, 32, 64}, r_inf[] = {10436608, 83492864, 333971456, 667942912};
    /* README: unet measured NCHW 41,943,040 at b=1; 1,342,177,280 excl at b=32 */
    static const uint64_t ub[] = {1, 32}, u_inf[] = {41943040, 1342177280};
    vf_estimate e;
    for (int i = 0; i < 4; i++) {
        ot_estimate(m, rb[i], false, VF_OPT_ADAMW, &e);
        ot_within("resnet50 inference", e.activations - rb[i] * 602112, r_inf[i], -0.10, 0.10);
    }
    for (int i = 0; i < 2; i++) {
        ot_estimate(u, ub[i], false, VF_OPT_ADAMW, &e);
        ot_within("unet inference", e.activations - ub[i] * 262144, u_inf[i], -0.10, 0.10);
    }
    /* README: saved activations (the image and labels kept apart: 602,112 + 8 bytes a sample) */
    static const uint64_t tb[] = {1, 8, 32}, r_saved[] = {85523876, 682703620, 2730177028},
                          r_sgd[] = {372407960, 948817616, 2993140240}, r_adamw[] = {474636732, 1051046388, 3095369012},
                          u_saved[] = {171465728, 1371560960, 5486173184};
    for (int i = 0; i < 3; i++) {
        ot_estimate(m, tb[i], true, VF_OPT_SGD_MOMENTUM, &e);
        ot_within("resnet50 saved", e.activations, r_saved[i] + tb[i] * (602112 + 8), -0.03, 0.03);
        ot_within("resnet50 SGD step", e.per_gpu_bytes, r_sgd[i], -0.10, 0.10);
        ot_estimate(m, tb[i], true, VF_OPT_ADAMW, &e);
        ot_within("resnet50 AdamW step", e.per_gpu_bytes, r_adamw[i], -0.10, 0.10);
        /* the U-Net's image and target (1 x 256 x 256 fp32 each) are saved apart in the measurement */
        ot_estimate(u, tb[i], true, VF_OPT_SGD_MOMENTUM, &e);
        ot_within("unet saved", e.activations - tb[i] * 262144, u_saved[i], -0.03, 0.03);
    }
    vf_model_free(m);
    vf_model_free(u);
    tu_rm_rf(dir);
    free(r50);
    free(un);
    free(dir);
}

/* The batch binds the symbolic axis: activations scale with it, weights do
 * not; --input overrides; an unknown operator makes the estimate partial
 * and named, never a silent 0. */
static void test_binding_and_partial(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *p = ot_graph(dir, "resnet18", "resnet18");
    vf_model *m = ot_open(p);
    vf_estimate a, b;
    ot_estimate(m, 1, false, VF_OPT_ADAMW, &a);
    ot_estimate(m, 8, false, VF_OPT_ADAMW, &b);
    assert_int_equal(a.weights, b.weights);
    assert_int_equal(b.activations, 8 * a.activations); /* every live tensor has the batch as axis 0 */
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.graph_inputs = "input=8x3x224x224";
    vf_estimate c;
    vf_error err;
    assert_int_equal(vf_estimate_run(m, &o, &c, &err), VF_OK);
    assert_int_equal(c.activations, b.activations);
    o.graph_inputs = "input=8x3x200x224";
    assert_int_equal(vf_estimate_run(m, &o, &c, &err), VF_EINVAL);
    assert_null(strchr(err.msg, '\n'));
    vf_model_free(m);
    /* a graph with an operator no rule knows */
    ow_net N;
    ow_begin(&N, 3, 8, 8);
    ow_unary(&N, "Relu");
    ow_unary(&N, "NoSuchOp");
    ow_unary(&N, "Relu");
    int64_t od[4] = {-1, 3, 8, 8};
    ow_buf buf;
    ow_end(&N, od, 4, &buf);
    char *q = tu_path(dir, "unknown.onnx");
    ow_write_file(q, &buf);
    free(buf.p);
    m = ot_open(q);
    ot_estimate(m, 2, false, VF_OPT_ADAMW, &c);
    assert_true(c.partial_nodes >= 1);
    bool named = false;
    for (size_t i = 0; i < c.n_assumptions; i++)
        named = named || strstr(c.assumptions[i], "NoSuchOp");
    assert_true(named);
    vf_model_free(m);
    tu_rm_rf(dir);
    free(p);
    free(q);
    free(dir);
}

/* The inference activations at batch 2 of the graph N ends in (output dims
 * od), asserted fully shaped (nothing partial). */
static uint64_t batch2_peak(ow_net *N, const int64_t *od, int rank, const char *file)
{
    ow_buf buf;
    ow_end(N, od, rank, &buf);
    return ot_buf_peak(&buf, file, 2);
}

/* The shape arithmetic a ViT export writes (Shape -> Gather -> Unsqueeze ->
 * Concat -> Reshape, with no value_info) is carried through: nothing is
 * partial and the peak is the one derived by hand below. */
static void test_shape_chain(void **state)
{
    (void)state;
    ow_net N;
    ow_begin(&N, 3, 32, 32);
    ow_conv(&N, "patch", 8, 16, 16, 0, 1, 0); /* [b, 8, 2, 2] */
    char conv[64], shp[64], b0[64], un[64], cat[64];
    snprintf(conv, sizeof conv, "%s", N.cur);
    const char *in1[] = {conv, NULL};
    snprintf(shp, sizeof shp, "%s", ow_node(&N.G, "Shape", in1, NULL, 0));
    int64_t zero = 0, tail[2] = {8, -1};
    char k0[64], kt[64];
    snprintf(k0, sizeof k0, "%s", ow_const_ints(&N.G, &zero, 1));
    const char *in2[] = {shp, k0, NULL};
    ow_attr ax0[] = {{"axis", 0, {0}, 1}};
    snprintf(b0, sizeof b0, "%s", ow_node(&N.G, "Gather", in2, ax0, 1)); /* [1]: the batch */
    snprintf(kt, sizeof kt, "%s", ow_const_ints(&N.G, tail, 2));
    const char *in3[] = {b0, kt, NULL};
    snprintf(cat, sizeof cat, "%s", ow_node(&N.G, "Concat", in3, ax0, 1)); /* [b, 8, -1] */
    (void)un;
    const char *in4[] = {conv, cat, NULL};
    snprintf(N.cur, sizeof N.cur, "%s", ow_node(&N.G, "Reshape", in4, NULL, 0)); /* [b, 8, 4] */
    const char *in5[] = {N.cur, NULL};
    ow_attr perm[] = {{"perm", 3, {0, 2, 1}, 0}};
    snprintf(N.cur, sizeof N.cur, "%s", ow_node(&N.G, "Transpose", in5, perm, 1)); /* [b, 4, 8] */
    int64_t wd[2] = {8, 8};
    ow_init(&N.G, "w", 1, wd, 2);
    ow_binary(&N, "MatMul", "w", NULL, 0);
    ow_unary(&N, "Softmax");
    int64_t od[3] = {-1, 4, 8};
    /* batch 2: the input 2x3x32x32 fp32 = 24,576 B is held; the conv output
     * (128 B) lives in the Reshape view until the Transpose (256 B) is made;
     * then MatMul (256 B) beside the Transpose, Softmax (256 B) beside the
     * MatMul: peak 24,576 + 256 + 256 = 25,088 (the conv+view+transpose moment
     * is 24,576 + 128 + 256 = 24,960). */
    assert_int_equal(batch2_peak(&N, od, 3, "chain.onnx"), 25088);
}

/* A Pad whose pads a shape subgraph computes, as torch 1.13 exports swin's
 * F.pad(x, (0, pad_w, 0, pad_h)) with pad = (7 - W % 7) % 7: Shape ->
 * Gather -> Mod -> Sub -> Mod, the pads Concat-ed with zeros, Reshape(-1, 2),
 * reversed by a Slice of step -1, Transpose, Reshape(-1), Cast. The
 * contents are folded to constants as onnx's data propagation does, so the
 * Pad's output has a shape: x [2, 4, 10, 10] padded to [2, 4, 14, 14]. */
static const char *k1(ow_graph *G, int64_t v) { return ow_const_ints(G, &v, 1); }

static void copy_name(char *dst, const char *src) { snprintf(dst, 64, "%s", src); }

static void test_computed_pad(void **state)
{
    (void)state;
    ow_net N;
    ow_begin(&N, 4, 10, 10);
    char x[64], shp[64], side[2][64], t[64], a[64], b[64], kk[64], pads[64];
    copy_name(x, N.cur);
    const char *in1[] = {x, NULL};
    copy_name(shp, ow_node(&N.G, "Shape", in1, NULL, 0));
    ow_attr ax0[] = {{"axis", 0, {0}, 1}};
    for (int i = 0; i < 2; i++) { /* (7 - dim % 7) % 7 for W (axis 3) and H (axis 2) */
        copy_name(kk, k1(&N.G, 3 - i));
        const char *g[] = {shp, kk, NULL};
        copy_name(t, ow_node(&N.G, "Gather", g, ax0, 1));
        copy_name(kk, k1(&N.G, 7));
        const char *m1[] = {t, kk, NULL};
        copy_name(a, ow_node(&N.G, "Mod", m1, NULL, 0));
        const char *s1[] = {kk, a, NULL};
        copy_name(b, ow_node(&N.G, "Sub", s1, NULL, 0));
        const char *m2[] = {b, kk, NULL};
        copy_name(side[i], ow_node(&N.G, "Mod", m2, NULL, 0));
    }
    char z0[64], z1[64], z4[64];
    copy_name(z0, k1(&N.G, 0));
    copy_name(z1, k1(&N.G, 0));
    int64_t zeros[4] = {0, 0, 0, 0};
    copy_name(z4, ow_const_ints(&N.G, zeros, 4));
    const char *c1[] = {z0, side[0], z1, side[1], z4, NULL}; /* torch order (w_l, w_r, h_t, h_b), N and C: 0 */
    copy_name(pads, ow_node(&N.G, "Concat", c1, ax0, 1));
    int64_t pairs[2] = {-1, 2};
    copy_name(kk, ow_const_ints(&N.G, pairs, 2));
    const char *r1[] = {pads, kk, NULL};
    copy_name(t, ow_node(&N.G, "Reshape", r1, NULL, 0)); /* [4, 2] */
    char st[64], en[64], ax[64], sp[64];
    copy_name(st, k1(&N.G, -1));
    copy_name(en, k1(&N.G, -INT64_MAX));
    copy_name(ax, k1(&N.G, 0));
    copy_name(sp, k1(&N.G, -1));
    const char *sl[] = {t, st, en, ax, sp, NULL};
    copy_name(a, ow_node(&N.G, "Slice", sl, NULL, 0)); /* rows reversed: dims in ONNX order */
    const char *tr[] = {a, NULL};
    ow_attr perm[] = {{"perm", 2, {1, 0}, 0}};
    copy_name(b, ow_node(&N.G, "Transpose", tr, perm, 1)); /* [2, 4]: begins, then ends */
    copy_name(kk, k1(&N.G, -1));
    const char *r2[] = {b, kk, NULL};
    copy_name(t, ow_node(&N.G, "Reshape", r2, NULL, 0));
    const char *ca[] = {t, NULL};
    ow_attr to[] = {{"to", 0, {7}, 1}};
    copy_name(a, ow_node(&N.G, "Cast", ca, to, 1));
    const char *pd[] = {x, a, NULL};
    copy_name(N.cur, ow_node(&N.G, "Pad", pd, NULL, 0));
    int64_t od[4] = {-1, 4, 14, 14};
    /* the input 2x4x10x10 fp32 (3,200 B) beside the padded 2x4x14x14 (6,272 B) */
    assert_int_equal(batch2_peak(&N, od, 4, "pad.onnx"), 3200 + 6272);
}

static void test_rule_tables_sorted(void **state)
{
    (void)state;
    assert_true(vf__infer_rules_sorted());
    assert_true(vf__train_rules_sorted());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_initializer_bytes),   cmocka_unit_test(test_inference_reference),
        cmocka_unit_test(test_training_reference),  cmocka_unit_test(test_resnet50_unet),
        cmocka_unit_test(test_binding_and_partial), cmocka_unit_test(test_rule_tables_sorted),
        cmocka_unit_test(test_shape_chain),         cmocka_unit_test(test_computed_pad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
