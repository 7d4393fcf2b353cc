/* gen_gguf.c — writes the handcrafted corrupt GGUF files of
 * tests/corrupt/gguf/cases.tsv into a directory: gen_gguf DIR.
 * Each file is small and breaks one rule of ggml docs/gguf.md or of the
 * reference reader gguf.cpp (see docs/formats.md "GGUF"). */
#include "gguf_writer.h"

#include <errno.h>
#include <sys/stat.h>

static const char *dir;
static int failures;

static void out(gw *w, const char *name, uint64_t align, uint64_t data)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s.gguf", dir, name);
    if (gw_finish(w, p, align, data) != 0) {
        fprintf(stderr, "gen_gguf: cannot write %s\n", p);
        failures++;
    }
}

/* A valid start: version 3, n tensors, n kv. */
static void start(gw *w, uint64_t nt, uint64_t nkv)
{
    memset(w, 0, sizeof *w);
    gw_begin(w, 3, nt, nkv);
}

static const uint64_t ne_64[1] = {64}; /* 64 F32 = 256 bytes */

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_gguf DIR\n");
        return 2;
    }
    dir = argv[1];
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        perror(dir);
        return 1;
    }
    gw w;

    memset(&w, 0, sizeof w); /* bad magic */
    gw_raw(&w, "GGUX", 4);
    gw_u32(&w, 3);
    gw_u64(&w, 0);
    gw_u64(&w, 0);
    out(&w, "bad_magic", 1, 0);

    memset(&w, 0, sizeof w); /* header cut inside the tensor count */
    gw_raw(&w, "GGUF", 4);
    gw_u32(&w, 3);
    gw_u32(&w, 0);
    out(&w, "truncated_header", 1, 0);

    memset(&w, 0, sizeof w); /* version 1 (u32 counts) */
    gw_raw(&w, "GGUF", 4);
    gw_u32(&w, 1);
    gw_u32(&w, 0);
    gw_u32(&w, 0);
    out(&w, "version_1", 1, 0);

    memset(&w, 0, sizeof w); /* version 3 written big-endian */
    gw_raw(&w, "GGUF", 4);
    gw_raw(&w, "\0\0\0\3", 4);
    gw_u64(&w, 0);
    gw_u64(&w, 0);
    out(&w, "big_endian", 1, 0);

    start(&w, 0, 1); /* a string value claims 5000 bytes, the file has a few */
    gw_key(&w, "general.name", GW_STRING);
    gw_u64(&w, 5000);
    gw_raw(&w, "short", 5);
    out(&w, "string_length_lies", 1, 0);

    start(&w, 0, 1); /* a key length over the 1 GiB string cap */
    gw_u64(&w, (uint64_t)1 << 31);
    gw_raw(&w, "key.with.padding", 16);
    out(&w, "string_over_cap", 1, 0);

    start(&w, 0, 1); /* an array claims a million u32 */
    gw_key(&w, "x.arr", GW_ARRAY);
    gw_u32(&w, GW_U32);
    gw_u64(&w, 1000000);
    gw_u32(&w, 7);
    out(&w, "array_count_lies", 1, 0);

    start(&w, 0, 1); /* array of arrays (gguf.cpp refuses them) */
    gw_key(&w, "x.nested", GW_ARRAY);
    gw_u32(&w, GW_ARRAY);
    gw_u64(&w, 1);
    gw_u32(&w, GW_U32);
    gw_u64(&w, 1);
    gw_u32(&w, 1);
    out(&w, "nested_arrays", 1, 0);

    start(&w, 0, 1); /* value type 13 does not exist */
    gw_key(&w, "x.odd", 13);
    gw_u32(&w, 0);
    out(&w, "unknown_kv_type", 1, 0);

    start(&w, 0, 2); /* the same key twice */
    gw_kv_u32(&w, "llama.block_count", 2);
    gw_kv_u32(&w, "llama.block_count", 3);
    out(&w, "duplicate_key", 1, 0);

    start(&w, 0, 1); /* a key of zero length */
    gw_kv_u32(&w, "", 2);
    out(&w, "empty_key", 1, 0);

    start(&w, 0, 1); /* a key that is not UTF-8 */
    gw_kv_u32(&w, "bad\xff\xfekey", 2);
    out(&w, "key_not_utf8", 1, 0);

    start(&w, 0, 1); /* alignment 48: not a power of two */
    gw_kv_u32(&w, "general.alignment", 48);
    out(&w, "alignment_not_pow2", 1, 0);

    start(&w, 0, 1); /* alignment as u64: gguf.cpp requires u32 */
    gw_kv_u64(&w, "general.alignment", 32);
    out(&w, "alignment_wrong_type", 1, 0);

    start(&w, 1000000000, 0); /* a billion tensors in a few bytes */
    out(&w, "tensor_count_lies", 1, 0);

    start(&w, 1, 0); /* five dimensions, ggml has four */
    {
        uint64_t ne[5] = {32, 1, 1, 1, 1};
        gw_tensor_info(&w, "t.weight", GW_T_F32, 5, ne, 0);
    }
    out(&w, "n_dims_5", 32, 128);

    start(&w, 1, 0); /* a negative dimension */
    {
        uint64_t ne[2] = {32, (uint64_t)-4};
        gw_tensor_info(&w, "t.weight", GW_T_F32, 2, ne, 0);
    }
    out(&w, "negative_dim", 32, 128);

    start(&w, 1, 0); /* 2^32 x 2^32 elements */
    {
        uint64_t ne[2] = {(uint64_t)1 << 32, (uint64_t)1 << 32};
        gw_tensor_info(&w, "t.weight", GW_T_F32, 2, ne, 0);
    }
    out(&w, "shape_overflow", 32, 0);

    start(&w, 1, 0); /* Q4_K rows of 100 elements: blocks hold 256 */
    {
        uint64_t ne[2] = {100, 4};
        gw_tensor_info(&w, "t.weight", GW_T_Q4_K, 2, ne, 0);
    }
    out(&w, "ne0_not_block_multiple", 32, 4096);

    start(&w, 1, 0); /* ggml type 4 (Q4_2) was removed */
    gw_tensor_info(&w, "t.weight", 4, 1, ne_64, 0);
    out(&w, "removed_ggml_type", 32, 256);

    start(&w, 2, 0); /* the same tensor name twice */
    gw_tensor_info(&w, "t.weight", GW_T_F32, 1, ne_64, 0);
    gw_tensor_info(&w, "t.weight", GW_T_F32, 1, ne_64, 256);
    out(&w, "duplicate_tensor", 32, 512);

    start(&w, 2, 0); /* a 32-byte gap between contiguous tensors */
    gw_tensor_info(&w, "a.weight", GW_T_F32, 1, ne_64, 0);
    gw_tensor_info(&w, "b.weight", GW_T_F32, 1, ne_64, 288);
    out(&w, "offset_gap", 32, 544);

    start(&w, 2, 0); /* the second tensor overlaps the first */
    gw_tensor_info(&w, "a.weight", GW_T_F32, 1, ne_64, 0);
    gw_tensor_info(&w, "b.weight", GW_T_F32, 1, ne_64, 128);
    out(&w, "offset_overlap", 32, 512);

    start(&w, 1, 0); /* an offset off the 32-byte alignment */
    gw_tensor_info(&w, "a.weight", GW_T_F32, 1, ne_64, 8);
    out(&w, "offset_misaligned", 32, 512);

    start(&w, 2, 0); /* the file ends inside the second tensor's data */
    gw_tensor_info(&w, "a.weight", GW_T_F32, 1, ne_64, 0);
    gw_tensor_info(&w, "b.weight", GW_T_F32, 1, ne_64, 256);
    out(&w, "data_past_eof", 32, 300);

    memset(&w, 0, sizeof w); /* nothing at all */
    out(&w, "empty_file", 1, 0);

    start(&w, 1, 3); /* first of two shards; the second is absent */
    gw_kv_u16(&w, "split.no", 0);
    gw_kv_u16(&w, "split.count", 2);
    gw_kv_i32(&w, "split.tensors.count", 2);
    gw_tensor_info(&w, "a.weight", GW_T_F32, 1, ne_64, 0);
    out(&w, "split-00001-of-00002", 32, 256);

    return failures ? 1 : 0;
}
