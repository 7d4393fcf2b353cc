/* test_hub.c — the Hub's parts that decide, one by one: ids, the token's
 * origin rule, redirects, Content-Range, the API answer, the file choice,
 * and vramfit's cache entries (a bad one is never trusted). Expected values
 * are written from the rules (huggingface_hub's validate_repo_id, RFC 9110
 * Content-Range, llama.cpp's tag matching), not from the code. */
#include "testutil.h"
#include "read/hub/hub.h"
#include "read/hub/hub_cache.h"
#include "read/hub/hub_http.h"

static void test_ids(void **state)
{
    (void)state;
    vf__hub_id id;
    assert_true(vf__hub_id_parse("hf://org/name@v1.0:Q4_K_M", &id));
    assert_string_equal(id.repo, "org/name");
    assert_string_equal(id.rev, "v1.0");
    assert_string_equal(id.quant, "Q4_K_M");
    assert_true(id.explicit_hub);
    assert_true(vf__hub_id_parse("org/name", &id));
    assert_string_equal(id.rev, "main");
    assert_false(id.explicit_hub);
    assert_true(vf__hub_id_parse("hf://gpt2", &id));        /* a root-level repository */
    assert_false(vf__hub_id_parse("gpt2", &id));            /* plain: a catalog short name, never the Hub */
    assert_true(vf__hub_id_parse("org/name@refs/pr/1", &id)); /* a pull request's ref */
    assert_string_equal(id.rev, "refs/pr/1");
    const char *bad[] = {"org/na--me", "org/na..me", "-org/name", "org/name-", "org/na me", "org/name/x",
                         "hf://", "org/name@", "org/name:", "org/name@../x", "a/b:Q4 K", "/abs/path", "./rel/x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(vf__hub_id_parse(bad[i], &id));
    char longname[120];
    memset(longname, 'a', sizeof longname);
    longname[0] = 'o', longname[1] = '/', longname[sizeof longname - 1] = '\0';
    assert_false(vf__hub_id_parse(longname, &id)); /* over 96 characters */
    /* the public check the page's server relies on: the same rules, and no path passes */
    assert_true(vf_hub_id_valid("org/name") && vf_hub_id_valid("hf://org/name@main:Q8_0"));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(vf_hub_id_valid(bad[i]));
    assert_false(vf_hub_id_valid(NULL) || vf_hub_id_valid("../etc/passwd") || vf_hub_id_valid("org/../x"));
}

static void test_origin_and_redirects(void **state)
{
    (void)state;
    const char *ep = "https://huggingface.co";
    assert_true(vf__http_same_origin(ep, "https://huggingface.co/api/models/x"));
    assert_true(vf__http_same_origin(ep, "https://HuggingFace.co:443/x")); /* the default port, any case */
    assert_false(vf__http_same_origin(ep, "https://cdn-lfs.huggingface.co/x")); /* another host: no token */
    assert_false(vf__http_same_origin(ep, "http://huggingface.co/x"));          /* another scheme */
    assert_false(vf__http_same_origin(ep, "https://huggingface.co:8443/x"));    /* another port */
    assert_false(vf__http_same_origin(ep, "https://huggingface.co.evil.example/x"));
    assert_true(vf__http_redirect_ok(ep, "https://cdn.example/x"));
    assert_false(vf__http_redirect_ok(ep, "http://cdn.example/x"));  /* a downgrade */
    assert_true(vf__http_redirect_ok(ep, "http://127.0.0.1:8080/x")); /* loopback: the tests */
    assert_false(vf__http_redirect_ok(ep, "ftp://cdn.example/x"));
    assert_false(vf__http_redirect_ok(ep, "file:///etc/passwd"));
    assert_true(vf__http_redirect_ok("http://mirror.example", "http://mirror.example/y"));
}

static void test_content_range(void **state)
{
    (void)state;
    uint64_t a, b, t;
    assert_true(vf__http_content_range("bytes 0-65535/1000000", 0, 65535, &a, &b, &t));
    assert_true(a == 0 && b == 65535 && t == 1000000);
    assert_true(vf__http_content_range("bytes 0-99/100", 0, 65535, &a, &b, &t)); /* a shorter file */
    assert_false(vf__http_content_range("bytes 1-65535/1000000", 0, 65535, &a, &b, &t)); /* another start */
    assert_false(vf__http_content_range("bytes 0-70000/1000000", 0, 65535, &a, &b, &t)); /* more than asked */
    assert_false(vf__http_content_range("bytes 0-99/99", 0, 65535, &a, &b, &t));         /* end past the size */
    assert_false(vf__http_content_range("bytes 0-65535/*", 0, 65535, &a, &b, &t));       /* no size */
    assert_false(vf__http_content_range("bytes 9-3/100", 9, 65535, &a, &b, &t));
    assert_false(vf__http_content_range("bytes 0-1/99999999999999999999999", 0, 1, &a, &b, &t)); /* overflow */
    assert_false(vf__http_content_range("items 0-1/2", 0, 1, &a, &b, &t));
    assert_false(vf__http_content_range("bytes 0-1/2x", 0, 1, &a, &b, &t));
}

static void test_api_answer(void **state)
{
    (void)state;
    const char *sha = "0123456789abcdef0123456789abcdef01234567";
    char text[512];
    vf__hub_info info;
    vf_error e = {0};
    snprintf(text, sizeof text, "{\"sha\":\"%s\",\"gated\":\"manual\",\"siblings\":[{\"rfilename\":\"a/b.gguf\"}]}", sha);
    assert_int_equal(vf__hub_api_parse(text, strlen(text), "hf://o/n", &info, &e), VF_OK);
    assert_string_equal(info.sha, sha);
    assert_int_equal(info.n_files, 1);
    assert_string_equal(info.files[0], "a/b.gguf");
    assert_true(info.gated);
    vf__hub_info_free(&info);
    const char *bad_names[] = {"../x", "/etc/passwd", "a/../b", "a//b", "a/./b", "a\\\\b", "a/", ""};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        snprintf(text, sizeof text, "{\"sha\":\"%s\",\"siblings\":[{\"rfilename\":\"%s\"}]}", sha, bad_names[i]);
        assert_int_equal(vf__hub_api_parse(text, strlen(text), "hf://o/n", &info, &e), VF_EFORMAT);
        assert_non_null(strstr(e.msg, "bad name"));
    }
    const char *bad[] = {"[]", "{\"sha\":\"0123\",\"siblings\":[]}", "{\"siblings\":[]}",
                         "{\"sha\":\"0123456789ABCDEF0123456789abcdef01234567\",\"siblings\":[]}", "{\"sha\":1}", "<html>"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(vf__hub_api_parse(bad[i], strlen(bad[i]), "hf://o/n", &info, &e), VF_EFORMAT);
}

static void test_choice(void **state)
{
    (void)state;
    const char *pick;
    vf_error e = {0};
    char *sharded[] = {"config.json", "consolidated.safetensors", "model-00001-of-00002.safetensors",
                       "model-00002-of-00002.safetensors", "model.safetensors.index.json"};
    assert_int_equal(vf__hub_choose(sharded, 5, NULL, NULL, "r", &pick, &e), VF_OK);
    assert_string_equal(pick, "model.safetensors.index.json"); /* not the Mistral copy beside it */
    char *mistral[] = {"params.json", "consolidated.safetensors"};
    assert_int_equal(vf__hub_choose(mistral, 2, NULL, NULL, "r", &pick, &e), VF_OK);
    assert_string_equal(pick, "consolidated.safetensors");
    char *gguf[] = {"README.md", "m-Q4_K.gguf", "m-Q4_K_M.gguf", "m-q8_0.gguf", "mmproj-m-F16.gguf",
                    "BF16/m-BF16-00001-of-00002.gguf", "BF16/m-BF16-00002-of-00002.gguf"};
    assert_int_equal(vf__hub_choose(gguf, 7, NULL, NULL, "r", &pick, &e), VF_OK);
    assert_string_equal(pick, "m-Q4_K_M.gguf"); /* the default tag, as llama.cpp's -hf */
    assert_int_equal(vf__hub_choose(gguf, 7, "Q4_K", NULL, "r", &pick, &e), VF_OK);
    assert_string_equal(pick, "m-Q4_K.gguf"); /* a whole word: not Q4_K_M */
    assert_int_equal(vf__hub_choose(gguf, 7, "Q8_0", NULL, "r", &pick, &e), VF_OK);
    assert_string_equal(pick, "m-q8_0.gguf"); /* case-insensitive */
    assert_int_equal(vf__hub_choose(gguf, 7, "bf16", NULL, "r", &pick, &e), VF_OK);
    assert_string_equal(pick, "BF16/m-BF16-00001-of-00002.gguf"); /* a split by its first part */
    assert_int_equal(vf__hub_choose(gguf, 7, "F16", NULL, "r", &pick, &e), VF_EINVAL); /* only the projector */
    char *two[] = {"a-Q4_K_M.gguf", "b-Q4_K_M.gguf"};
    assert_int_equal(vf__hub_choose(two, 2, NULL, NULL, "r", &pick, &e), VF_EINVAL);
    assert_non_null(strstr(e.msg, "a-Q4_K_M.gguf, b-Q4_K_M.gguf"));
    assert_int_equal(vf__hub_choose(two, 2, NULL, "b-Q4_K_M.gguf", "r", &pick, &e), VF_OK);
    assert_string_equal(pick, "b-Q4_K_M.gguf");
    assert_int_equal(vf__hub_choose(two, 2, NULL, "c.gguf", "r", &pick, &e), VF_ENOENT);
    char *none[] = {"README.md"};
    assert_int_equal(vf__hub_choose(none, 1, NULL, NULL, "r", &pick, &e), VF_ENOENT);
}

static void test_cache_entries(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *p = tu_path(dir, "a/b/entry");
    const char data[] = "header bytes";
    assert_true(vf__hubcache_put(p, data, sizeof data - 1, 1000));
    unsigned char *got = NULL;
    size_t len = 0;
    uint64_t total = 0;
    assert_true(vf__hubcache_get(p, 1 << 20, &got, &len, &total));
    assert_int_equal(len, sizeof data - 1);
    assert_int_equal(total, 1000);
    assert_memory_equal(got, data, len);
    free(got);
    assert_false(vf__hubcache_get(p, 4, &got, &len, &total)); /* over the cap asked */
    /* one flipped byte, a cut, a longer length than the file: each ignored */
    FILE *f = fopen(p, "r+b");
    assert_non_null(f);
    fseek(f, -1, SEEK_END);
    fputc('X', f);
    fclose(f);
    assert_false(vf__hubcache_get(p, 1 << 20, &got, &len, &total));
    assert_true(vf__hubcache_put(p, data, sizeof data - 1, 1000));
    assert_int_equal(truncate(p, 40), 0);
    assert_false(vf__hubcache_get(p, 1 << 20, &got, &len, &total));
    tu_write(p, "vramfit-hub-cache 1 10 20 0000000000000000\nshort", 48); /* len > total */
    assert_false(vf__hubcache_get(p, 1 << 20, &got, &len, &total));
    tu_write(p, "garbage", 7);
    assert_false(vf__hubcache_get(p, 1 << 20, &got, &len, &total));
    char esc[64];
    vf__hubcache_escape("sub/dir/.x %", esc, sizeof esc);
    assert_string_equal(esc, "sub%2Fdir%2F.x%20%25"); /* one file name, no way out of the directory */
    vf__hubcache_escape("..", esc, sizeof esc);
    assert_string_equal(esc, "%2E.");
    tu_rm_rf(dir);
    free(p);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids),       cmocka_unit_test(test_origin_and_redirects),
        cmocka_unit_test(test_content_range), cmocka_unit_test(test_api_answer),
        cmocka_unit_test(test_choice),    cmocka_unit_test(test_cache_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
