/* test_catalog.c — the embedded model catalog: names, aliases, suggestions,
 * the embedded configs themselves, and exact counts by catalog name. */
#include "testutil.h"

#include "model/model.h"
#include "read/readers.h"

#include <ctype.h>
#include <strings.h>

#define NOT_FOUND ((size_t)-1)
#define CAT_ID 160

static const char *id_of(size_t i)
{
    vf_catalog_info ci;
    assert_int_equal(vf_catalog_entry(i, &ci), VF_OK);
    return ci.id;
}

static void assert_finds(const char *name, const char *want_id)
{
    size_t i = vf_catalog_find(name);
    if (i == NOT_FOUND)
        fail_msg("'%s' not found in the catalog", name);
    assert_string_equal(id_of(i), want_id);
}

/* Hugging Face id, alias, any case, the file-name form, renamed Meta repos. */
static void test_lookup(void **state)
{
    (void)state;
    assert_finds("Qwen/Qwen3-8B", "Qwen/Qwen3-8B");
    assert_finds("qwen/qwen3-8b", "Qwen/Qwen3-8B");
    assert_finds("qwen3-8b", "Qwen/Qwen3-8B");
    assert_finds("QWEN3-8B", "Qwen/Qwen3-8B");
    assert_finds("Qwen__Qwen3-8B", "Qwen/Qwen3-8B");
    assert_finds("openai-community/gpt2", "openai-community/gpt2");
    assert_finds("gpt2", "openai-community/gpt2");
    assert_finds("mixtral-8x7b-v0.1", "mistralai/Mixtral-8x7B-v0.1");
    /* meta-llama renamed Meta-Llama-3.1-* to Llama-3.1-*: both spellings resolve */
    assert_finds("meta-llama/Meta-Llama-3.1-8B", "meta-llama/Meta-Llama-3.1-8B");
    assert_finds("meta-llama/Llama-3.1-8B", "meta-llama/Meta-Llama-3.1-8B");
    assert_finds("llama-3.1-70b", "meta-llama/Meta-Llama-3.1-70B");
    assert_finds("Llama-3.2-1B", "meta-llama/Llama-3.2-1B");

    /* near misses are not matches */
    assert_int_equal(vf_catalog_find("qwen3-8"), NOT_FOUND);
    assert_int_equal(vf_catalog_find("qwen3-8b "), NOT_FOUND);
    assert_int_equal(vf_catalog_find("Qwen/"), NOT_FOUND);
    assert_int_equal(vf_catalog_find("/"), NOT_FOUND);
    assert_int_equal(vf_catalog_find(""), NOT_FOUND);
    assert_int_equal(vf_catalog_find(NULL), NOT_FOUND);
    assert_int_equal(vf_catalog_find("Mistral/Qwen3-8B"), NOT_FOUND); /* alias under another org */
    vf_catalog_info ci;
    assert_int_equal(vf_catalog_entry(vf_catalog_count(), &ci), VF_EINVAL);
    assert_null(vf_catalog_config(vf_catalog_count(), NULL));

    /* the hidden entry point model.c uses gives the canonical id and the file's text */
    size_t len = 0;
    const char *canon = NULL;
    const char *text = vf__catalog_config_text("QWEN3-8B", &len, &canon);
    assert_non_null(text);
    assert_string_equal(canon, "Qwen/Qwen3-8B");
    const vf__embedded_file *f = vf__embedded_find("models/Qwen__Qwen3-8B.json");
    assert_non_null(f);
    assert_ptr_equal(text, f->data);
    assert_int_equal(len, f->len);
    assert_null(vf__catalog_config_text("no-such-model", &len, &canon));
}

/* Every embedded models/X.json answers its own id (entries that are variants
 * answer with their base's file); each parses and states the model_type the
 * index lists; an alias is the lower-cased name, or "" where an earlier id of
 * another org holds it; ids are sorted and unique. */
static void test_every_config(void **state)
{
    (void)state;
    size_t files = 0, n = vf_catalog_count(), own = 0;
    for (size_t i = 0; i < vf__embedded_count; i++)
        if (strncmp(vf__embedded_files[i].name, "models/", 7) == 0 && vf__ends_with(vf__embedded_files[i].name, ".json"))
            files++;
    assert_true(n >= files && files >= 250);
    for (size_t i = 0; i < n; i++) {
        vf_catalog_info ci;
        assert_int_equal(vf_catalog_entry(i, &ci), VF_OK);
        assert_non_null(ci.provenance);
        const char *slash = strchr(ci.id, '/');
        assert_non_null(slash);
        size_t len = 0;
        const char *text = vf_catalog_config(i, &len);
        assert_non_null(text);
        if (strcmp(ci.provenance, "variant") != 0) { /* id ↔ file name */
            char fname[256];
            snprintf(fname, sizeof fname, "models/%.*s__%s.json", (int)(slash - ci.id), ci.id, slash + 1);
            const vf__embedded_file *f = vf__embedded_find(fname);
            if (!f)
                fail_msg("%s: no embedded %s", ci.id, fname);
            assert_ptr_equal(text, f->data);
            own++;
        }
        if (ci.alias[0]) {
            assert_int_equal(strcasecmp(ci.alias, slash + 1), 0);
            assert_int_equal(vf_catalog_find(ci.alias), i);
        } else {
            size_t holder = vf_catalog_find(slash + 1);
            assert_true(holder < i);
        }
        if (i > 0)
            assert_true(strcasecmp(id_of(i - 1), ci.id) < 0);
        json_t *cfg = vf__config_json_parse(text, len, ci.id, NULL);
        if (!json_is_object(cfg))
            fail_msg("%s: not a json object", ci.id);
        const char *mt = json_string_value(json_object_get(cfg, "model_type"));
        assert_string_equal(ci.family, mt ? mt : ""); /* state-spaces' own format has none */
        json_decref(cfg);
        assert_int_equal(vf_catalog_find(ci.id), i);
    }
    assert_int_equal(own, files); /* and no file is left without its id */
}

/* The catalog covers every family the architectures module supports (falcon-7b's
 * original RefinedWebModel format is no longer the Hub file's: test_arch.c keeps it). */
static void test_families(void **state)
{
    (void)state;
    static const char *const fams[] = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3",
                                       "qwen3_moe", "gemma", "gemma2", "gemma3_text", "phi3", "gpt2",
                                       "gpt_bigcode", "gpt_neox", "bert", "falcon", "olmo2",
                                       "deepseek_v2", "deepseek_v3", "gpt_oss", "gemma4"};
    for (size_t f = 0; f < sizeof fams / sizeof fams[0]; f++) {
        bool found = false;
        for (size_t i = 0; i < vf_catalog_count() && !found; i++) {
            vf_catalog_info ci;
            assert_int_equal(vf_catalog_entry(i, &ci), VF_OK);
            found = strcmp(ci.family, fams[f]) == 0;
        }
        if (!found)
            fail_msg("no catalog model of family %s", fams[f]);
    }
}

/* Context lengths as the config files state them (max_position_embeddings, n_positions). */
static void test_context(void **state)
{
    (void)state;
    vf_catalog_info ci;
    assert_int_equal(vf_catalog_entry(vf_catalog_find("qwen3-8b"), &ci), VF_OK);
    assert_int_equal(ci.context_length, 40960);
    assert_string_equal(ci.family, "qwen3");
    assert_int_equal(vf_catalog_entry(vf_catalog_find("gpt2"), &ci), VF_OK);
    assert_int_equal(ci.context_length, 1024); /* n_positions */
    assert_int_equal(vf_catalog_entry(vf_catalog_find("meta-llama-3.1-8b"), &ci), VF_OK);
    assert_int_equal(ci.context_length, 131072);
}

static bool has(const char **out, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(out[i], id) == 0)
            return true;
    return false;
}

static void test_suggest(void **state)
{
    (void)state;
    const char *out[5];
    size_t n;
    /* punctuation and case ignored: "qwen-3-8b" is qwen3-8b */
    n = vf_catalog_suggest("qwen-3-8b", out, 5);
    assert_true(n >= 1);
    assert_string_equal(out[0], "Qwen/Qwen3-8B");
    n = vf_catalog_suggest("Qwen_3_8B", out, 1);
    assert_int_equal(n, 1);
    assert_string_equal(out[0], "Qwen/Qwen3-8B");
    /* missing "meta-" and the dot: Llama 3 8B first, then 3.1 8B */
    n = vf_catalog_suggest("llama3-8b", out, 3);
    assert_true(n >= 2);
    assert_string_equal(out[0], "meta-llama/Meta-Llama-3-8B");
    assert_true(has(out, n, "meta-llama/Meta-Llama-3.1-8B"));
    /* a prefix of longer names: every Mistral 7B, nothing else first */
    n = vf_catalog_suggest("mistral7b", out, 3);
    assert_int_equal(n, 3);
    for (size_t k = 0; k < n; k++) {
        char low[CAT_ID];
        snprintf(low, sizeof low, "%s", out[k]);
        for (char *c = low; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        assert_non_null(strstr(low, "mistral-7b"));
    }
    assert_true(has(out, n, "mistralai/Mistral-7B-v0.1"));
    /* an org prefix the user typed still ranks the right model first */
    n = vf_catalog_suggest("Qwen/Qwen3-8", out, 3);
    assert_true(n >= 1);
    assert_string_equal(out[0], "Qwen/Qwen3-8B");
    /* a dot is not a dash: Qwen2.5 7B, not Qwen2 57B */
    n = vf_catalog_suggest("qwen2.5-7b", out, 3);
    assert_true(n >= 1);
    assert_string_equal(out[0], "Qwen/Qwen2.5-7B");
    assert_false(has(out, n, "Qwen/Qwen2-57B-A14B"));
    /* every word but one: the model without the suffix it lacks */
    n = vf_catalog_suggest("Qwen/Qwen3-8B-Instruct", out, 3);
    assert_true(has(out, n, "Qwen/Qwen3-8B"));
    n = vf_catalog_suggest("llama-3.1-70b-instruct-v2", out, 3);
    assert_true(has(out, n, "meta-llama/Llama-3.1-70B-Instruct"));
    /* a bare number stands alone: Llama 2 sizes, not Llama 3.2 */
    n = vf_catalog_suggest("llama-2-13b", out, 5);
    assert_int_equal(n, 5);
    assert_true(has(out, n, "elyza/ELYZA-japanese-Llama-2-13b-instruct")); /* Llama-2-13B fine-tunes */
    assert_true(has(out, n, "microsoft/Orca-2-13b"));
    assert_true(has(out, n, "meta-llama/Llama-2-7b-hf"));
    assert_true(has(out, n, "meta-llama/Llama-2-70b-hf"));
    for (size_t i = 0; i < n; i++)
        assert_null(strstr(out[i], "Llama-3.2"));
    /* one typo */
    n = vf_catalog_suggest("mixtral-8x7b-v0.2", out, 1);
    assert_int_equal(n, 1);
    assert_string_equal(out[0], "mistralai/Mixtral-8x7B-v0.1");
    /* n respected, nothing for nonsense or empty input */
    assert_int_equal(vf_catalog_suggest("qwen", out, 1), 1);
    assert_int_equal(vf_catalog_suggest("zzzzzzzzzz", out, 5), 0);
    assert_int_equal(vf_catalog_suggest("", out, 5), 0);
    assert_int_equal(vf_catalog_suggest("--", out, 5), 0);
    assert_int_equal(vf_catalog_suggest("qwen", out, 0), 0);
    assert_int_equal(vf_catalog_suggest(NULL, out, 5), 0);
    /* names far longer than any id: compared on a bounded prefix, no overflow */
    char *big = malloc(20001);
    assert_non_null(big);
    memset(big, 'q', 20000);
    big[20000] = 0;
    assert_int_equal(vf_catalog_find(big), NOT_FOUND);
    assert_true(vf_catalog_suggest(big, out, 5) <= 5);
    memcpy(big, "Qwen/", 5);
    big[9000] = '/';
    assert_true(vf_catalog_suggest(big, out, 5) <= 5);
    free(big);
}

/* vf_model_open names the near misses for an unknown name. */
static void test_open_unknown(void **state)
{
    (void)state;
    vf_model *m = (vf_model *)1;
    vf_error e;
    assert_int_equal(vf_model_open("llama3-8b", &m, &e), VF_ENOENT);
    assert_null(m);
    assert_int_equal(e.status, VF_ENOENT);
    assert_non_null(strstr(e.msg, "llama3-8b: no such file, directory or catalog model; did you mean: "
                                  "meta-llama/Meta-Llama-3-8B, "));
    assert_null(strchr(e.msg, '\n'));
    assert_int_equal(vf_model_open("zzzzzzzzzz", &m, &e), VF_ENOENT);
    assert_string_equal(e.msg, "zzzzzzzzzz: no such file, directory or catalog model");
}

/* Every catalog model opens, has tensors and counts parameters. */
static void test_every_model_opens(void **state)
{
    (void)state;
    for (size_t i = 0; i < vf_catalog_count(); i++) {
        const char *id = id_of(i);
        vf_model *m = NULL;
        vf_error e;
        vf_status st = vf_model_open(id, &m, &e);
        if (st != VF_OK)
            fail_msg("%s: %s", id, e.msg);
        assert_string_equal(vf_model_source(m), id);
        assert_true(vf_model_tensor_count(m) > 0);
        vf_model_totals t;
        vf_model_totals_get(m, &t);
        assert_true(t.params > 0);
        assert_true(t.active_params <= t.params);
        vf_model_free(m);
    }
}

/* The counts the build wrote into the library (tools/catalog_counts.c) are what
 * opening each entry gives now: a table made by an older library fails here. */
static void test_build_counts(void **state)
{
    (void)state;
    size_t counted = 0;
    for (size_t i = 0; i < vf_catalog_count(); i++) {
        vf_catalog_info ci;
        assert_int_equal(vf_catalog_entry(i, &ci), VF_OK);
        vf_model *m = NULL;
        vf_error e;
        if (vf_catalog_open(i, &m, &e) != VF_OK) {
            if (ci.counted)
                fail_msg("%s: counted at build time, does not open now: %s", ci.id, e.msg);
            continue;
        }
        if (!ci.counted)
            fail_msg("%s: opens, but the build did not count it", ci.id);
        assert_string_equal(vf_model_source(m), ci.id);
        assert_string_equal(vf_model_origin(m), "the embedded catalog");
        vf_model_totals t;
        vf_model_totals_get(m, &t);
        const vf_hparams *hp = vf_model_hparams(m);
        if (ci.params != t.params || ci.active_params != (t.active_params ? t.active_params : t.params) ||
            ci.bytes != t.bytes || ci.model_context != hp->context_length ||
            ci.host_side_params != vf_model_host_side_params(m) || ci.host_side_params > ci.params)
            fail_msg("%s: build counts %llu/%llu params, %llu B, context %llu; opened %llu/%llu, %llu B, %llu",
                     ci.id, (unsigned long long)ci.params, (unsigned long long)ci.active_params,
                     (unsigned long long)ci.bytes, (unsigned long long)ci.model_context,
                     (unsigned long long)t.params, (unsigned long long)t.active_params,
                     (unsigned long long)t.bytes, (unsigned long long)hp->context_length);
        vf_model_free(m);
        counted++;
    }
    assert_int_equal(counted, vf_catalog_count());
    vf_model *m = (vf_model *)1;
    vf_error e;
    assert_int_equal(vf_catalog_open(vf_catalog_count(), &m, &e), VF_EINVAL);
    assert_null(m);
}

static FILE *open_reference(const char *name)
{
    char p[512];
    const char *env = getenv("VF_REFERENCE");
    snprintf(p, sizeof p, "%s/%s", env ? env : "tests/reference", name);
    return fopen(p, "r");
}

/* param-counts.tsv (independent counts): the catalog-name route, by id and by
 * alias, gives exactly the published or computed count. */
static void test_reference_counts(void **state)
{
    (void)state;
    FILE *f = open_reference("param-counts.tsv");
    if (!f)
        fail_msg("tests/reference/param-counts.tsv not found (set VF_REFERENCE)");
    char line[2048];
    size_t checked = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        char file[256];
        char count[64];
        if (sscanf(line, "%255[^\t]\t%63[^\t]", file, count) != 2 || count[0] == '-')
            continue;
        unsigned long long want = strtoull(count, NULL, 10);
        char id[256];
        snprintf(id, sizeof id, "%s", file);
        char *dot = strstr(id, ".json");
        char *us = strstr(id, "__");
        assert_non_null(dot);
        assert_non_null(us);
        *dot = 0;
        memmove(us + 1, us + 2, strlen(us + 2) + 1);
        *us = '/';
        const char *names[2] = {id, us + 1}; /* the id, then the alias */
        for (int k = 0; k < 2; k++) {
            vf_model *m = NULL;
            vf_error e;
            vf_status st = vf_model_open(names[k], &m, &e);
            if (st != VF_OK)
                fail_msg("%s: %s", names[k], e.msg);
            vf_model_totals t;
            vf_model_totals_get(m, &t);
            if (t.params != want)
                fail_msg("%s: %llu parameters, reference %llu", names[k], (unsigned long long)t.params, want);
            vf_model_free(m);
        }
        checked++;
    }
    fclose(f);
    assert_true(checked >= 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup),
        cmocka_unit_test(test_every_config),
        cmocka_unit_test(test_families),
        cmocka_unit_test(test_context),
        cmocka_unit_test(test_suggest),
        cmocka_unit_test(test_open_unknown),
        cmocka_unit_test(test_every_model_opens),
        cmocka_unit_test(test_build_counts),
        cmocka_unit_test(test_reference_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
