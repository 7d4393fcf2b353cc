/* test_substrings.c — the Aho–Corasick set (base/substrings.c) against a plain
 * strstr over every name, on the textbook set and on names that share
 * prefixes and suffixes, as modules_to_not_convert lists do. */
#include "testutil.h"

#include "base/substrings.h"

static bool naive(const char *const *names, size_t n, const char *text)
{
    for (size_t i = 0; i < n; i++)
        if (strstr(text, names[i]))
            return true;
    return false;
}

static vf__substrings *set_of(const char *const *names, size_t n)
{
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += strlen(names[i]);
    vf__substrings *s = vf__substrings_new(bytes);
    assert_non_null(s);
    for (size_t i = 0; i < n; i++)
        assert_true(vf__substrings_add(s, names[i], strlen(names[i])));
    return s;
}

/* Aho and Corasick's own example: he, she, his, hers. */
static void test_textbook(void **state)
{
    (void)state;
    static const char *const names[] = {"he", "she", "his", "hers"};
    vf__substrings *s = set_of(names, 4);
    assert_true(vf__substrings_any(s, "ushers"));
    assert_true(vf__substrings_any(s, "ahis"));
    assert_true(vf__substrings_any(s, "sh" "e"));
    assert_false(vf__substrings_any(s, "hi"));
    assert_false(vf__substrings_any(s, "sshh"));
    assert_false(vf__substrings_any(s, ""));
    vf__substrings_free(s);
}

/* Module names: every text of a model's layers against a router/norm list. */
static void test_module_names(void **state)
{
    (void)state;
    static const char *const names[] = {"model.layers.1.mlp.gate", "model.layers.10.mlp.gate", "lm_head",
                                        "model.layers.0.linear_attn.in_proj_ba", "mlp.shared_expert_gate",
                                        "layers.2.self_attn"};
    vf__substrings *s = set_of(names, 6);
    static const char *const parts[] = {"q_proj", "mlp.gate", "mlp.gate_proj", "mlp.shared_expert_gate",
                                        "linear_attn.in_proj_ba", "linear_attn.in_proj_qkvz", "self_attn.o_proj"};
    size_t hits = 0;
    for (int layer = 0; layer < 24; layer++)
        for (size_t k = 0; k < 7; k++) {
            char text[128];
            snprintf(text, sizeof text, "model.layers.%d.%s", layer, parts[k]);
            bool want = naive(names, 6, text);
            if (vf__substrings_any(s, text) != want)
                fail_msg("%s: %s", text, want ? "a name is in it" : "no name is in it");
            hits += want;
        }
    /* shared_expert_gate in each layer; gate and gate_proj of layers 1 and 10; in_proj_ba of
     * layer 0; self_attn of layer 2 (not 12 or 22) */
    assert_int_equal(hits, 24 + 4 + 1 + 1);
    vf__substrings_free(s);
}

static void test_bounds(void **state)
{
    (void)state;
    assert_null(vf__substrings_new(0));
    vf__substrings *s = vf__substrings_new(4);
    assert_non_null(s);
    assert_false(vf__substrings_any(s, "abc")); /* no names */
    assert_true(vf__substrings_add(s, "abc", 3));
    assert_true(vf__substrings_add(s, "abd", 3)); /* shares "ab": the fourth byte */
    assert_false(vf__substrings_add(s, "xy", 2));  /* a fifth and sixth in a set of 4 bytes */
    assert_false(vf__substrings_add(s, "", 0));
    assert_false(vf__substrings_any(s, "zxy"));
    assert_true(vf__substrings_any(s, "zabd"));
    assert_false(vf__substrings_add(s, "q", 1)); /* after the first query */
    vf__substrings_free(s);
    vf__substrings_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_textbook),
        cmocka_unit_test(test_module_names),
        cmocka_unit_test(test_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
