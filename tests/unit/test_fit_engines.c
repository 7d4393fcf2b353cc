/* test_fit_engines.c — the advisor over every catalog model and engine: no
 * change it offers as one the engine makes at launch (needs == 0) is a
 * re-quantization that takes another checkpoint (AWQ, GPTQ, another GGUF
 * type), fp8 on a device without it, or LoRA/QLoRA (a script change). A
 * plan launches only those changes (cmd_plan), so this is what keeps plans
 * runnable on the checkpoint they name. */
#include "testutil.h"

#include <strings.h>

/* Why s may not be launched as it stands on the engine rt, or NULL. */
static const char *not_launchable(const vf_suggestion *s, vf_runtime rt, const vf_gpu *gpu)
{
    const char *c = s->change;
    if (strstr(c, "--weights awq") || strstr(c, "--weights gptq"))
        return "AWQ/GPTQ weights need that checkpoint";
    if (rt == VF_RUNTIME_LLAMACPP && strstr(c, "--weights "))
        return "another GGUF type is another file";
    if (rt == VF_RUNTIME_VLLM && strstr(c, "--weights fp8") && !(gpu && gpu->tflops_fp8 > 0))
        return "fp8 on a device without fp8 tensor cores";
    if (strstr(c, "--lora-rank") || strstr(c, "--qlora"))
        return "LoRA/QLoRA change the training script";
    return NULL;
}

static bool giant(const char *id)
{
    vf_model *m = NULL;
    if (vf_model_open(id, &m, NULL) != VF_OK)
        return true;
    vf_model_totals tot;
    vf_model_totals_get(m, &tot);
    vf_model_free(m);
    return tot.params > 100000000000ull;
}

typedef struct tally {
    size_t fits_run, suggestions, launchable, flagged;
} tally;

static void check_model(const char *id, vf_runtime rt, vf_mode mode, const vf_gpu_choice *g, tally *t, vf_fit *f)
{
    vf_model *m = NULL;
    vf_error err;
    if (vf_model_open(id, &m, &err) != VF_OK)
        fail_msg("%s: %s", id, err.msg);
    vf_fit_opts fo = {.gpu_bytes = g->gpu.memory_bytes, .gpus = 1, .gpu = &g->gpu};
    vf_estimate_opts_init(&fo.est);
    fo.est.runtime = rt;
    fo.est.mode = mode;
    fo.est.infer.context = 8192;
    if (rt == VF_RUNTIME_VLLM)
        fo.est.infer.max_model_len = 8192;
    if (mode == VF_MODE_TRAINING)
        fo.est.train.seq_len = 2048;
    if (vf_fit_run(m, &fo, f, &err) == VF_OK) {
        t->fits_run++;
        for (size_t i = 0; i < f->n_suggestions; i++) {
            const vf_suggestion *s = &f->suggestions[i];
            const char *why = not_launchable(s, rt, &g->gpu);
            t->suggestions++;
            if (s->needs) {
                t->flagged++;
                assert_non_null(vf_needs_words(s->needs));
                continue;
            }
            t->launchable++;
            if (why)
                fail_msg("%s (%s, %s): '%s' offered as a launch change: %s", id, vf_runtime_name(rt),
                         g->gpu.name, s->change, why);
        }
    }
    vf_model_free(m);
}

static void test_advisor_every_model_and_engine(void **state)
{
    (void)state;
    vf_gpu_choice small, ampere, big;
    assert_int_equal(vf_gpu_lookup("RTX 4090", &small, NULL), VF_OK);
    assert_int_equal(vf_gpu_lookup("A100-40GB", &ampere, NULL), VF_OK); /* no fp8 tensor cores */
    assert_int_equal(vf_gpu_lookup("H100", &big, NULL), VF_OK);
    vf_fit *f = malloc(sizeof *f);
    tally t = {0};
    size_t n = vf_catalog_count();
    assert_true(n > 50);
    for (size_t i = 0; i < n; i++) {
        vf_catalog_info ci;
        assert_int_equal(vf_catalog_entry(i, &ci), VF_OK);
        check_model(ci.id, VF_RUNTIME_VLLM, VF_MODE_INFERENCE, i % 2 ? &small : &ampere, &t, f);
        check_model(ci.id, VF_RUNTIME_LLAMACPP, VF_MODE_INFERENCE, &small, &t, f);
        check_model(ci.id, VF_RUNTIME_TRANSFORMERS, VF_MODE_INFERENCE, &small, &t, f);
        /* training: a stride over the catalog, without the ~90k-tensor MoE
         * giants (a training estimate walks every tensor: 20-35 s of advice
         * each; the advisor's rules are the same for every model) */
        if (i % 4 == 0 && !giant(ci.id))
            check_model(ci.id, VF_RUNTIME_TRANSFORMERS, VF_MODE_TRAINING, &big, &t, f);
    }
    free(f);
    print_message("fits %zu, suggestions %zu: %zu launchable, %zu needing more\n", t.fits_run, t.suggestions,
                  t.launchable, t.flagged);
    assert_true(t.fits_run > 2 * n);
    assert_true(t.flagged > 0 && t.launchable > 0); /* both kinds occur: the check had something to check */
}

/* The check itself fails on what it must catch. */
static void test_checker_catches(void **state)
{
    (void)state;
    vf_gpu_choice ampere;
    assert_int_equal(vf_gpu_lookup("A100-40GB", &ampere, NULL), VF_OK);
    vf_suggestion s;
    memset(&s, 0, sizeof s);
    snprintf(s.change, sizeof s.change, "--weights awq");
    assert_non_null(not_launchable(&s, VF_RUNTIME_VLLM, &ampere.gpu));
    snprintf(s.change, sizeof s.change, "--weights fp8");
    assert_non_null(not_launchable(&s, VF_RUNTIME_VLLM, &ampere.gpu));
    snprintf(s.change, sizeof s.change, "--kv q8_0 --flash-attn on --weights q4_k on 2 GPUs");
    assert_non_null(not_launchable(&s, VF_RUNTIME_LLAMACPP, &ampere.gpu));
    snprintf(s.change, sizeof s.change, "--grad-checkpoint full --qlora nf4-dq");
    assert_non_null(not_launchable(&s, VF_RUNTIME_TRANSFORMERS, &ampere.gpu));
    snprintf(s.change, sizeof s.change, "--kv fp8");
    assert_null(not_launchable(&s, VF_RUNTIME_VLLM, &ampere.gpu));
    assert_string_not_equal(vf_needs_words(VF_NEEDS_CHECKPOINT), "");
    assert_string_equal(vf_needs_words(0), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checker_catches),
        cmocka_unit_test(test_advisor_every_model_and_engine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
