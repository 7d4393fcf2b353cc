/* test_classify.c — the role of every tensor of every catalog model and
 * every 2025-26 config (tests/reference/models2026) as the naming patterns
 * give it, name by name: classify.c answers names of one shape (numbers
 * blanked out) from the first one it matched, which holds only while no
 * pattern looks into an all-digit segment. Also the shape rule's edges. */
#include "testutil.h"

#include "internal.h"

#include <dirent.h>
#include <string.h>

static size_t check_model(const char *source)
{
    vf_model *m = NULL;
    vf_error err = {0};
    vf_status st = vf_model_open(source, &m, &err);
    if (st != VF_OK)
        fail_msg("%s: %s", source, err.msg);
    size_t n = vf_model_tensor_count(m);
    for (size_t i = 0; i < n; i++) {
        const vf_tensor *t = vf_model_tensor(m, i);
        if (t->role != vf__tensor_role_from_name(t->name))
            fail_msg("%s: %s has role %s, its name says %s", source, t->name, vf_role_name(t->role),
                     vf_role_name(vf__tensor_role_from_name(t->name)));
    }
    vf_model_free(m);
    return n;
}

static void catalog_roles(void **state)
{
    (void)state;
    size_t big = 0;
    for (size_t i = 0; i < vf_catalog_count(); i++) {
        vf_catalog_info ci;
        assert_int_equal(vf_catalog_entry(i, &ci), VF_OK);
        big += check_model(ci.id) > 2048; /* the shape cache serves lists this long */
    }
    assert_true(big >= 5); /* DeepSeek-V3/R1, Qwen3 MoEs, Mixtrals, gpt-oss */
}

static void models2026_roles(void **state)
{
    (void)state;
    DIR *d = opendir("tests/reference/models2026");
    assert_non_null(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json"))
            continue;
        char path[512];
        snprintf(path, sizeof path, "tests/reference/models2026/%s", e->d_name);
        check_model(path);
        n++;
    }
    closedir(d);
    assert_true(n >= 60);
}

/* Names that differ only in a number segment share a role; a number inside
 * a word is part of the shape (".w1." vs ".w2." are different roles). */
static void shape_edges(void **state)
{
    (void)state;
    assert_int_equal(vf__tensor_role_from_name("model.layers.3.mlp.experts.17.w1.weight"), VF_ROLE_EXPERT);
    assert_int_equal(vf__tensor_role_from_name("layers.3.feed_forward.w1.weight"), VF_ROLE_MLP_GATE);
    assert_int_equal(vf__tensor_role_from_name("layers.3.feed_forward.w2.weight"), VF_ROLE_MLP_DOWN);
    assert_int_equal(vf__tensor_role_from_name("layers.3.feed_forward.w3.weight"), VF_ROLE_MLP_UP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(catalog_roles),
        cmocka_unit_test(models2026_roles),
        cmocka_unit_test(shape_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
