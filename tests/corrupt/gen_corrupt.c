/* gen_corrupt.c — writes the corrupt-input matrix into a directory, one file
 * (or directory) per case; tests/corrupt/run.sh holds what each must yield.
 * Every case breaks exactly one rule of the format, the rest is valid, so a
 * reader that skips that one check is caught. Usage: gen_corrupt DIR */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *out_dir;
static int failed;

static void put(const char *rel, const void *data, size_t n)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", out_dir, rel);
    FILE *f = fopen(p, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0) {
        fprintf(stderr, "gen_corrupt: %s: %s\n", p, strerror(errno));
        failed = 1;
    }
}

static void mkd(const char *rel)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", out_dir, rel);
    if (mkdir(p, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "gen_corrupt: %s: %s\n", p, strerror(errno));
        failed = 1;
    }
}

/* A safetensors file: 8-byte little-endian length word (as given, so it may
 * lie), the header bytes, then data_len zero bytes. */
static void st_raw(const char *rel, uint64_t len_word, const char *hdr, size_t hdr_len, size_t data_len)
{
    size_t n = 8 + hdr_len + data_len;
    unsigned char *b = calloc(1, n);
    if (!b)
        exit(1);
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(len_word >> (8 * i));
    memcpy(b + 8, hdr, hdr_len);
    put(rel, b, n);
    free(b);
}

/* The usual case: an honest length word for a header given as a C string. */
static void st(const char *rel, const char *hdr, size_t data_len)
{
    st_raw(rel, strlen(hdr), hdr, strlen(hdr), data_len);
}

static void text(const char *rel, const char *s) { put(rel, s, strlen(s)); }

/* A valid two-tensor shard holding tensors a and b (F32 [2] each). */
static void shard(const char *rel, const char *a, const char *b)
{
    char h[512];
    snprintf(h, sizeof h,
             "{\"%s\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
             "\"%s\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
             a, b);
    st(rel, h, 16);
}

/* The header of one F32 tensor "a" with the given shape and data_offsets
 * (JSON text, pasted as it is). */
#define A_F32(SHAPE, OFFS) "{\"a\":{\"dtype\":\"F32\",\"shape\":" SHAPE ",\"data_offsets\":" OFFS "}}"
#define T1 "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_corrupt DIR\n");
        return 2;
    }
    out_dir = argv[1];

    /* ---- safetensors: framing ---- */
    text("garbage.safetensors", "this is not a safetensors file at all, just text\n");
    put("empty.safetensors", "", 0);
    put("short.safetensors", "\x02\0\0\0\0", 5);
    st_raw("len_past_end.safetensors", 4096, "{}", 2, 0);
    st_raw("len_over_cap.safetensors", 100000001, "{}", 2, 0);
    st_raw("len_2_64.safetensors", UINT64_MAX, "{}", 2, 0);
    st_raw("len_zero.safetensors", 0, "", 0, 0);
    st("hdr_not_json.safetensors", "{not json at all}", 0);
    st("hdr_not_object.safetensors", "[1,2,3]", 0);
    st("hdr_truncated_json.safetensors", "{\"a\":{\"dtype\":\"F32\",\"sha", 0);
    st("hdr_bad_utf8.safetensors", "{\"a\xff\xfe\":" T1 "}", 8);
    st("hdr_overlong_utf8.safetensors", "{\"a\xc0\xaf\":" T1 "}", 8);
    st_raw("hdr_nul_byte.safetensors", 10, "{\"a\0\":1}  ", 10, 0);
    {
        static char deep[20001];
        memset(deep, '[', 10000);
        memset(deep + 10000, ']', 10000);
        st("hdr_deep_nesting.safetensors", deep, 0);
    }
    st("hdr_dup_key.safetensors", "{\"a\":" T1 ",\"a\":" T1 "}", 8);
    /* ---- safetensors: tensor entries ---- */
    st("entry_not_object.safetensors", "{\"a\":[1,2]}", 0);
    st("empty_name.safetensors", "{\"\":" T1 "}", 8);
    st("dtype_unknown.safetensors", "{\"a\":{\"dtype\":\"F7\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8);
    st("dtype_missing.safetensors", "{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8);
    st("dtype_lowercase.safetensors", "{\"a\":{\"dtype\":\"f32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8);
    st("shape_not_array.safetensors", A_F32("2", "[0,8]"), 8);
    st("shape_negative.safetensors", A_F32("[-2]", "[0,8]"), 8);
    st("shape_float.safetensors", A_F32("[2.0]", "[0,8]"), 8);
    st("shape_string.safetensors", A_F32("[\"2\"]", "[0,8]"), 8);
    st("shape_overflow.safetensors", A_F32("[4294967296,4294967296,2]", "[0,8]"), 8);
    st("bytes_overflow.safetensors", A_F32("[4611686018427387904,2]", "[0,8]"), 8);
    st("shape_too_many_dims.safetensors", A_F32("[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,2]", "[0,8]"), 8);
    st("shape_dim_2_64.safetensors", A_F32("[18446744073709551616]", "[0,8]"), 8);
    st("f4_odd_elements.safetensors", "{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", 2);
    st("f6_partial_block.safetensors", "{\"a\":{\"dtype\":\"F6_E2M3\",\"shape\":[3],\"data_offsets\":[0,3]}}", 3);
    /* ---- safetensors: data offsets ---- */
    st("off_overlap.safetensors",
       "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
       "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
       12);
    st("off_gap.safetensors",
       "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
       "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}",
       20);
    st("off_not_from_zero.safetensors", A_F32("[2]", "[4,12]"), 12);
    st("off_past_end.safetensors", A_F32("[2]", "[0,8]"), 4);
    st("off_reversed.safetensors", A_F32("[0]", "[8,0]"), 8);
    st("off_fraction.safetensors", A_F32("[2]", "[0,1.5]"), 8);
    st("off_string.safetensors", A_F32("[2]", "[\"0\",\"12\"]"), 8);
    st("off_exponent.safetensors", A_F32("[250]", "[0,1e3]"), 1000);
    st("off_beyond_2_63.safetensors", A_F32("[2]", "[9223372036854775808,9223372036854775816]"), 8);
    st("off_int64_max.safetensors", A_F32("[2]", "[9223372036854775799,9223372036854775807]"), 8);
    st("off_negative.safetensors", A_F32("[2]", "[-8,0]"), 8);
    st("off_three_values.safetensors", A_F32("[2]", "[0,4,8]"), 8);
    st("off_missing.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8);
    st("off_len_mismatch.safetensors", A_F32("[2]", "[0,4]"), 4);
    st("trailing_bytes.safetensors", "{\"a\":" T1 "}", 9);
    /* ---- safetensors: metadata and names ---- */
    st("meta_int_value.safetensors", "{\"__metadata__\":{\"format\":\"pt\",\"step\":7},\"a\":" T1 "}", 8);
    st("meta_not_object.safetensors", "{\"__metadata__\":\"pt\",\"a\":" T1 "}", 8);
    /* an error message quotes the name: a newline in it must not split the line */
    st("name_newline.safetensors", "{\"a\\nvramfit: b\":{\"dtype\":\"F9\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8);

    /* ---- sharded checkpoints ---- */
    mkd("ix_missing_shard");
    shard("ix_missing_shard/model-00001-of-00002.safetensors", "x", "y");
    text("ix_missing_shard/model.safetensors.index.json",
         "{\"weight_map\":{\"x\":\"model-00001-of-00002.safetensors\",\"y\":\"model-00001-of-00002.safetensors\","
         "\"z\":\"model-00002-of-00002.safetensors\"}}");
    mkd("ix_no_weight_map");
    shard("ix_no_weight_map/model.safetensors", "x", "y");
    text("ix_no_weight_map/model.safetensors.index.json", "{\"metadata\":{\"total_size\":16}}");
    mkd("ix_weight_map_array");
    text("ix_weight_map_array/model.safetensors.index.json", "{\"weight_map\":[\"model.safetensors\"]}");
    mkd("ix_empty_weight_map");
    text("ix_empty_weight_map/model.safetensors.index.json", "{\"weight_map\":{}}");
    mkd("ix_dotdot");
    shard("ix_dotdot/model.safetensors", "x", "y");
    text("ix_dotdot/model.safetensors.index.json",
         "{\"weight_map\":{\"x\":\"../ix_dotdot/model.safetensors\",\"y\":\"model.safetensors\"}}");
    mkd("ix_absolute");
    text("ix_absolute/model.safetensors.index.json", "{\"weight_map\":{\"x\":\"/etc/passwd\"}}");
    mkd("ix_shard_not_string");
    text("ix_shard_not_string/model.safetensors.index.json", "{\"weight_map\":{\"x\":1}}");
    mkd("ix_tensor_absent");
    shard("ix_tensor_absent/model.safetensors", "x", "y");
    text("ix_tensor_absent/model.safetensors.index.json",
         "{\"weight_map\":{\"x\":\"model.safetensors\",\"y\":\"model.safetensors\",\"w\":\"model.safetensors\"}}");
    mkd("ix_wrong_shard");
    shard("ix_wrong_shard/a.safetensors", "x", "y");
    shard("ix_wrong_shard/b.safetensors", "z", "w");
    text("ix_wrong_shard/model.safetensors.index.json",
         "{\"weight_map\":{\"x\":\"b.safetensors\",\"y\":\"a.safetensors\",\"z\":\"b.safetensors\",\"w\":\"b.safetensors\"}}");
    mkd("ix_tensor_twice");
    shard("ix_tensor_twice/a.safetensors", "x", "y");
    shard("ix_tensor_twice/b.safetensors", "x", "z");
    text("ix_tensor_twice/model.safetensors.index.json",
         "{\"weight_map\":{\"x\":\"a.safetensors\",\"y\":\"a.safetensors\",\"z\":\"b.safetensors\"}}");
    mkd("ix_not_json");
    text("ix_not_json/model.safetensors.index.json", "{\"weight_map\":");
    mkd("ix_dup_key");
    shard("ix_dup_key/model.safetensors", "x", "y");
    text("ix_dup_key/model.safetensors.index.json",
         "{\"weight_map\":{\"x\":\"model.safetensors\",\"x\":\"model.safetensors\",\"y\":\"model.safetensors\"}}");
    mkd("ix_bad_shard");
    st("ix_bad_shard/model.safetensors", "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 3);
    text("ix_bad_shard/model.safetensors.index.json", "{\"weight_map\":{\"x\":\"model.safetensors\"}}");
    mkd("ix_shard_is_dir");
    mkd("ix_shard_is_dir/model.safetensors");
    text("ix_shard_is_dir/model.safetensors.index.json", "{\"weight_map\":{\"x\":\"model.safetensors\"}}");

    /* ---- directories ---- */
    mkd("dir_empty");
    mkd("dir_no_model");
    text("dir_no_model/README.md", "# not a model\n");
    text("dir_no_model/tokenizer.json", "{}");
    mkd("dir_bad_weights");
    st("dir_bad_weights/model.safetensors", "{\"a\":" T1 "}", 7);
    mkd("dir_bad_config");
    text("dir_bad_config/config.json", "{\"model_type\": \"llama\",");

    /* ---- config.json ---- */
    mkd("cfg");
    text("cfg/invalid.json", "{\"model_type\": llama}");
    text("cfg/array.json", "[{\"model_type\": \"llama\"}]");
    text("cfg/string.json", "\"llama\"");
    put("cfg/empty.json", "", 0);
    text("cfg/bad_utf8.json", "{\"model_type\": \"ll\xe2\x28\xa1ma\"}");
    text("cfg/dup_key.json", "{\"model_type\": \"llama\", \"model_type\": \"qwen2\"}");
    {
        static char deep[20100];
        int n = snprintf(deep, sizeof deep, "{\"model_type\":\"llama\",\"x\":");
        memset(deep + n, '[', 10000);
        memset(deep + n + 10000, ']', 10000);
        deep[n + 20000] = '}';
        text("cfg/deep.json", deep);
    }
    return failed;
}
