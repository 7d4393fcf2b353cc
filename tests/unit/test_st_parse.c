/* test_st_parse.c — the safetensors header parser on its own: JSON strings,
 * numbers, white space, nesting, duplicates, truncation, and agreement with
 * jansson (an independent JSON parser) on valid headers. */
#include "testutil.h"

#include "model/model.h"
#include "read/st_parse.h"

#include <jansson.h>

/* ---- what the parser hands over, collected ---- */
typedef struct got_tensor {
    char *name;
    char *dtype; /* NULL when absent */
    bool has_shape, offsets_ok;
    size_t n_dims, shape_bad;
    uint64_t shape[VF_MAX_DIMS], offsets[2];
} got_tensor;

typedef struct got {
    got_tensor *t;
    size_t n, cap;
    size_t fail_at; /* the callback fails on this entry (SIZE_MAX: never) */
} got;

static vf_status collect(void *ctx, vf__st_entry *e, vf_error *err)
{
    got *g = ctx;
    if (g->n == g->fail_at)
        return vf__err(err, VF_EFORMAT, "cb", "callback refused '%s'", e->name);
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 16;
        g->t = realloc(g->t, g->cap * sizeof *g->t);
        assert_non_null(g->t);
    }
    got_tensor *t = &g->t[g->n++];
    memset(t, 0, sizeof *t);
    assert_int_equal(strlen(e->name), e->name_len);
    t->name = strdup(e->name);
    t->dtype = e->dtype ? strdup(e->dtype) : NULL;
    t->has_shape = e->has_shape;
    t->n_dims = e->n_dims;
    t->shape_bad = e->shape_bad;
    memcpy(t->shape, e->shape, sizeof t->shape);
    t->offsets_ok = e->offsets_ok;
    memcpy(t->offsets, e->offsets, sizeof t->offsets);
    e->stored_name = t->name; /* lives until got_free: lets the parser find duplicates */
    return VF_OK;
}

static void got_free(got *g)
{
    for (size_t i = 0; i < g->n; i++) {
        free(g->t[i].name);
        free(g->t[i].dtype);
    }
    free(g->t);
    memset(g, 0, sizeof *g);
}

static vf_status parse_n(const char *text, size_t len, got *g, vf_error *e)
{
    memset(g, 0, sizeof *g);
    g->fail_at = SIZE_MAX;
    memset(e, 0, sizeof *e);
    vf_status st = vf__st_parse(text, len, "H", collect, g, e);
    if (st != VF_OK) {
        assert_true(e->msg[0] != '\0'); /* a failure always says why */
        assert_non_null(strstr(e->msg, "H: ") == e->msg ? e->msg : NULL);
    }
    return st;
}

/* Parses s and expects success with exactly n tensors. */
static void ok_n(const char *s, size_t n, got *g)
{
    vf_error e;
    vf_status st = parse_n(s, strlen(s), g, &e);
    if (st != VF_OK)
        fail_msg("'%s': %s", s, e.msg);
    assert_int_equal(g->n, n);
}

static void ok(const char *s, size_t n)
{
    got g;
    ok_n(s, n, &g);
    got_free(&g);
}

/* Parses len bytes and expects VF_EFORMAT with msg containing want. */
static void bad_len(const char *s, size_t len, const char *want)
{
    got g;
    vf_error e;
    vf_status st = parse_n(s, len, &g, &e);
    got_free(&g);
    if (st != VF_EFORMAT)
        fail_msg("'%.*s' parsed (status %d), expected '%s'", (int)len, s, (int)st, want);
    if (!strstr(e.msg, want))
        fail_msg("'%.*s': '%s' lacks '%s'", (int)len, s, e.msg, want);
}

static void bad(const char *s, const char *want) { bad_len(s, strlen(s), want); }

#define T1 "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"

static void test_escapes(void **state)
{
    (void)state;
    got g;
    ok_n("{\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\te\":" T1 "}", 1, &g);
    assert_string_equal(g.t[0].name, "a\"b\\c/d\b\f\n\r\te");
    got_free(&g);
    /* \u: one, two and three UTF-8 bytes; a surrogate pair → four; hex either case */
    ok_n("{\"\\u0041\\u00e9\\u20AC\\ud83d\\uDE00\":" T1 "}", 1, &g);
    assert_string_equal(g.t[0].name, "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    got_free(&g);
    /* the edges: U+0001, U+007F, U+0080, U+07FF, U+0800, U+FFFF, U+10000, U+10FFFF */
    ok_n("{\"\\u0001\\u007f\\u0080\\u07ff\\u0800\\uffff\\ud800\\udc00\\udbff\\udfff\":" T1 "}", 1, &g);
    assert_string_equal(g.t[0].name, "\x01\x7f\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf");
    got_free(&g);
    /* raw UTF-8 passes through; escapes in dtype and metadata too */
    ok_n("{\"__metadata__\":{\"k\\u00e9\":\"v\\n\"},\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\":"
         "{\"dtype\":\"F\\u00332\",\"shape\":[2],\"data_offsets\":[0,8]}}",
         1, &g);
    assert_string_equal(g.t[0].name, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    assert_string_equal(g.t[0].dtype, "F32");
    got_free(&g);
    bad("{\"a\\x\":" T1 "}", "invalid escape");
    bad("{\"a\\u12g4\":" T1 "}", "invalid \\u escape");
    bad("{\"a\\u12\"}", "invalid \\u escape");
    bad("{\"a\\", "premature end");
    bad("{\"a\\u00", "premature end");
    bad("{\"a\\u0000\":" T1 "}", "\\u0000 is not allowed");
    bad("{\"a\":{\"dtype\":\"F\\u0000\"}}", "\\u0000 is not allowed");
}

static void test_surrogates(void **state)
{
    (void)state;
    bad("{\"\\ud800\":" T1 "}", "high surrogate alone");
    bad("{\"\\ud800x\":" T1 "}", "high surrogate alone");
    bad("{\"\\ud800\\u0041\":" T1 "}", "high surrogate alone");
    bad("{\"\\ud800\\ud800\":" T1 "}", "high surrogate alone");
    bad("{\"\\udbff\\n\":" T1 "}", "high surrogate alone");
    bad("{\"\\udc00\":" T1 "}", "low surrogate alone");
    bad("{\"\\udfff\\ud800\":" T1 "}", "low surrogate alone");
    bad("{\"\\ud800\\u", "high surrogate alone");
}

static void test_utf8_and_controls(void **state)
{
    (void)state;
    bad("{\"a\xff\":" T1 "}", "not valid utf-8");
    bad("{\"a\xc0\xaf\":" T1 "}", "not valid utf-8");         /* overlong '/' */
    bad("{\"a\xe0\x80\xaf\":" T1 "}", "not valid utf-8");     /* overlong, 3 bytes */
    bad("{\"a\xed\xa0\x80\":" T1 "}", "not valid utf-8");     /* a surrogate, encoded */
    bad("{\"a\xf4\x90\x80\x80\":" T1 "}", "not valid utf-8"); /* past U+10FFFF */
    bad("{\"a\xe2\x82\":" T1 "}", "not valid utf-8");         /* cut short */
    bad("{\"a\":" T1 "}\xff", "not valid utf-8");             /* outside a string as well */
    bad("{\"a\x01\":" T1 "}", "control character 0x01");
    bad("{\"a\tb\":" T1 "}", "control character 0x09");
    bad_len("{\"a\0\":1}", 9, "control character 0x00");
    bad("{\"a\":" T1 "}\x7f", "end of file expected");
}

static void test_whitespace(void **state)
{
    (void)state;
    ok("   {}   ", 0);
    ok(" \t\r\n{ \t\r\n\"a\" \t\r\n: \t\r\n{ \"dtype\" : \"F32\" , \"shape\" : [ 2 ] , \"data_offsets\" : [ 0 , 8 ] "
       "} \t\r\n, \"__metadata__\" : { \"k\" : \"v\" } } \t\r\n",
       1);
    ok("{\"a\":" T1 "}        ", 1); /* writers pad to 8 bytes with spaces */
    bad("{\"a\":" T1 "}\f", "end of file expected"); /* form feed is not JSON white space */
    bad("\xc2\xa0{}", "invalid json");
    /* the line of the error is counted */
    bad("{\n\"a\":\n" T1 ",\n\n\"b\" x", "invalid json at line 5:");
}

static void test_numbers(void **state)
{
    (void)state;
    got g;
    ok_n("{\"a\":{\"dtype\":\"F32\",\"shape\":[0,9223372036854775807,1,2,3,4,5,6,7],"
         "\"data_offsets\":[9223372036854775807,0]}}",
         1, &g);
    assert_int_equal(g.t[0].n_dims, 9); /* counted past VF_MAX_DIMS */
    assert_int_equal(g.t[0].shape_bad, SIZE_MAX);
    assert_true(g.t[0].shape[1] == (uint64_t)INT64_MAX);
    assert_int_equal(g.t[0].shape[7], 6);
    assert_true(g.t[0].offsets_ok);
    assert_true(g.t[0].offsets[0] == (uint64_t)INT64_MAX);
    got_free(&g);
    /* valid JSON numbers that are not u64: the entry says where */
    const char *not_u64[] = {"-0", "-1", "1.5", "0.0", "1e3", "1E+3", "2e-0", "-9223372036854775808", "\"2\"",
                             "null", "true", "[2]", "{}"};
    for (size_t i = 0; i < sizeof not_u64 / sizeof *not_u64; i++) {
        char h[256];
        snprintf(h, sizeof h, "{\"a\":{\"shape\":[1,%s],\"data_offsets\":[0,%s]}}", not_u64[i], not_u64[i]);
        ok_n(h, 1, &g);
        assert_true(g.t[0].has_shape);
        assert_int_equal(g.t[0].n_dims, 2);
        assert_int_equal(g.t[0].shape_bad, 1);
        assert_false(g.t[0].offsets_ok);
        got_free(&g);
    }
    /* integers past int64 are refused as jansson refused them */
    bad("{\"a\":{\"shape\":[9223372036854775808]}}", "too big integer");
    bad("{\"a\":{\"shape\":[18446744073709551615]}}", "too big integer");
    bad("{\"a\":{\"shape\":[18446744073709551616]}}", "too big integer");
    bad("{\"a\":{\"shape\":[99999999999999999999999999999]}}", "too big integer");
    bad("{\"a\":{\"shape\":[-9223372036854775809]}}", "too big negative integer");
    bad("{\"a\":{\"x\":[9223372036854775808]}}", "too big integer");
    /* not JSON numbers */
    const char *invalid[] = {"01", "00", "-01", "1.", "1.e3", "1e", "1e+", "-", "+1", ".5", "0x10", "1_000", "Infinity",
                             "NaN", "- 1"};
    for (size_t i = 0; i < sizeof invalid / sizeof *invalid; i++) {
        char h[256];
        snprintf(h, sizeof h, "{\"a\":{\"shape\":[%s]}}", invalid[i]);
        bad(h, "invalid json");
    }
    /* data_offsets: exactly two */
    ok_n("{\"a\":{\"data_offsets\":[1,2,3]}}", 1, &g);
    assert_false(g.t[0].offsets_ok);
    got_free(&g);
    ok_n("{\"a\":{\"data_offsets\":[1]}}", 1, &g);
    assert_false(g.t[0].offsets_ok);
    got_free(&g);
    ok_n("{\"a\":{\"data_offsets\":{}, \"shape\":7}}", 1, &g);
    assert_false(g.t[0].offsets_ok);
    assert_false(g.t[0].has_shape);
    assert_null(g.t[0].dtype);
    got_free(&g);
}

/* n nested arrays (or objects) as the value of an unknown key in an entry. */
static char *nested_value(size_t n, bool objects)
{
    size_t cap = 64 + n * 8;
    char *s = malloc(cap), *p = s;
    p += sprintf(p, "{\"a\":{\"x\":");
    for (size_t i = 0; i < n; i++)
        p += sprintf(p, objects ? "{\"k\":" : "[");
    p += sprintf(p, "1");
    for (size_t i = 0; i < n; i++)
        *p++ = objects ? '}' : ']';
    sprintf(p, "}}");
    return s;
}

static void test_nesting(void **state)
{
    (void)state;
    /* the top object is level 1, the entry 2: 62 more fit under 64 */
    for (int obj = 0; obj < 2; obj++) {
        char *s = nested_value(62, obj);
        ok(s, 1);
        free(s);
        s = nested_value(63, obj);
        bad(s, "nested deeper than 64 levels");
        free(s);
        s = nested_value(100000, obj);
        bad(s, "nested deeper than 64 levels");
        free(s);
    }
    /* skipped values of every kind */
    ok("{\"a\":{\"dtype\":\"F32\",\"extra\":{\"k\":[1,-2.5e-3,{\"z\":null}],\"t\":true,\"f\":false,\"s\":\"\\u00e9\"},"
       "\"shape\":[2],\"e2\":[],\"e3\":{},\"data_offsets\":[0,8]}}",
       1);
    /* a top level that is not an object, however deep, is named for what it is */
    bad("[1,2,3]", "header is not a json object");
    bad("\"a\"", "header is not a json object");
    bad("[1,2] x", "end of file expected");
    char deep[20001];
    memset(deep, '[', 10000);
    memset(deep + 10000, ']', 10000);
    bad_len(deep, 20000, "nested deeper");
}

static void test_duplicates(void **state)
{
    (void)state;
    bad("{\"a\":" T1 ",\"a\":" T1 "}", "duplicate object key 'a'");
    bad("{\"a\":" T1 ",\"b\":" T1 ",\"\\u0061\":" T1 "}", "duplicate object key 'a'"); /* same once decoded */
    bad("{\"__metadata__\":{},\"__metadata__\":{}}", "duplicate object key '__metadata__'");
    bad("{\"__metadata__\":{\"k\":\"1\",\"j\":\"2\",\"k\":\"3\"}}", "duplicate object key 'k'");
    bad("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F16\"}}", "duplicate object key 'dtype'");
    bad("{\"a\":{\"shape\":[1],\"shape\":[1]}}", "duplicate object key 'shape'");
    bad("{\"a\":{\"data_offsets\":[0,0],\"d\\u0061ta_offsets\":[0,0]}}", "duplicate object key 'data_offsets'");
    bad("{\"a\":{\"x\":1,\"y\":2,\"x\":3}}", "duplicate object key 'x'");
    bad("{\"a\":{\"x\":{\"k\":1,\"k\":2}}}", "duplicate object key 'k'");
    /* the same key in different objects is fine */
    ok("{\"__metadata__\":{\"a\":\"x\"},\"a\":{\"dtype\":\"F32\",\"x\":{\"dtype\":1,\"a\":{\"a\":2}},\"y\":{\"a\":3}}}",
       1);
    /* many distinct names, then one repeated */
    size_t n = 50000, cap = n * 40 + 64, k = 0;
    char *s = malloc(cap);
    k += (size_t)sprintf(s + k, "{");
    for (size_t i = 0; i < n; i++)
        k += (size_t)sprintf(s + k, "%s\"model.layers.%zu.w\":{}", i ? "," : "", i);
    sprintf(s + k, "}");
    ok(s, n);
    sprintf(s + k, ",\"model.layers.31337.w\":{}}");
    bad(s, "duplicate object key 'model.layers.31337.w'");
    /* the same when the table gives up at once and sorting decides (as it
     * does when names were chosen to collide) */
    unsigned keep = vf__st_max_probe;
    vf__st_max_probe = 0;
    bad(s, "duplicate object key 'model.layers.31337.w'");
    sprintf(s + k, "}");
    ok(s, n);
    vf__st_max_probe = keep;
    free(s);
}

static void test_structure(void **state)
{
    (void)state;
    ok("{}", 0);
    ok("{\"__metadata__\":{}}", 0);
    bad("", "premature end");
    bad("   ", "premature end");
    bad("{", "premature end");
    bad("{\"a\"", "premature end");
    bad("{\"a\":", "premature end");
    bad("{} x", "end of file expected");
    bad("{}{}", "end of file expected");
    bad("{},", "end of file expected");
    bad_len("{}\0", 3, "end of file expected");
    bad("{\"a\":" T1 ",}", "invalid json");
    bad("{,\"a\":" T1 "}", "invalid json");
    bad("{\"a\" " T1 "}", "invalid json");
    bad("{\"a\":" T1 " \"b\":" T1 "}", "invalid json");
    bad("{a:1}", "invalid json");
    bad("{'a':1}", "invalid json");
    bad("{\"a\":{\"dtype\":\"F32\",}}", "invalid json");
    bad("{\"a\":{\"shape\":[1,]}}", "invalid json");
    bad("{\"a\":{\"shape\":[1 2]}}", "invalid json");
    bad("{\"a\":{\"x\":tru}}", "invalid json");
    bad("{\"a\":{\"x\":nul}}", "invalid json");
    bad("{\"a\":{\"x\":True}}", "invalid json");
    /* what the entries and metadata are is checked as they come */
    bad("{\"a\":[1,2]}", "tensor 'a': entry is not an object");
    bad("{\"a\":\"x\"}", "tensor 'a': entry is not an object");
    bad("{\"a\":[1,2}", "invalid json"); /* broken JSON is named as such first */
    bad("{\"\":" T1 "}", "a tensor has an empty name");
    bad("{\"__metadata__\":\"pt\"}", "__metadata__ is not an object");
    bad("{\"__metadata__\":{\"format\":\"pt\",\"step\":7}}", "__metadata__ value 'step' is not a string");
    bad("{\"__metadata__\":{\"n\":null}}", "__metadata__ value 'n' is not a string");
    /* a callback's error stops the parse and is the one reported */
    got g;
    vf_error e;
    memset(&g, 0, sizeof g);
    g.fail_at = 1;
    const char *h = "{\"a\":" T1 ",\"b\":" T1 ",\"c\":" T1 "}";
    assert_int_equal(vf__st_parse(h, strlen(h), "H", collect, &g, &e), VF_EFORMAT);
    assert_string_equal(e.msg, "cb: callback refused 'b'");
    assert_int_equal(g.n, 1);
    got_free(&g);
}

static const char *const valid_headers[] = {
    ("{\"__metadata__\":{\"format\":\"pt\"},\"model.embed_tokens.weight\":{\"dtype\":\"BF16\",\"shape\":[1000,256],"
     "\"data_offsets\":[0,512000]},\"model.norm.weight\":{\"dtype\":\"F32\",\"shape\":[256],\"data_offsets\":[512000,"
     "513024]}}      "),
    "{\"a\":{\"data_offsets\":[0,0],\"shape\":[],\"dtype\":\"F64\"}}",
    ("{\"x\\ny\":{\"dtype\":\"I8\",\"shape\":[0,3],\"data_offsets\":[0,0],\"extra\":{\"k\":[1,2,{\"q\":null}]}},"
     "\"\\u00e9t\\u00e9\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},\"__metadata__\":{}}"),
};

/* Reads text with jansson and checks that every tensor the parser gave is
 * the same: names in the same order, dtype, shape, offsets. */
static void check_against_jansson(const char *text, size_t len)
{
    got g;
    vf_error e;
    if (parse_n(text, len, &g, &e) != VF_OK)
        fail_msg("st_parse refused what jansson reads: %s", e.msg);
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        fail_msg("jansson: %s", je.text);
    size_t k = 0;
    const char *name;
    json_t *v;
    json_object_foreach(root, name, v)
    {
        if (strcmp(name, "__metadata__") == 0)
            continue;
        assert_true(k < g.n);
        got_tensor *t = &g.t[k++];
        assert_string_equal(t->name, name);
        json_t *d = json_object_get(v, "dtype"), *s = json_object_get(v, "shape"),
               *o = json_object_get(v, "data_offsets");
        assert_string_equal(t->dtype, json_string_value(d));
        assert_true(t->has_shape);
        assert_int_equal(t->n_dims, json_array_size(s));
        assert_int_equal(t->shape_bad, SIZE_MAX);
        for (size_t i = 0; i < json_array_size(s) && i < VF_MAX_DIMS; i++)
            assert_true(t->shape[i] == (uint64_t)json_integer_value(json_array_get(s, i)));
        assert_true(t->offsets_ok);
        assert_true(t->offsets[0] == (uint64_t)json_integer_value(json_array_get(o, 0)));
        assert_true(t->offsets[1] == (uint64_t)json_integer_value(json_array_get(o, 1)));
    }
    assert_int_equal(k, g.n);
    json_decref(root);
    got_free(&g);
}

static uint64_t rng_state = 0x2545F4914F6CDD1Du;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* A random valid header: names with escapes and non-ASCII, random white
 * space, numbers up to INT64_MAX, metadata and unknown keys in between. */
static size_t random_header(char *h, size_t cap)
{
    static const char *const pieces[] = {"layers", ".", "\\\"", "\\\\", "\\/", "\\n", "\\u00e9", "\xc3\xa9",
                                         "\\ud83d\\ude00", "\xf0\x9f\x98\x80", "\\u20ac", "w", "7", " "};
    static const char *const dts[] = {"F32", "BF16", "F8_E4M3", "I64", "BOOL"};
    static const char *const ws_[] = {"", " ", "\n", "\t", "\r\n  "};
#define WS ws_[rnd() % 5]
    size_t k = 0, n = rnd() % 40;
    k += (size_t)snprintf(h + k, cap - k, "%s{%s", WS, WS);
    bool meta = rnd() % 2;
    for (size_t i = 0; i < n + meta; i++) {
        if (i)
            k += (size_t)snprintf(h + k, cap - k, "%s,%s", WS, WS);
        if (meta && i == n / 2) {
            k += (size_t)snprintf(h + k, cap - k, "\"__metadata__\"%s:%s{\"format\":\"pt\",\"n\\u00e9\":\"\\t\"}",
                                  WS, WS);
            continue;
        }
        k += (size_t)snprintf(h + k, cap - k, "\"t%zu|", i); /* unique by its prefix */
        for (size_t j = rnd() % 6; j > 0; j--)
            k += (size_t)snprintf(h + k, cap - k, "%s", pieces[rnd() % (sizeof pieces / sizeof *pieces)]);
        k += (size_t)snprintf(h + k, cap - k, "\"%s:%s{\"dtype\":%s\"%s\",\"shape\":[", WS, WS, WS, dts[rnd() % 5]);
        for (size_t d = rnd() % 6; d > 0; d--) {
            uint64_t v = rnd() % 4 == 0 ? (uint64_t)INT64_MAX - rnd() % 3 : rnd() % 100000;
            k += (size_t)snprintf(h + k, cap - k, "%llu%s", (unsigned long long)v, d > 1 ? "," : "");
        }
        k += (size_t)snprintf(h + k, cap - k, "]%s,%s\"data_offsets\":[%llu,%s%llu]", WS, WS,
                              (unsigned long long)(rnd() >> 1), WS, (unsigned long long)(rnd() % 1000));
        if (rnd() % 3 == 0)
            k += (size_t)snprintf(h + k, cap - k, ",\"x\":{\"a\":[1,2.5,true,null,\"s\"],\"b\":{}}");
        k += (size_t)snprintf(h + k, cap - k, "%s}", WS);
    }
    k += (size_t)snprintf(h + k, cap - k, "%s}%s", WS, WS);
    assert_true(k < cap);
    return k;
#undef WS
}

static void test_differential(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof valid_headers / sizeof *valid_headers; i++)
        check_against_jansson(valid_headers[i], strlen(valid_headers[i]));
    static char h[64 << 10];
    for (int i = 0; i < 300; i++)
        check_against_jansson(h, random_header(h, sizeof h));
}

/* What the old reader (jansson through vf__json_parse) made of text at the
 * grammar level: valid JSON, an object, the metadata an object of strings,
 * every other value an object under a non-empty name. */
static bool jansson_accepts(const char *text, size_t len, bool *skip)
{
    vf_error e = {0};
    json_t *root = vf__json_parse(text, len, "J", &e);
    *skip = root == NULL && strstr(e.msg, "real number overflow") != NULL; /* 1e999: jansson's own limit */
    if (!root)
        return false;
    bool ok = json_is_object(root);
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v)
    {
        if (!ok)
            break;
        if (strcmp(k, "__metadata__") == 0) {
            ok = json_is_object(v);
            const char *mk;
            json_t *mv;
            json_object_foreach(v, mk, mv) ok = ok && json_is_string(mv);
        } else {
            ok = *k && json_is_object(v);
        }
    }
    json_decref(root);
    return ok;
}

/* Random edits of valid headers: both readers accept the same ones. */
static void test_differential_mutations(void **state)
{
    (void)state;
    static char h[64 << 10];
    static const char alphabet[] = "{}[]:,\" \t\n0123456789-+.eEtrufalsn\\/u\x80\xc3\xa9\xff\x01";
    size_t agree_ok = 0, agree_bad = 0;
    for (int round = 0; round < 4000; round++) {
        size_t len = random_header(h, sizeof h - 8);
        for (int m = 1 + (int)(rnd() % 3); m > 0 && len > 0; m--) {
            size_t at = rnd() % len;
            char c = alphabet[rnd() % (sizeof alphabet - 1)];
            switch (rnd() % 3) {
            case 0: h[at] = c; break;
            case 1: memmove(h + at + 1, h + at, len - at); h[at] = c; len++; break;
            default: memmove(h + at, h + at + 1, len - at - 1); len--; break;
            }
        }
        char *t = malloc(len ? len : 1);
        memcpy(t, h, len);
        got g;
        vf_error e;
        bool mine = parse_n(t, len, &g, &e) == VF_OK, skip;
        got_free(&g);
        bool theirs = jansson_accepts(t, len, &skip);
        if (!skip && mine != theirs)
            fail_msg("st_parse %s, jansson %s: '%.*s' (%s)", mine ? "accepts" : "refuses", theirs ? "accepts" : "refuses",
                     (int)len, t, e.msg);
        free(t);
        if (!skip)
            *(mine ? &agree_ok : &agree_bad) += 1;
    }
    /* both kinds were met often enough to mean something */
    assert_true(agree_ok > 400);
    assert_true(agree_bad > 400);
}

/* Every strict prefix of a header without trailing white space is an error
 * (never a crash: the prefix is copied to a buffer of exactly its size, so
 * that the sanitizers see a read past it). */
static void test_truncation(void **state)
{
    (void)state;
    static char h[64 << 10];
    const char *fixed = "{\"__metadata__\":{\"k\\u00e9\":\"v\"},\"a\\ud83d\\ude00\xc3\xa9\":{\"dtype\":\"F32\",\"shape\":"
                        "[2,9223372036854775807],\"x\":{\"y\":[1.5e-3,true,null]},\"data_offsets\":[0,8]}}";
    for (int round = 0; round < 9; round++) {
        size_t len;
        if (round == 0) {
            len = strlen(fixed);
            memcpy(h, fixed, len);
        } else {
            len = random_header(h, sizeof h);
        }
        while (len > 0 && strchr(" \t\r\n", h[len - 1]))
            len--;
        for (size_t k = 0; k < len; k++) {
            char *cut = malloc(k ? k : 1);
            memcpy(cut, h, k);
            got g;
            vf_error e;
            vf_status st = parse_n(cut, k, &g, &e);
            got_free(&g);
            free(cut);
            if (st != VF_EFORMAT)
                fail_msg("prefix of %zu/%zu bytes: status %d", k, len, (int)st);
        }
        char *all = malloc(len);
        memcpy(all, h, len);
        got g;
        vf_error e;
        if (parse_n(all, len, &g, &e) != VF_OK)
            fail_msg("whole header: %s", e.msg);
        got_free(&g);
        free(all);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes),     cmocka_unit_test(test_surrogates),  cmocka_unit_test(test_utf8_and_controls),
        cmocka_unit_test(test_whitespace),  cmocka_unit_test(test_numbers),     cmocka_unit_test(test_nesting),
        cmocka_unit_test(test_duplicates),  cmocka_unit_test(test_structure),   cmocka_unit_test(test_differential),
        cmocka_unit_test(test_truncation),  cmocka_unit_test(test_differential_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
