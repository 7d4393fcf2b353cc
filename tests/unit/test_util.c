/* test_util.c — util.c, dtype.c and status.c: status messages and exit
 * codes, the dtype table against peers-loading.md (§1.3 safetensors bits,
 * §2.2 ggml type table), load-scheme arithmetic from the QLoRA paper, UTF-8
 * and JSON guards, bounded file reads, and that no allocation follows a
 * length a file merely claims (malloc/calloc/realloc are wrapped at link
 * time, see mk/harden.mk, and jansson's through json_set_alloc_funcs). */
#include "../../src/cli/exit_code.h" /* the CLI's exit statuses */
#include "testutil.h"

#include "model/model.h"

#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>

/* ---- allocation accounting ---- */
void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
static size_t largest;
static void note(size_t n)
{
    if (n > largest)
        largest = n;
}
void *__wrap_malloc(size_t n) { return note(n), __real_malloc(n); }
void *__wrap_calloc(size_t k, size_t n) { return note(k * n), __real_calloc(k, n); }
void *__wrap_realloc(void *p, size_t n) { return note(n), __real_realloc(p, n); }
static void *json_counting_malloc(size_t n) { return note(n), __real_malloc(n); }

/* ---- status.c ---- */
static void test_status_table(void **state)
{
    (void)state;
    static const struct {
        vf_status st;
        int exit_code; /* docs/design.md §2 */
    } want[] = {{VF_OK, 0},       {VF_EINVAL, 2},       {VF_ENOMEM, 4},  {VF_EIO, 4},
                {VF_ENOENT, 3},   {VF_EFORMAT, 3},      {VF_EUNSUPPORTED, 3}, {VF_ERANGE, 3},
                {VF_EDEVICE, 5},  {VF_EDEVMEM, 5},      {VF_EINTR, 4}};
    assert_int_equal(sizeof want / sizeof want[0], VF_STATUS_COUNT_);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const char *m = vf_strerror(want[i].st);
        assert_non_null(m);
        assert_true(strlen(m) > 3);
        /* lower case, one line, no full stop */
        assert_false(m[0] >= 'A' && m[0] <= 'Z');
        assert_null(strchr(m, '\n'));
        assert_int_not_equal(m[strlen(m) - 1], '.');
        assert_int_equal(vf_status_exit_code(want[i].st), want[i].exit_code);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(m, vf_strerror(want[j].st));
    }
    assert_string_equal(vf_strerror(VF_OK), "success");
    assert_string_equal(vf_strerror((vf_status)-1), "unknown error");
    assert_string_equal(vf_strerror(VF_STATUS_COUNT_), "unknown error");
}

static void test_err_one_line(void **state)
{
    (void)state;
    vf_error e;
    assert_int_equal(vf__err(&e, VF_EFORMAT, "a/b.safetensors", "tensor '%s': bad", "x\ny\tz"), VF_EFORMAT);
    assert_int_equal(e.status, VF_EFORMAT);
    assert_string_equal(e.msg, "a/b.safetensors: tensor 'x?y?z': bad");
    /* a path longer than the buffer: truncated, still terminated */
    char longp[2000];
    memset(longp, 'p', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    vf__err(&e, VF_EIO, longp, "reason");
    assert_true(strlen(e.msg) < VF_ERROR_MSG_MAX);
    assert_non_null(strstr(e.msg, "reason"));
    assert_int_equal(vf__err(NULL, VF_EIO, "x", "y"), VF_EIO);
}

/* ---- dtype.c: peers-loading.md §2.2, transcribed ---- */
static void test_ggml_table(void **state)
{
    (void)state;
    static const struct {
        int id;
        const char *name;
        unsigned block, bytes;
    } t[] = {{0, "F32", 1, 4},        {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},     {3, "Q4_1", 32, 20},
             {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},      {8, "Q8_0", 32, 34},     {9, "Q8_1", 32, 36},
             {10, "Q2_K", 256, 84},    {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},  {13, "Q5_K", 256, 176},
             {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
             {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},   {20, "IQ4_NL", 32, 18},  {21, "IQ3_S", 256, 110},
             {22, "IQ2_S", 256, 82},   {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},        {25, "I16", 1, 2},
             {26, "I32", 1, 4},        {27, "I64", 1, 8},        {28, "F64", 1, 8},       {29, "IQ1_M", 256, 56},
             {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},   {35, "TQ2_0", 256, 66},  {39, "MXFP4", 32, 17},
             {40, "NVFP4", 64, 36},    {41, "Q1_0", 128, 18},    {42, "Q2_0", 64, 18}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        const vf_dtype_info *d = vf_dtype_get(vf_dtype_from_gguf(t[i].id));
        assert_non_null(d);
        assert_string_equal(d->name, t[i].name);
        assert_int_equal(d->block_elements, t[i].block);
        assert_int_equal(d->block_bytes, t[i].bytes);
        assert_int_equal(d->gguf_id, t[i].id);
        assert_true(fabs(d->bits_per_element - 8.0 * t[i].bytes / t[i].block) < 1e-12);
    }
    /* removed ids (blck_size 0 in ggml), the count, and nonsense: unknown, not a crash */
    static const int removed[] = {4, 5, 31, 32, 33, 36, 37, 38, 43, -1, 1000, INT32_MAX};
    for (size_t i = 0; i < sizeof removed / sizeof removed[0]; i++)
        assert_int_equal(vf_dtype_from_gguf(removed[i]), VF_DTYPE_UNKNOWN);
    assert_null(vf_dtype_get(VF_DTYPE_UNKNOWN));
    /* the bits quoted in docs/design.md §3 and the table's bpw column */
    assert_true(vf_dtype_get(VF_DTYPE_Q4_K)->bits_per_element == 4.5);
    assert_true(vf_dtype_get(VF_DTYPE_Q6_K)->bits_per_element == 6.5625);
    assert_true(vf_dtype_get(VF_DTYPE_Q3_K)->bits_per_element == 3.4375);
    assert_true(vf_dtype_get(VF_DTYPE_TQ1_0)->bits_per_element == 1.6875);
}

/* peers-loading.md §1.3: every safetensors dtype string and its bits */
static void test_safetensors_dtypes(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        unsigned bits;
    } t[] = {{"BOOL", 8},     {"F4", 4},       {"F6_E2M3", 6},     {"F6_E3M2", 6},     {"U8", 8},   {"I8", 8},
             {"F8_E5M2", 8},  {"F8_E4M3", 8},  {"F8_E8M0", 8},     {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8},
             {"I16", 16},     {"U16", 16},     {"F16", 16},        {"BF16", 16},       {"I32", 32}, {"U32", 32},
             {"F32", 32},     {"C64", 64},     {"F64", 64},        {"I64", 64},        {"U64", 64}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        vf_dtype dt = vf_dtype_from_safetensors(t[i].s);
        const vf_dtype_info *d = vf_dtype_get(dt);
        assert_non_null(d);
        assert_string_equal(d->safetensors_name, t[i].s);
        assert_true(d->bits_per_element == t[i].bits);
    }
    /* the header's strings are exact: no case folding, no GGUF names */
    assert_int_equal(vf_dtype_from_safetensors("bf16"), VF_DTYPE_UNKNOWN);
    assert_int_equal(vf_dtype_from_safetensors("Q4_K"), VF_DTYPE_UNKNOWN);
    assert_int_equal(vf_dtype_from_safetensors(""), VF_DTYPE_UNKNOWN);
    /* byte sizes: prod * bits / 8, exact or refused */
    uint64_t b = 0;
    assert_int_equal(vf_dtype_bytes(VF_DTYPE_F4, 6, &b), VF_OK);
    assert_int_equal(b, 3);
    assert_int_equal(vf_dtype_bytes(VF_DTYPE_F4, 7, &b), VF_EFORMAT);
    assert_int_equal(vf_dtype_bytes(VF_DTYPE_F6_E2M3, 8, &b), VF_OK);
    assert_int_equal(b, 6);
    assert_int_equal(vf_dtype_bytes(VF_DTYPE_F6_E2M3, 6, &b), VF_EFORMAT);
    assert_int_equal(vf_dtype_bytes(VF_DTYPE_Q4_K, 4096, &b), VF_OK);
    assert_int_equal(b, 16 * 144);
    assert_int_equal(vf_dtype_bytes(VF_DTYPE_Q4_K, 100, &b), VF_EFORMAT);
    assert_int_equal(vf_dtype_bytes(VF_DTYPE_F64, UINT64_MAX / 4, &b), VF_ERANGE);
    assert_int_equal(vf_dtype_bytes(VF_DTYPE_UNKNOWN, 1, &b) != VF_OK, true);
}

/* QLoRA (Dettmers et al. 2023) §2: NF4 blocks of 64 with an fp32 absmax =
 * 32/64 = 0.5 extra bits; double quantization stores the absmax as 8 bits
 * with an fp32 constant per 256 blocks: 8/64 + 32/(64*256) = 0.127 bits. */
static void test_quant_schemes(void **state)
{
    (void)state;
    vf_quant_scheme q;
    assert_int_equal(vf_quant_scheme_parse("nf4", &q), VF_OK);
    assert_true(q.bits_per_weight == 4.5);
    assert_int_equal(q.group_size, 64);
    assert_int_equal(vf_quant_scheme_parse("nf4-dq", &q), VF_OK);
    assert_true(fabs(q.bits_per_weight - 4.127) < 0.0005);
    assert_true(fabs((q.bits_per_weight - 4) - 0.127) < 0.0005); /* the paper's "0.127 bits per parameter" */
    assert_string_equal(q.method, "bitsandbytes");
    assert_int_equal(vf_quant_scheme_parse("NF4_DQ", &q), VF_OK);
    assert_string_equal(q.name, "nf4-dq");
    /* GPTQ int4, group 128: 4 + fp16 scale/128 + 4-bit zero/128 */
    assert_int_equal(vf_quant_scheme_parse("gptq-int4-g128", &q), VF_OK);
    assert_true(fabs(q.bits_per_weight - (4 + 16.0 / 128 + 4.0 / 128)) < 1e-12);
    assert_int_equal(vf_quant_scheme_parse("awq-g64", &q), VF_OK);
    assert_int_equal(q.group_size, 64);
    assert_int_equal(vf_quant_scheme_parse("q4_k", &q), VF_OK);
    assert_int_equal(q.gguf_type, VF_DTYPE_Q4_K);
    assert_true(q.bits_per_weight == 4.5);
    assert_int_equal(vf_quant_scheme_parse("bf16", &q), VF_OK);
    assert_true(q.bits_per_weight == 16);
    static const char *const bad[] = {"", "nf5", "gptq-int5", "gptq-g0", "gptq-int4-x", "awq-", "q4_k_zz", "int"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(vf_quant_scheme_parse(bad[i], &q), VF_EINVAL);
    assert_int_equal(vf_quant_scheme_parse(NULL, &q), VF_EINVAL);
    assert_true(vf_quant_scheme_count() > 0);
    assert_null(vf_quant_scheme_name(vf_quant_scheme_count()));
}

/* ---- util.c ---- */
static void test_utf8(void **state)
{
    (void)state;
    assert_true(vf__utf8_valid("plain", 5));
    assert_true(vf__utf8_valid("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9)); /* é € 😀 */
    assert_false(vf__utf8_valid("\xc0\xaf", 2));                              /* overlong '/' */
    assert_false(vf__utf8_valid("\xe0\x80\xaf", 3));                          /* overlong, 3 bytes */
    assert_false(vf__utf8_valid("\xed\xa0\x80", 3));                          /* surrogate U+D800 */
    assert_false(vf__utf8_valid("\xf4\x90\x80\x80", 4));                      /* above U+10FFFF */
    assert_false(vf__utf8_valid("\xe2\x82", 2));                              /* truncated */
    assert_false(vf__utf8_valid("\x80", 1));                                  /* lone continuation */
    assert_false(vf__utf8_valid("\xff", 1));
}

static void test_json_guards(void **state)
{
    (void)state;
    vf_error e = {0};
    json_t *j = vf__json_parse("{\"a\":1,\"a\":2}", 13, "p", &e);
    assert_null(j);
    assert_non_null(strstr(e.msg, "duplicate"));
    char deep[200];
    for (int depth = 63; depth <= 65; depth++) {
        memset(deep, '[', (size_t)depth);
        memset(deep + depth, ']', (size_t)depth);
        j = vf__json_parse(deep, (size_t)depth * 2, "p", &e);
        if (depth <= VF_JSON_MAX_DEPTH)
            assert_non_null(j);
        else
            assert_null(j);
        json_decref(j);
    }
    /* brackets inside strings are not nesting */
    const char *s = "{\"k\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\\"[[[\"}";
    j = vf__json_parse(s, strlen(s), "p", &e);
    assert_non_null(j);
    json_decref(j);
    assert_null(vf__json_parse("{\"a\":\"\xff\"}", 9, "p", &e));
    assert_non_null(strstr(e.msg, "utf-8"));
    uint64_t v = 0;
    json_t *n = json_integer(-1), *r = json_real(2.0), *big = json_integer(INT64_MAX);
    assert_false(vf__json_u64(n, &v));
    assert_false(vf__json_u64(r, &v));
    assert_true(vf__json_u64(big, &v));
    assert_true(v == (uint64_t)INT64_MAX);
    json_decref(n), json_decref(r), json_decref(big);
}

static void test_paths_and_reads(void **state)
{
    (void)state;
    char *p = vf__path_join("a/b", "c");
    assert_string_equal(p, "a/b/c");
    free(p);
    p = vf__path_join("a/", "c");
    assert_string_equal(p, "a/c");
    free(p);
    p = vf__path_dir("x");
    assert_string_equal(p, ".");
    free(p);
    p = vf__path_dir("/x");
    assert_string_equal(p, "/");
    free(p);
    p = vf__path_dir("d/e/x");
    assert_string_equal(p, "d/e");
    free(p);
    assert_true(vf__ends_with("a.safetensors", ".safetensors"));
    assert_false(vf__ends_with("s", ".safetensors"));

    char *dir = tu_tmpdir(), *f = tu_path(dir, "f.json");
    tu_write(f, "0123456789", 10);
    char *text = NULL;
    size_t len = 0;
    vf_error e = {0};
    assert_int_equal(vf__read_small_file(f, 10, &text, &len, &e), VF_OK);
    assert_int_equal(len, 10);
    assert_int_equal(text[10], '\0');
    free(text);
    assert_int_equal(vf__read_small_file(f, 9, &text, &len, &e), VF_EFORMAT);
    assert_null(text);
    assert_int_equal(vf__read_small_file(dir, 100, &text, &len, &e), VF_EFORMAT); /* not a regular file */
    char *missing = tu_path(dir, "none");
    assert_int_equal(vf__read_small_file(missing, 100, &text, &len, &e), VF_ENOENT);
    int fd = open(f, O_RDONLY);
    char b[16];
    assert_int_equal(vf__pread_full(fd, b, 10, 0, f, &e), VF_OK);
    assert_int_equal(vf__pread_full(fd, b, 11, 0, f, &e), VF_EFORMAT); /* short file */
    assert_non_null(strstr(e.msg, "truncated"));
    assert_int_equal(vf__pread_full(fd, b, 1, (uint64_t)INT64_MAX + 1, f, &e), VF_EFORMAT);
    close(fd);
    tu_rm_rf(dir);
    free(missing), free(f), free(dir);
}

/* No allocation follows a length the file only claims: a header length word
 * of 99,999,999 (under the cap) in a 40-byte file allocates nothing large;
 * and for a valid file, the largest block is proportional to the file. */
static void write_lying(const char *path, uint64_t claim)
{
    unsigned char b[40] = {0};
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(claim >> (8 * i));
    memcpy(b + 8, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1]", 31);
    tu_write(path, b, sizeof b);
}

static void test_bounded_allocation(void **state)
{
    (void)state;
    json_set_alloc_funcs(json_counting_malloc, free);
    char *dir = tu_tmpdir(), *p = tu_path(dir, "m.safetensors");
    static const uint64_t claims[] = {99999999, 100000000, 100000001, 1ull << 40, UINT64_MAX, 33};
    for (size_t i = 0; i < sizeof claims / sizeof claims[0]; i++) {
        write_lying(p, claims[i]);
        largest = 0;
        vf_model *m = NULL;
        vf_error e = {0};
        assert_int_not_equal(vf_model_open(p, &m, &e), VF_OK);
        assert_null(m);
        assert_true(largest < 4096);
    }
    /* a valid file of many small tensors: the largest single block is the
     * tensor array, bounded by a small multiple of the header */
    enum { N = 5000 };
    tu_st_tensor *ts = calloc(N, sizeof *ts);
    char(*names)[32] = calloc(N, 32);
    for (size_t i = 0; i < N; i++) {
        snprintf(names[i], 32, "t%zu", i);
        ts[i] = (tu_st_tensor){names[i], "F32", 1, {1}};
    }
    tu_write_safetensors(p, ts, N);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    largest = 0;
    vf_model *m = NULL;
    vf_error e = {0};
    assert_int_equal(vf_model_open(p, &m, &e), VF_OK);
    assert_true(largest <= 4 * (size_t)sb.st_size + 65536);
    /* and the accounting sees the library's own blocks (the tensor array) */
    assert_true(largest >= N * sizeof(vf_tensor));
    vf_model_free(m);
    json_set_alloc_funcs(malloc, free);
    free(ts), free(names);
    tu_rm_rf(dir);
    free(p), free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_table),   cmocka_unit_test(test_err_one_line),
        cmocka_unit_test(test_ggml_table),     cmocka_unit_test(test_safetensors_dtypes),
        cmocka_unit_test(test_quant_schemes),  cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_json_guards),    cmocka_unit_test(test_paths_and_reads),
        cmocka_unit_test(test_bounded_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
