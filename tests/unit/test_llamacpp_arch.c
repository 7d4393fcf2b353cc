/* test_llamacpp_arch.c — llama.cpp runs only the architectures it
 * implements (src/llama-arch.cpp LLM_ARCH_NAMES at ggml-org/llama.cpp
 * 00395eb): Zamba2 and Mllama (Llama-3.2-Vision) have no entry there, so
 * --runtime llamacpp refuses them with exit 3's status; every other catalog
 * model and every other models2026 config still estimates. The refused list
 * is written here from that source, not from the code under test. */
#include "testutil.h"
#include "memory/infer.h"

#include <dirent.h>

#define M2026 "tests/reference/models2026/"

/* models2026 files whose family llama.cpp has no architecture for */
static const char *const refused[] = {
    "Zyphra__Zamba2-2.7B.json",                  /* zamba2: no LLM_ARCH_ZAMBA2 */
    "meta-llama__Llama-3.2-11B-Vision-Instruct.json", /* mllama: no cross-attention architecture */
    "meta-llama__Llama-3.2-90B-Vision-Instruct.json",
};

static bool is_refused(const char *name)
{
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (strcmp(refused[i], name) == 0)
            return true;
    return false;
}

static vf_status run_llamacpp(const char *src, vf_error *err)
{
    vf_model *m = NULL;
    if (vf_model_open(src, &m, err) != VF_OK)
        fail_msg("%s: %s", src, err->msg);
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_LLAMACPP;
    o.infer.context = 4096;
    vf_estimate *e = calloc(1, sizeof *e);
    assert_non_null(e);
    vf_status st = vf_estimate_run(m, &o, e, err);
    free(e);
    vf_model_free(m);
    return st;
}

static void test_models2026_on_llamacpp(void **state)
{
    (void)state;
    DIR *d = opendir(M2026);
    assert_non_null(d);
    size_t ran = 0, refusals = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0)
            continue;
        char p[512];
        snprintf(p, sizeof p, M2026 "%s", de->d_name);
        vf_error err = {0};
        vf_status st = run_llamacpp(p, &err);
        if (is_refused(de->d_name)) {
            if (st != VF_EUNSUPPORTED)
                fail_msg("%s: estimated on llama.cpp (status %d), which has no such architecture", de->d_name, st);
            assert_non_null(strstr(err.msg, "llama.cpp does not implement"));
            assert_null(strchr(err.msg, '\n'));
            refusals++;
        } else if (st != VF_OK) {
            fail_msg("%s: %s", de->d_name, err.msg);
        }
        ran++;
    }
    closedir(d);
    assert_true(ran >= 60);
    assert_int_equal(refusals, sizeof refused / sizeof refused[0]);
}

static void test_catalog_on_llamacpp(void **state)
{
    (void)state;
    size_t n = vf_catalog_count(), refusals = 0;
    assert_true(n > 50);
    for (size_t i = 0; i < n; i++) {
        vf_catalog_info ci;
        assert_int_equal(vf_catalog_entry(i, &ci), VF_OK);
        vf_error err = {0};
        vf_status st = run_llamacpp(ci.id, &err);
        if (st == VF_EUNSUPPORTED && strstr(err.msg, "llama.cpp does not implement")) {
            refusals++; /* mllama, chatglm-less families: refused in one line, named */
            assert_null(strchr(err.msg, '\n'));
        } else if (st != VF_OK) {
            fail_msg("%s: %s", ci.id, err.msg);
        }
    }
    assert_true(refusals * 10 < n); /* the families llama.cpp runs are most of the catalog */
}

/* The refusal names the family, and the arch each family maps to is one
 * LLM_ARCH_NAMES holds (a few by hand from convert_hf_to_gguf.py). */
static void test_refusal_names_family(void **state)
{
    (void)state;
    vf_error err = {0};
    assert_int_equal(run_llamacpp(M2026 "Zyphra__Zamba2-2.7B.json", &err), VF_EUNSUPPORTED);
    assert_non_null(strstr(err.msg, "zamba2"));
    static const struct {
        const char *file, *arch;
    } cases[] = {
        {"ibm-ai-platform__Bamba-9B-v1.json", "granitehybrid"}, /* BambaForCausalLM -> GraniteHybridModel */
        {"Qwen__Qwen2.5-VL-7B-Instruct.json", "qwen2vl"},
        {"HuggingFaceTB__SmolLM3-3B.json", "smollm3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char p[256];
        snprintf(p, sizeof p, M2026 "%s", cases[i].file);
        vf_model *m = NULL;
        if (vf_model_open(p, &m, &err) != VF_OK)
            fail_msg("%s: %s", p, err.msg);
        bool known = false;
        const char *a = vf__llamacpp_arch(m, &known);
        assert_true(known);
        assert_non_null(a);
        assert_string_equal(a, cases[i].arch);
        vf_model_free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusal_names_family),
        cmocka_unit_test(test_models2026_on_llamacpp),
        cmocka_unit_test(test_catalog_on_llamacpp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
