/* test_onnx_wide.c — the graph memory model against the wide set of
 * tests/reference/torch-cnn (results-wide.json: torchvision networks
 * measured by PyTorch 1.13 on CPU; split.tsv fixed the calibration and
 * verification sets before any was measured). For every network whose graph
 * is stored (the BatchNormalization-keeping .nofold graph where there is
 * one, as the eager module runs BN apart): initializer bytes exact; the
 * inference peak without kernel scratch within 10 %; saved activations
 * within 3 %; gradients and AdamW state exact; the AdamW step's peak within
 * 10 %. The exceptions are named below with the reason and the figure
 * derived by hand from torchvision's source. */
#include "onnx_testlib.h"

#include <string.h>

#define WIDE CNN "/results-wide.json"

/* googlenet and inception_v3 train with auxiliary classifiers the eval
 * export leaves out (torchvision: aux_logits=True with weights=None, run
 * only in training); the estimate prices them from torchvision's
 * InceptionAux and names them: their gradients, AdamW state and steps are
 * checked against the measurement as it stands. */
static bool has_aux(const char *name) { return !strcmp(name, "googlenet") || !strcmp(name, "inception_v3"); }

/* The steps' measured peaks hold oneDNN's scratch inside
 * convolution_backward (CPU reorders allocated and freed inside the op),
 * which the estimate prices (graph_scratch.c, test_graph_scratch.c): every
 * step is checked against the raw peak. deeplabv3_resnet50 (fresh2) at
 * batch 2 holds 106,397,952 B of it; its ASPP's gemm fallback is not
 * priced and the step stays -9.6 % (-11.9 % before the scratch was). */

/* The detection backbone as torchvision builds it for Faster R-CNN
 * (resnet_fpn_backbone(trainable_layers=3)): conv1 and layer1 frozen,
 * FrozenBatchNorm2d throughout (its constants buffers): what the user says
 * of it, a graph cannot (--freeze, --frozen-bn). */
#define BACKBONE "fasterrcnn_resnet50_fpn_backbone"
#define BACKBONE_FROZEN "^m\\.body\\.(conv1|layer1)\\."

static const json_t *wide_model(const json_t *r, const char *name)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(r, "models"), i, m) if (!strcmp(json_string_value(json_object_get(m, "name")),
                                                                        name)) return m;
    return NULL;
}

static const json_t *record(const json_t *r, const char *name, uint64_t b, const char *meas, const char *opt)
{
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(r, "records"), i, x)
    {
        const char *o = json_string_value(json_object_get(x, "optimizer"));
        if (!strcmp(json_string_value(json_object_get(x, "model")), name) && ot_u64(x, "batch") == b &&
            !strcmp(json_string_value(json_object_get(x, "measurement")), meas) && (!opt || (o && !strcmp(o, opt))))
            return x;
    }
    return NULL;
}

/* The stored graph of a network: the .nofold one where there is one; NULL when none is stored. */
static char *wide_graph(const char *dir, const char *name, bool *nofold)
{
    char nf[80], p[256];
    snprintf(nf, sizeof nf, "%s.nofold", name);
    snprintf(p, sizeof p, CNN "/models/%s.onnx", nf);
    *nofold = access(p, R_OK) == 0;
    snprintf(p, sizeof p, CNN "/models/%s.onnx", *nofold ? nf : name);
    if (access(p, R_OK) != 0)
        return NULL;
    return ot_graph(dir, *nofold ? nf : name, *nofold ? nf : name);
}

static void estimate(const char *name, vf_model *m, uint64_t b, bool train, vf_estimate *e)
{
    if (!train || strcmp(name, BACKBONE)) {
        ot_estimate(m, b, train, VF_OPT_ADAMW, e);
        return;
    }
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.infer.batch = b;
    o.mode = VF_MODE_TRAINING;
    o.train.precision = VF_PREC_FP32;
    o.train.optimizer = VF_OPT_ADAMW;
    o.train.optim_impl = VF_OPTIM_FOR_LOOP;
    o.graph_freeze = BACKBONE_FROZEN;
    o.graph_frozen_bn = true;
    vf_error err = {0};
    assert_int_equal(vf_estimate_run(m, &o, e, &err), VF_OK);
}

typedef struct tally {
    size_t nets, inference, saved, states, steps;
} tally;

static void check_inference(const json_t *r, const json_t *row, const char *name, vf_model *m, tally *t)
{
    const json_t *shape = json_object_get(row, "input_shape");
    uint64_t per = 4;
    for (size_t k = 0; k < json_array_size(shape); k++)
        per *= (uint64_t)json_integer_value(json_array_get(shape, k));
    static const uint64_t bs[] = {1, 8, 32, 64};
    for (size_t i = 0; i < 4; i++) {
        const json_t *x = record(r, name, bs[i], "forward_peak_delta_excl_intra_op", NULL);
        if (!x)
            continue;
        vf_estimate e;
        estimate(name, m, bs[i], false, &e);
        assert_int_equal(e.partial_nodes, 0);
        char what[160];
        snprintf(what, sizeof what, "%s inference b=%llu", name, (unsigned long long)bs[i]);
        ot_within(what, e.activations - bs[i] * per, ot_u64(x, "value_bytes"), -0.10, 0.10);
        t->inference++;
    }
}

static void check_states(const json_t *r, const char *name, uint64_t b, const vf_estimate *e)
{
    uint64_t grads = ot_u64(record(r, name, b, "grad_bytes", NULL), "value_bytes");
    uint64_t adamw = ot_u64(record(r, name, b, "optimizer_state", "AdamW(foreach=False)"), "value_bytes");
    /* ViT at batch 1: the class token's gradient is a [1,1,768] view of the
     * [1,1+P,768] cat gradient, which AccumulateGrad steals (reference
     * README, "Gradient storage can exceed the parameter"): P x 768 x 4 B
     * more, P = (224/16)^2 = 196 patches for vit_b_16, (224/32)^2 = 49 for vit_b_32 */
    if (b == 1 && (!strcmp(name, "vit_b_16") || !strcmp(name, "vit_b_32")))
        grads -= (!strcmp(name, "vit_b_16") ? 196 : 49) * 768 * 4;
    /* swin_t, swin_s and maxvit_t: the exporter folded each attention's
     * relative_position_bias_table [169, h] gathered by its
     * relative_position_index into a [1, h, 49, 49] constant, which the graph
     * holds instead (torchvision 0.14 swin_transformer.py and maxvit.py,
     * window 7x7: (2*7-1)^2 = 169 rows): 2401 - 169 = 2,232 elements more
     * per head. swin_t: depths 2, 2, 6, 2 with 3, 6, 12, 24 heads, h = 138
     * over its 12 blocks; swin_s: depths 2, 2, 18, 2, h = 282 over 24
     * (fresh2: off by exactly this before it was applied to it);
     * maxvit_t: block_layers 2, 2, 5, 2 with 64/32 .. 512/32 = 2, 4, 8, 16
     * heads, two attentions (window, grid) per layer: h = 168. One tensor
     * for one. */
    uint64_t heads = !strcmp(name, "swin_t")     ? 138
                     : !strcmp(name, "swin_s")   ? 282
                     : !strcmp(name, "maxvit_t") ? 168
                                                 : 0;
    grads += heads * 2232 * 4;
    adamw += 2 * heads * 2232 * 4;
    assert_int_equal(e->gradients, grads);
    assert_int_equal(e->optimizer, adamw);
}

static void check_training(const json_t *r, const char *name, vf_model *m, tally *t)
{
    static const uint64_t bs[] = {1, 2, 8, 32};
    for (size_t i = 0; i < 4; i++) {
        const json_t *sv = record(r, name, bs[i], "saved_activation_bytes", NULL);
        if (!sv)
            continue;
        vf_estimate e;
        estimate(name, m, bs[i], true, &e);
        char what[160];
        /* the backbone's loss is the mean of its five maps, which keeps
         * nothing; the estimate's cross-entropy keeps a log-softmax the size
         * of the outputs and an int64 target per position: (56^2 + 28^2 +
         * 14^2 + 7^2 + 4^2) x (256 x 4 + 8) B a sample */
        uint64_t loss = !strcmp(name, BACKBONE) ? bs[i] * 4314792 : 0;
        snprintf(what, sizeof what, "%s saved b=%llu", name, (unsigned long long)bs[i]);
        ot_within(what, e.activations - loss, ot_u64(sv, "value_bytes") + ot_u64(sv, "saved_input_bytes"), -0.03,
                  0.03);
        t->saved++;
        check_states(r, name, bs[i], &e);
        t->states++;
        bool named = false;
        for (size_t k = 0; k < e.n_assumptions; k++)
            if (strstr(e.assumptions[k], "auxiliary classifiers")) {
                named = true;
                if (strstr(e.assumptions[k], "unnamed")) /* the heads' inputs found by their modules' names */
                    fail_msg("%s b=%llu: an auxiliary head's input not found", name, (unsigned long long)bs[i]);
            }
        if (named != has_aux(name))
            fail_msg("%s b=%llu: the auxiliary heads %s", name, (unsigned long long)bs[i],
                     named ? "named on a network without them" : "not named");
        const json_t *pk = record(r, name, bs[i], "train_step_peak", "AdamW(foreach=False)");
        snprintf(what, sizeof what, "%s AdamW step b=%llu", name, (unsigned long long)bs[i]);
        ot_within(what, e.per_gpu_bytes, ot_u64(pk, "value_bytes"), -0.10, 0.10);
        t->steps++;
    }
}

/* Every stored record of a set is checked: the counts of tools/cnn_accuracy.py's bars. */
static void check_set(const char *set, tally want)
{
    json_error_t je;
    json_t *r = json_load_file(WIDE, 0, &je);
    assert_non_null(r);
    FILE *f = fopen(CNN "/split.tsv", "r");
    assert_non_null(f);
    char *dir = tu_tmpdir();
    char line[512];
    tally t = {0};
    while (fgets(line, sizeof line, f)) {
        char name[64], fam[64], s[32];
        if (line[0] == '#' || sscanf(line, "%63s %63s %31s", name, fam, s) != 3 || strcmp(s, set))
            continue;
        const json_t *row = wide_model(r, name);
        bool nofold;
        char *p = row ? wide_graph(dir, name, &nofold) : NULL;
        if (!p)
            continue; /* not measured or its graph not stored */
        vf_model *m = ot_open(p);
        vf_model_totals tot;
        vf_model_totals_get(m, &tot);
        const json_t *nf = json_object_get(row, "onnx_nofold_variant");
        assert_int_equal(tot.bytes, ot_u64(nofold ? nf : row, "onnx_initializer_bytes"));
        check_inference(r, row, name, m, &t);
        check_training(r, name, m, &t);
        vf_model_free(m);
        free(p);
        t.nets++;
    }
    fclose(f);
    fprintf(stderr, "%s: %zu networks, %zu inference peaks, %zu saved, %zu gradient/AdamW, %zu step peaks\n", set,
            t.nets, t.inference, t.saved, t.states, t.steps);
    assert_int_equal(t.nets, want.nets);
    assert_int_equal(t.inference, want.inference);
    assert_int_equal(t.saved, want.saved);
    assert_int_equal(t.states, want.states);
    assert_int_equal(t.steps, want.steps);
    tu_rm_rf(dir);
    free(dir);
    json_decref(r);
}

static void test_calibration(void **state)
{
    (void)state;
    check_set("calibration", (tally){17, 51, 49, 49, 49});
}

/* The third set aside before anything was measured: checked, never tuned on. */
static void test_verification(void **state)
{
    (void)state;
    check_set("verification", (tally){9, 27, 27, 27, 27});
}

/* Networks named after the estimator's last change for issue 23 and
 * measured after it (split.tsv, "fresh"): a never-seen check. */
static void test_fresh(void **state)
{
    (void)state;
    check_set("fresh", (tally){4, 8, 8, 8, 8});
}

/* Networks named after the step's peak became the backward walk's largest
 * moment, and measured after it (split.tsv, "fresh2"). */
static void test_fresh2(void **state)
{
    (void)state;
    check_set("fresh2", (tally){5, 10, 10, 10, 10});
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calibration),
        cmocka_unit_test(test_verification),
        cmocka_unit_test(test_fresh),
        cmocka_unit_test(test_fresh2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
