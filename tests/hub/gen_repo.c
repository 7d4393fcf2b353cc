/* gen_repo.c — the repositories the stand-in Hub serves, generated at test
 * time as sparse files (headers, then a hole): never committed.
 *
 *   gen_repo DIR            fp8org/mixed (3 shards + index: FP8 weights with F32
 *                           block scales, BF16 first/last layers, embeddings,
 *                           norms and head), gguforg/tiny-GGUF (Q4_K_M, Q8_0 and
 *                           an mmproj), gatedorg/secret (one safetensors file)
 *   gen_repo --deepseek CONFIG DIR   deepseek-ai/DeepSeek-V3: 163 shards in its
 *                           layout (61 layers, 256 experts, MLA, the MTP layer)
 *
 * Prints "REPO PARAMS BYTES [HEADER]" per repository: the sums over the tensors
 * written, counted here as they are written (every stored element is a
 * parameter; bytes = elements x dtype size), independent of vramfit. */
#include "../../bench/benchutil.h"
#include "../unit/gguf_writer.h"

#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct st_t {
    char name[160];
    const char *dtype;
    int nd;
    uint64_t shape[4];
} st_t;

static uint64_t tot_params, tot_bytes;

static unsigned dsize(const char *d)
{
    return !strcmp(d, "F32") ? 4 : !strcmp(d, "F8_E4M3") ? 1 : 2;
}

static uint64_t elems(const st_t *t)
{
    uint64_t n = 1;
    for (int i = 0; i < t->nd; i++)
        n *= t->shape[i];
    return n;
}

static void mkdirs(const char *path)
{
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    for (char *c = p + 1; *c; c++)
        if (*c == '/') {
            *c = '\0';
            mkdir(p, 0755);
            *c = '/';
        }
    mkdir(p, 0755);
}

static void put_text(const char *dir, const char *name, const char *text)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "gen_repo: %s: %s\n", p, strerror(errno));
        exit(1);
    }
}

/* One safetensors file of n tensors, contiguous, data as a hole. */
static void write_st(const char *path, const st_t *t, size_t n)
{
    size_t cap = 256 + n * 256, len = 0;
    char *h = malloc(cap + 8);
    uint64_t off = 0;
    len += (size_t)snprintf(h + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (size_t i = 0; i < n; i++) {
        uint64_t e = elems(&t[i]), b = e * dsize(t[i].dtype);
        len += (size_t)snprintf(h + len, cap - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t[i].name, t[i].dtype);
        for (int d = 0; d < t[i].nd; d++)
            len += (size_t)snprintf(h + len, cap - len, "%s%llu", d ? "," : "", (unsigned long long)t[i].shape[d]);
        len += (size_t)snprintf(h + len, cap - len, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                                (unsigned long long)(off + b));
        off += b;
        tot_params += e;
        tot_bytes += b;
    }
    len += (size_t)snprintf(h + len, cap - len, "}");
    FILE *f = fopen(path, "wb");
    size_t hl = f ? st_write_header(f, h, len) : 0;
    if (!hl || fflush(f) != 0 || ftruncate(fileno(f), (off_t)(8 + hl + off)) != 0 || fclose(f) != 0) {
        fprintf(stderr, "gen_repo: %s: cannot write\n", path);
        exit(1);
    }
    free(h);
}

static st_t T(const char *dtype, int nd, uint64_t a, uint64_t b, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static st_t T(const char *dtype, int nd, uint64_t a, uint64_t b, const char *fmt, ...)
{
    st_t t = {.dtype = dtype, .nd = nd, .shape = {a, b}};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t.name, sizeof t.name, fmt, ap);
    va_end(ap);
    return t;
}

/* An FP8 linear with its 128x128-block F32 inverse scales. */
static size_t fp8(st_t *v, size_t k, uint64_t out, uint64_t in, const char *name)
{
    v[k++] = T("F8_E4M3", 2, out, in, "%s.weight", name);
    v[k++] = T("F32", 2, (out + 127) / 128, (in + 127) / 128, "%s.weight_scale_inv", name);
    return k;
}

/* ---- fp8org/mixed: a Llama of 4 layers, layers 0 and 3 kept in BF16 ---- */
static void mixed(const char *root)
{
    char dir[4096], p[4200];
    snprintf(dir, sizeof dir, "%s/fp8org/mixed", root);
    mkdirs(dir);
    put_text(dir, "config.json",
             "{\"architectures\":[\"LlamaForCausalLM\"],\"model_type\":\"llama\",\"hidden_size\":256,"
             "\"intermediate_size\":512,\"num_hidden_layers\":4,\"num_attention_heads\":4,\"num_key_value_heads\":2,"
             "\"head_dim\":64,\"vocab_size\":1024,\"max_position_embeddings\":4096,\"rms_norm_eps\":1e-5,"
             "\"tie_word_embeddings\":false,\"torch_dtype\":\"bfloat16\",\"quantization_config\":{\"quant_method\":"
             "\"fp8\",\"weight_block_size\":[128,128],\"modules_to_not_convert\":[\"lm_head\",\"model.layers.0.\","
             "\"model.layers.3.\"]}}\n");
    put_text(dir, "README.md", "# mixed\n");
    tot_params = tot_bytes = 0;
    st_t v[64];
    char idx[16384];
    size_t il = (size_t)snprintf(idx, sizeof idx, "{\"metadata\":{\"total_size\":TOTAL},\"weight_map\":{");
    const char *shard_of[4] = {"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                               "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors"};
    for (int s = 0; s < 3; s++) {
        size_t k = 0;
        if (s == 0)
            v[k++] = T("BF16", 2, 1024, 256, "model.embed_tokens.weight");
        for (int l = 0; l < 4; l++) {
            if (strcmp(shard_of[l], s == 0 ? shard_of[0] : s == 1 ? shard_of[1] : shard_of[3]) != 0)
                continue;
            bool bf16 = l == 0 || l == 3;
            char n[96];
            const char *proj[7] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                                   "mlp.gate_proj",    "mlp.up_proj",      "mlp.down_proj"};
            const uint64_t out[7] = {256, 128, 128, 256, 512, 512, 256}, in[7] = {256, 256, 256, 256, 256, 256, 512};
            for (int j = 0; j < 7; j++) {
                snprintf(n, sizeof n, "model.layers.%d.%s", l, proj[j]);
                if (bf16)
                    v[k++] = T("BF16", 2, out[j], in[j], "%s.weight", n);
                else
                    k = fp8(v, k, out[j], in[j], n);
            }
            v[k++] = T("BF16", 1, 256, 0, "model.layers.%d.input_layernorm.weight", l);
            v[k++] = T("BF16", 1, 256, 0, "model.layers.%d.post_attention_layernorm.weight", l);
        }
        if (s == 2) {
            v[k++] = T("BF16", 1, 256, 0, "model.norm.weight");
            v[k++] = T("BF16", 2, 1024, 256, "lm_head.weight");
        }
        const char *file = s == 0 ? shard_of[0] : s == 1 ? shard_of[1] : shard_of[3];
        snprintf(p, sizeof p, "%s/%s", dir, file);
        write_st(p, v, k);
        for (size_t i = 0; i < k; i++)
            il += (size_t)snprintf(idx + il, sizeof idx - il, "%s\"%s\":\"%s\"", il > 60 && idx[il - 1] != '{' ? "," : "",
                                   v[i].name, file);
    }
    il += (size_t)snprintf(idx + il, sizeof idx - il, "}}\n");
    char total[32], out_idx[16500];
    snprintf(total, sizeof total, "%llu", (unsigned long long)tot_bytes);
    char *at = strstr(idx, "TOTAL");
    snprintf(out_idx, sizeof out_idx, "%.*s%s%s", (int)(at - idx), idx, total, at + 5);
    put_text(dir, "model.safetensors.index.json", out_idx);
    printf("fp8org/mixed %llu %llu\n", (unsigned long long)tot_params, (unsigned long long)tot_bytes);
}

/* ---- gguforg/tiny-GGUF: one Llama in two quantizations, and a projector ---- */
/* One GGUF of the tiny Llama in quantization type; with parts > 1, the
 * part-th of a split as gguf-split names and keys it (tensors [lo, hi)). */
static void gguf_part(const char *path, uint32_t type, int part, int parts, uint64_t *params, uint64_t *bytes,
                      uint64_t *header_len)
{
    gw w = {0};
    const uint32_t H = 256, FF = 512, V = 1024, L = 2;
    gw_tensor t[2 + 9 * 2];
    char names[2 + 9 * 2][64];
    size_t n = 0;
#define ADD(nm, ty, nd, a, b)                                                                                          \
    do {                                                                                                               \
        snprintf(names[n], sizeof names[n], "%s", nm);                                                                 \
        t[n] = (gw_tensor){names[n], ty, nd, {a, b, 1, 1}};                                                            \
        n++;                                                                                                           \
    } while (0)
    ADD("token_embd.weight", type, 2, H, V);
    ADD("output_norm.weight", GW_T_F32, 1, H, 1);
    for (uint32_t l = 0; l < L; l++) {
        char nm[64];
#define LAYER(suffix, ty, nd, a, b)                                                                                    \
    snprintf(nm, sizeof nm, "blk.%u." suffix, l);                                                                      \
    ADD(nm, ty, nd, a, b)
        LAYER("attn_norm.weight", GW_T_F32, 1, H, 1);
        LAYER("attn_q.weight", type, 2, H, H);
        LAYER("attn_k.weight", type, 2, H, H / 2);
        LAYER("attn_v.weight", type, 2, H, H / 2);
        LAYER("attn_output.weight", type, 2, H, H);
        LAYER("ffn_norm.weight", GW_T_F32, 1, H, 1);
        LAYER("ffn_gate.weight", type, 2, H, FF);
        LAYER("ffn_up.weight", type, 2, H, FF);
        LAYER("ffn_down.weight", type, 2, FF, H);
    }
    /* the Q8_0 file carries a 30,000-token list: a header over 64 KiB, read
     * in steps as its reader walks it */
    bool tokens = type == GW_T_Q8_0;
    size_t lo = parts > 1 && part == 1 ? 11 : 0, hi = parts > 1 && part == 0 ? 11 : n; /* layer 1 in part 2 */
    gw_begin(&w, 3, hi - lo, (tokens ? 10u : 9u) + (parts > 1 ? 3u : 0u));
    if (tokens)
        gw_kv_tokens(&w, "tokenizer.ggml.tokens", 30000);
    if (parts > 1) {
        gw_kv_u16(&w, "split.no", (uint16_t)part);
        gw_kv_u16(&w, "split.count", (uint16_t)parts);
        gw_kv_i32(&w, "split.tensors.count", (int32_t)n);
    }
    gw_kv_str(&w, "general.architecture", "llama");
    gw_kv_str(&w, "general.name", "tiny");
    gw_kv_u32(&w, "llama.block_count", L);
    gw_kv_u32(&w, "llama.context_length", 4096);
    gw_kv_u32(&w, "llama.embedding_length", H);
    gw_kv_u32(&w, "llama.feed_forward_length", FF);
    gw_kv_u32(&w, "llama.attention.head_count", 4);
    gw_kv_u32(&w, "llama.attention.head_count_kv", 2);
    gw_kv_f32(&w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    uint64_t data = gw_tensor_infos(&w, t + lo, hi - lo, 32);
    *header_len = w.len; /* the header's bytes before the data section's padding */
    if (gw_finish(&w, path, 32, data) != 0) {
        fprintf(stderr, "gen_repo: %s: cannot write\n", path);
        exit(1);
    }
    for (size_t i = lo; i < hi; i++) {
        *params += t[i].ne[0] * t[i].ne[1];
        *bytes += gw_type_bytes(t[i].type, t[i].n_dims, t[i].ne);
    }
}

static void gguf_file(const char *path, uint32_t type, const char *tag)
{
    uint64_t params = 0, bytes = 0, header = 0;
    gguf_part(path, type, 0, 1, &params, &bytes, &header);
    if (tag)
        printf("gguforg/tiny-GGUF:%s %llu %llu %llu\n", tag, (unsigned long long)params, (unsigned long long)bytes,
               (unsigned long long)header);
}

static void tiny_gguf(const char *root)
{
    char dir[4096], p[4200];
    snprintf(dir, sizeof dir, "%s/gguforg/tiny-GGUF", root);
    mkdirs(dir);
    put_text(dir, "README.md", "# tiny\n");
    snprintf(p, sizeof p, "%s/tiny-Q4_K_M.gguf", dir);
    gguf_file(p, GW_T_Q4_K, "Q4_K_M");
    snprintf(p, sizeof p, "%s/tiny-Q8_0.gguf", dir);
    gguf_file(p, GW_T_Q8_0, "Q8_0");
    snprintf(p, sizeof p, "%s/mmproj-tiny-F16.gguf", dir);
    gguf_file(p, GW_T_F16, NULL);
    /* a split in a folder, as big GGUF repositories ship them */
    uint64_t params = 0, bytes = 0, header = 0;
    snprintf(p, sizeof p, "%s/BF16", dir);
    mkdirs(p);
    for (int part = 0; part < 2; part++) {
        snprintf(p, sizeof p, "%s/BF16/tiny-BF16-%05d-of-00002.gguf", dir, part + 1);
        gguf_part(p, GW_T_BF16, part, 2, &params, &bytes, &header);
    }
    printf("gguforg/tiny-GGUF:BF16 %llu %llu\n", (unsigned long long)params, (unsigned long long)bytes);
}

static void gated(const char *root)
{
    char dir[4096], p[4200];
    snprintf(dir, sizeof dir, "%s/gatedorg/secret", root);
    mkdirs(dir);
    tot_params = tot_bytes = 0;
    st_t v[3] = {T("BF16", 2, 512, 128, "model.embed_tokens.weight"), T("F32", 1, 128, 0, "model.norm.weight"),
                 T("F8_E4M3", 2, 128, 128, "model.layers.0.mlp.down_proj.weight")};
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    write_st(p, v, 3);
    printf("gatedorg/secret %llu %llu\n", (unsigned long long)tot_params, (unsigned long long)tot_bytes);
}

/* ---- deepseek-ai/DeepSeek-V3: 163 shards ---- */
#define DS_H 7168u
static size_t ds_layer(st_t *v, size_t k, unsigned l, bool moe)
{
    char n[128];
#define P(s) (snprintf(n, sizeof n, "model.layers.%u.%s", l, s), n)
    k = fp8(v, k, 1536, DS_H, P("self_attn.q_a_proj"));
    v[k++] = T("BF16", 1, 1536, 0, "model.layers.%u.self_attn.q_a_layernorm.weight", l);
    k = fp8(v, k, 128 * 192, 1536, P("self_attn.q_b_proj"));
    k = fp8(v, k, 576, DS_H, P("self_attn.kv_a_proj_with_mqa"));
    v[k++] = T("BF16", 1, 512, 0, "model.layers.%u.self_attn.kv_a_layernorm.weight", l);
    k = fp8(v, k, 128 * 256, 512, P("self_attn.kv_b_proj"));
    k = fp8(v, k, DS_H, 128 * 128, P("self_attn.o_proj"));
    v[k++] = T("BF16", 1, DS_H, 0, "model.layers.%u.input_layernorm.weight", l);
    v[k++] = T("BF16", 1, DS_H, 0, "model.layers.%u.post_attention_layernorm.weight", l);
    if (!moe) {
        k = fp8(v, k, 18432, DS_H, P("mlp.gate_proj"));
        k = fp8(v, k, 18432, DS_H, P("mlp.up_proj"));
        k = fp8(v, k, DS_H, 18432, P("mlp.down_proj"));
        return k;
    }
    v[k++] = T("BF16", 2, 256, DS_H, "model.layers.%u.mlp.gate.weight", l);
    v[k++] = T("F32", 1, 256, 0, "model.layers.%u.mlp.gate.e_score_correction_bias", l);
    for (unsigned e = 0; e < 256; e++) {
        char x[128];
        snprintf(x, sizeof x, "model.layers.%u.mlp.experts.%u.gate_proj", l, e);
        k = fp8(v, k, 2048, DS_H, x);
        snprintf(x, sizeof x, "model.layers.%u.mlp.experts.%u.up_proj", l, e);
        k = fp8(v, k, 2048, DS_H, x);
        snprintf(x, sizeof x, "model.layers.%u.mlp.experts.%u.down_proj", l, e);
        k = fp8(v, k, DS_H, 2048, x);
    }
    k = fp8(v, k, 2048, DS_H, P("mlp.shared_experts.gate_proj"));
    k = fp8(v, k, 2048, DS_H, P("mlp.shared_experts.up_proj"));
    k = fp8(v, k, DS_H, 2048, P("mlp.shared_experts.down_proj"));
    return k;
#undef P
}

static void deepseek(const char *config, const char *root)
{
    char dir[4096], p[4300];
    snprintf(dir, sizeof dir, "%s/deepseek-ai/DeepSeek-V3", root);
    mkdirs(dir);
    FILE *cf = fopen(config, "r");
    snprintf(p, sizeof p, "%s/config.json", dir);
    FILE *out = fopen(p, "w");
    int c;
    while (cf && out && (c = fgetc(cf)) != EOF)
        fputc(c, out);
    if (!cf || !out || fclose(out) != 0) {
        fprintf(stderr, "gen_repo: cannot copy %s\n", config);
        exit(1);
    }
    fclose(cf);
    /* all tensors in layer order, then cut into 163 shards */
    size_t cap = 100000, k = 0;
    st_t *v = malloc(cap * sizeof *v);
    v[k++] = T("BF16", 2, 129280, DS_H, "model.embed_tokens.weight");
    for (unsigned l = 0; l < 62; l++) {
        k = ds_layer(v, k, l, l >= 3);
        if (l == 61) { /* the MTP layer */
            v[k++] = T("BF16", 1, DS_H, 0, "model.layers.61.enorm.weight");
            v[k++] = T("BF16", 1, DS_H, 0, "model.layers.61.hnorm.weight");
            v[k++] = T("BF16", 2, DS_H, 2 * DS_H, "model.layers.61.eh_proj.weight");
            v[k++] = T("BF16", 1, DS_H, 0, "model.layers.61.shared_head.norm.weight");
            v[k++] = T("BF16", 2, 129280, DS_H, "model.layers.61.shared_head.head.weight");
            v[k++] = T("BF16", 2, 129280, DS_H, "model.layers.61.embed_tokens.weight");
        }
    }
    v[k++] = T("BF16", 1, DS_H, 0, "model.norm.weight");
    v[k++] = T("BF16", 2, 129280, DS_H, "lm_head.weight");
    tot_params = tot_bytes = 0;
    size_t per = (k + 162) / 163, icap = k * 200 + 256, il = 0;
    char *idx = malloc(icap);
    il += (size_t)snprintf(idx + il, icap - il, "{\"weight_map\":{");
    for (size_t s = 0, at = 0; s < 163; s++) {
        size_t n = at + per <= k ? per : k - at;
        char file[64];
        snprintf(file, sizeof file, "model-%05zu-of-000163.safetensors", s + 1);
        snprintf(p, sizeof p, "%s/%s", dir, file);
        write_st(p, v + at, n);
        for (size_t i = at; i < at + n; i++)
            il += (size_t)snprintf(idx + il, icap - il, "%s\"%s\":\"%s\"", i ? "," : "", v[i].name, file);
        at += n;
    }
    il += (size_t)snprintf(idx + il, icap - il, "}}\n");
    put_text(dir, "model.safetensors.index.json", idx);
    printf("deepseek-ai/DeepSeek-V3 %llu %llu %zu\n", (unsigned long long)tot_params, (unsigned long long)tot_bytes, k);
    free(idx);
    free(v);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--deepseek") == 0) {
        deepseek(argv[2], argv[3]);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: gen_repo DIR | gen_repo --deepseek CONFIG DIR\n");
        return 2;
    }
    mixed(argv[1]);
    tiny_gguf(argv[1]);
    gated(argv[1]);
    return 0;
}
