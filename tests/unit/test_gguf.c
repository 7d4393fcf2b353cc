/* test_gguf.c — the GGUF reader against files written by gguf_writer.h and
 * against llama.cpp's real headers and reported buffers
 * (tests/reference/llamacpp). Expected figures are computed here from the
 * shapes and the block facts in gguf_writer.h (peers-loading.md §2.2), or
 * read from the reference data — never from the reader's own output. */
#include "../../src/cli/exit_code.h" /* the CLI's exit statuses */
#include "testutil.h"

#include "gguf_writer.h"
#include "model/model.h"

#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>

/* ---- a Llama-layout file ---- */

typedef struct layout {
    gw_tensor t[64];
    char names[64][64];
    size_t n;
} layout;

static void add(layout *L, const char *name, uint32_t type, uint32_t nd, uint64_t ne0, uint64_t ne1, uint64_t ne2)
{
    assert_true(L->n < 64);
    snprintf(L->names[L->n], sizeof L->names[0], "%s", name);
    gw_tensor *t = &L->t[L->n];
    t->name = L->names[L->n];
    t->type = type;
    t->n_dims = nd;
    t->ne[0] = ne0;
    t->ne[1] = ne1;
    t->ne[2] = ne2;
    t->ne[3] = 1;
    L->n++;
}

enum { EMBD = 4096, FF = 14336, HEADS = 32, KV = 8, HD = 128, VOCAB = 32000, LAYERS = 2 };

/* Llama-3-8B names and shapes (two blocks), mixed quantization. */
static void llama_layout(layout *L, int layer_from, int layer_to, bool ends)
{
    char n[64];
    if (ends && layer_from == 0) {
        add(L, "token_embd.weight", GW_T_Q4_K, 2, EMBD, VOCAB, 1);
    }
    for (int l = layer_from; l < layer_to; l++) {
#define ADD(suffix, type, nd, a, b)                                                                                    \
    snprintf(n, sizeof n, "blk.%d.%s", l, suffix);                                                                     \
    add(L, n, type, nd, a, b, 1)
        ADD("attn_norm.weight", GW_T_F32, 1, EMBD, 1);
        ADD("attn_q.weight", GW_T_Q4_K, 2, EMBD, EMBD);
        ADD("attn_k.weight", GW_T_Q8_0, 2, EMBD, KV * HD);
        ADD("attn_v.weight", GW_T_Q6_K, 2, EMBD, KV * HD);
        ADD("attn_output.weight", GW_T_Q4_K, 2, EMBD, EMBD);
        ADD("ffn_norm.weight", GW_T_F32, 1, EMBD, 1);
        ADD("ffn_gate.weight", GW_T_MXFP4, 2, EMBD, FF);
        ADD("ffn_up.weight", GW_T_Q4_K, 2, EMBD, FF);
        ADD("ffn_down.weight", GW_T_Q6_K, 2, FF, EMBD);
#undef ADD
    }
    if (ends && layer_to == LAYERS) {
        add(L, "output_norm.weight", GW_T_F32, 1, EMBD, 1, 1);
        add(L, "output.weight", GW_T_Q6_K, 2, EMBD, VOCAB, 1);
    }
}

static uint64_t elems(const gw_tensor *t)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < t->n_dims; d++)
        n *= t->ne[d];
    return n;
}

static void llama_kv(gw *w, uint32_t file_type)
{
    gw_kv_str(w, "general.architecture", "llama");
    gw_kv_str(w, "general.name", "Test Llama");
    gw_kv_u32(w, "general.file_type", file_type);
    gw_kv_u32(w, "llama.block_count", LAYERS);
    gw_kv_u32(w, "llama.context_length", 8192);
    gw_kv_u32(w, "llama.embedding_length", EMBD);
    gw_kv_u32(w, "llama.feed_forward_length", FF);
    gw_kv_u32(w, "llama.attention.head_count", HEADS);
    gw_kv_u32(w, "llama.attention.head_count_kv", KV);
    gw_kv_f32(w, "llama.rope.freq_base", 500000.0f);
    gw_kv_str(w, "tokenizer.ggml.model", "gpt2");
    gw_kv_tokens(w, "tokenizer.ggml.tokens", VOCAB);
}
#define LLAMA_NKV 12

static void write_llama(const char *path, uint32_t version, layout *L)
{
    llama_layout(L, 0, LAYERS, true);
    gw w = {0};
    gw_begin(&w, version, L->n, LLAMA_NKV);
    llama_kv(&w, 15);
    uint64_t data = gw_tensor_infos(&w, L->t, L->n, 32);
    assert_int_equal(gw_finish(&w, path, 32, data), 0);
}

static void check_counts(const vf_model *m, const layout *L)
{
    uint64_t params = 0, bytes = 0, q4k = 0;
    for (size_t i = 0; i < L->n; i++) {
        params += elems(&L->t[i]);
        bytes += gw_type_bytes(L->t[i].type, L->t[i].n_dims, L->t[i].ne);
        if (L->t[i].type == GW_T_Q4_K)
            q4k += gw_type_bytes(L->t[i].type, L->t[i].n_dims, L->t[i].ne);
    }
    vf_model_totals t;
    vf_model_totals_get(m, &t);
    assert_int_equal(vf_model_tensor_count(m), L->n);
    assert_int_equal(t.params, params);
    assert_int_equal(t.bytes, bytes);
    assert_int_equal(dtype_bytes_of(m, VF_DTYPE_Q4_K), q4k);
    for (size_t i = 0; i < L->n; i++) {
        const vf_tensor *x = vf_model_tensor(m, i);
        assert_string_equal(x->name, L->t[i].name);
        assert_int_equal(x->n_dims, L->t[i].n_dims);
        for (uint32_t d = 0; d < x->n_dims; d++) /* PyTorch order */
            assert_int_equal(x->shape[d], L->t[i].ne[x->n_dims - 1 - d]);
        assert_int_equal(x->n_params, elems(&L->t[i]));
        assert_int_equal(x->n_bytes, gw_type_bytes(L->t[i].type, L->t[i].n_dims, L->t[i].ne));
        assert_int_equal(vf_dtype_get(x->dtype)->gguf_id, (int32_t)L->t[i].type);
    }
}

static void test_llama_layout(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *p = tu_path(dir, "llama.gguf");
    layout L = {0};
    write_llama(p, 3, &L);
    vf_model *m = NULL;
    vf_error e = {0};
    assert_int_equal(vf_model_open(p, &m, &e), VF_OK);
    check_counts(m, &L);
    const vf_hparams *hp = vf_model_hparams(m);
    assert_string_equal(hp->architecture, "llama");
    assert_string_equal(hp->name, "Test Llama");
    assert_string_equal(hp->quant_method, "Q4_K_M");
    assert_int_equal(hp->n_layers, LAYERS);
    assert_int_equal(hp->hidden_size, EMBD);
    assert_int_equal(hp->intermediate_size, FF);
    assert_int_equal(hp->n_heads, HEADS);
    assert_int_equal(hp->n_kv_heads, KV);
    assert_int_equal(hp->head_dim, EMBD / HEADS);
    assert_int_equal(hp->vocab_size, VOCAB);
    assert_int_equal(hp->context_length, 8192);
    assert_false(hp->tie_word_embeddings);
    /* a Q4_K 4096x4096 matrix holds 16.7M weights in 4.5 bits each */
    const vf_tensor *q = vf_model_tensor(m, 2);
    assert_string_equal(q->name, "blk.0.attn_q.weight");
    assert_int_equal(q->n_params, 16777216);
    assert_int_equal(q->n_bytes, 16777216 / 256 * 144);
    assert_int_equal(q->role, VF_ROLE_ATTN_Q);
    assert_int_equal(q->layer, 0);
    /* the file: one, data after the 32-aligned header, tensors inside */
    assert_int_equal(vf_model_file_count(m), 1);
    const vf_file_info *f = vf_model_file(m, 0);
    assert_int_equal(f->alignment, 32);
    assert_int_equal(f->data_offset % 32, 0);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(f->size, (uint64_t)sb.st_size);
    assert_int_equal(f->data_offset + f->data_bytes, f->size);
    assert_int_equal(vf_model_tensor(m, 0)->offset, f->data_offset);
    /* metadata kept for lookups; the 32000-token list only as a count */
    assert_int_equal(json_integer_value(json_object_get(m->gguf_kv, "llama.attention.head_count_kv")), KV);
    json_t *tok = json_object_get(m->gguf_kv, "tokenizer.ggml.tokens");
    assert_true(json_is_object(tok));
    assert_string_equal(json_string_value(json_object_get(tok, "type")), "string");
    assert_int_equal(json_integer_value(json_object_get(tok, "count")), VOCAB);
    assert_true(fabs(json_real_value(json_object_get(m->gguf_kv, "llama.rope.freq_base")) - 500000.0) < 1e-3);
    vf_model_free(m);
    tu_rm_rf(dir);
    free(p);
    free(dir);
}

static void test_v2(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *p = tu_path(dir, "v2.gguf");
    layout L = {0};
    write_llama(p, 2, &L);
    vf_model *m = NULL;
    vf_error e = {0};
    assert_int_equal(vf_model_open(p, &m, &e), VF_OK);
    check_counts(m, &L);
    vf_model_free(m);
    tu_rm_rf(dir);
    free(p);
    free(dir);
}

/* Three shards as gguf-split writes them: metadata in the first only. */
static void write_split(const char *dir, layout *all, bool skip_third)
{
    static const int from[3] = {0, 1, 2}, to[3] = {1, 2, 2};
    size_t total = 0;
    layout parts[3];
    memset(parts, 0, sizeof parts);
    for (int s = 0; s < 3; s++) {
        llama_layout(&parts[s], from[s], to[s], s != 1); /* the last shard: output_norm + output */
        total += parts[s].n;
    }
    for (int s = 0; s < 3; s++) {
        char name[64];
        snprintf(name, sizeof name, "model-%05d-of-00003.gguf", s + 1);
        char *p = tu_path(dir, name);
        gw w = {0};
        gw_begin(&w, 3, parts[s].n, s == 0 ? LLAMA_NKV + 3 : 3);
        if (s == 0)
            llama_kv(&w, 15);
        gw_kv_u16(&w, "split.no", (uint16_t)s);
        gw_kv_u16(&w, "split.count", 3);
        gw_kv_i32(&w, "split.tensors.count", (int32_t)total);
        uint64_t data = gw_tensor_infos(&w, parts[s].t, parts[s].n, 32);
        if (!(skip_third && s == 2))
            assert_int_equal(gw_finish(&w, p, 32, data), 0);
        else
            free(w.buf);
        free(p);
        for (size_t i = 0; i < parts[s].n; i++) {
            snprintf(all->names[all->n], sizeof all->names[0], "%s", parts[s].names[i]);
            all->t[all->n] = parts[s].t[i];
            all->t[all->n].name = all->names[all->n];
            all->n++;
        }
    }
}

static void test_split(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *p = tu_path(dir, "model-00001-of-00003.gguf");
    layout L = {0};
    write_split(dir, &L, false);
    for (int by_dir = 0; by_dir < 2; by_dir++) {
        vf_model *m = NULL;
        vf_error e = {0};
        assert_int_equal(vf_model_open(by_dir ? dir : p, &m, &e), VF_OK);
        check_counts(m, &L);
        assert_int_equal(vf_model_file_count(m), 3);
        for (size_t i = 0; i < 3; i++) {
            const vf_file_info *f = vf_model_file(m, i);
            char want[64];
            snprintf(want, sizeof want, "model-%05zu-of-00003.gguf", i + 1);
            assert_true(vf__ends_with(f->path, want));
            assert_int_equal(f->alignment, 32);
            assert_int_equal(f->data_offset + f->data_bytes, f->size);
        }
        /* shard of a tensor: blk.1.* lives in the second file */
        for (size_t i = 0; i < vf_model_tensor_count(m); i++) {
            const vf_tensor *t = vf_model_tensor(m, i);
            uint32_t want = strncmp(t->name, "blk.1.", 6) == 0 ? 1 : strncmp(t->name, "output", 6) == 0 ? 2 : 0;
            assert_int_equal(t->file, want);
            assert_true(t->offset >= vf_model_file(m, t->file)->data_offset);
        }
        assert_string_equal(vf_model_hparams(m)->architecture, "llama");
        assert_int_equal(vf_model_hparams(m)->n_layers, LAYERS);
        vf_model_free(m);
    }
    tu_rm_rf(dir);
    free(p);
    free(dir);
}

static void test_split_missing_shard(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *p = tu_path(dir, "model-00001-of-00003.gguf");
    layout L = {0};
    write_split(dir, &L, true);
    vf_model *m = NULL;
    vf_error e = {0};
    assert_int_equal(vf_model_open(p, &m, &e), VF_ENOENT);
    assert_non_null(strstr(e.msg, "model-00003-of-00003.gguf' is missing"));
    assert_null(m);
    tu_rm_rf(dir);
    free(p);
    free(dir);
}

/* MoE: stacked experts carry their count; the active share follows. */
static void test_moe_experts(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *p = tu_path(dir, "moe.gguf");
    layout L = {0};
    add(&L, "token_embd.weight", GW_T_Q8_0, 2, 256, 1000, 1);
    add(&L, "blk.0.ffn_gate_inp.weight", GW_T_F32, 2, 256, 8, 1);
    add(&L, "blk.0.ffn_gate_exps.weight", GW_T_Q4_K, 3, 256, 512, 8);
    add(&L, "blk.0.ffn_up_exps.weight", GW_T_Q4_K, 3, 256, 512, 8);
    add(&L, "blk.0.ffn_down_exps.weight", GW_T_Q8_0, 3, 512, 256, 8);
    add(&L, "blk.0.ffn_up_exps.bias", GW_T_F32, 2, 512, 8, 1);
    gw w = {0};
    gw_begin(&w, 3, L.n, 5);
    gw_kv_str(&w, "general.architecture", "qwen3moe");
    gw_kv_u32(&w, "qwen3moe.block_count", 1);
    gw_kv_u32(&w, "qwen3moe.expert_count", 8);
    gw_kv_u32(&w, "qwen3moe.expert_used_count", 2);
    gw_kv_u32(&w, "qwen3moe.expert_feed_forward_length", 512);
    uint64_t data = gw_tensor_infos(&w, L.t, L.n, 32);
    assert_int_equal(gw_finish(&w, p, 32, data), 0);
    vf_model *m = NULL;
    vf_error e = {0};
    assert_int_equal(vf_model_open(p, &m, &e), VF_OK);
    check_counts(m, &L);
    const vf_hparams *hp = vf_model_hparams(m);
    assert_int_equal(hp->n_experts, 8);
    assert_int_equal(hp->n_experts_active, 2);
    assert_int_equal(hp->moe_intermediate_size, 512);
    assert_int_equal(hp->vocab_size, 1000); /* no vocab key and no token list: the embedding's rows */
    assert_true(hp->tie_word_embeddings);
    uint64_t expert_params = 0, other = 0;
    for (size_t i = 0; i < L.n; i++) {
        const vf_tensor *t = vf_model_tensor(m, i);
        if (strstr(t->name, "_exps")) {
            assert_int_equal(t->n_experts, 8);
            assert_int_equal(t->shape[0], 8);
            expert_params += elems(&L.t[i]);
        } else {
            assert_int_equal(t->n_experts, 0);
            other += elems(&L.t[i]);
        }
    }
    vf_model_totals t;
    vf_model_totals_get(m, &t);
    assert_int_equal(t.active_params, other + expert_params / 8 * 2);
    vf_model_free(m);
    tu_rm_rf(dir);
    free(p);
    free(dir);
}

/* A ggml type id newer than this build: kept, elements counted, bytes from
 * the offsets around it; the tensors after it still checked. */
static void test_unknown_type(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *p = tu_path(dir, "unknown.gguf");
    gw w = {0};
    gw_begin(&w, 3, 3, 0);
    uint64_t a[1] = {64}, b[2] = {64, 2}, c[1] = {16};
    gw_tensor_info(&w, "a.weight", GW_T_F32, 1, a, 0);    /* 256 bytes */
    gw_tensor_info(&w, "b.weight", 77, 2, b, 256);       /* unknown: 96 bytes reserved */
    gw_tensor_info(&w, "c.weight", GW_T_F32, 1, c, 352); /* 64 bytes */
    assert_int_equal(gw_finish(&w, p, 32, 352 + 64), 0);
    vf_model *m = NULL;
    vf_error e = {0};
    assert_int_equal(vf_model_open(p, &m, &e), VF_OK);
    const vf_tensor *t = vf_model_tensor(m, 1);
    assert_int_equal(t->dtype, VF_DTYPE_UNKNOWN);
    assert_int_equal(t->n_elements, 128);
    assert_int_equal(t->n_params, 128);
    assert_int_equal(t->n_bytes, 96);
    assert_int_equal(t->shape[0], 2);
    assert_int_equal(vf_model_warning_count(m), 1);
    assert_non_null(strstr(vf_model_warning(m, 0), "ggml type 77"));
    vf_model_totals tt;
    vf_model_totals_get(m, &tt);
    assert_int_equal(tt.bytes, 256 + 96 + 64);
    assert_int_equal(dtype_bytes_of(m, VF_DTYPE_UNKNOWN), 96);
    vf_model_free(m);
    tu_rm_rf(dir);
    free(p);
    free(dir);
}

/* Writes a header with only metadata (no tensors) through fn and opens it. */
static vf_model *open_kv(void (*fn)(gw *), uint64_t n_kv, const layout *L)
{
    char *dir = tu_tmpdir(), *p = tu_path(dir, "kv.gguf");
    gw w = {0};
    gw_begin(&w, 3, L ? L->n : 0, n_kv);
    fn(&w);
    uint64_t data = L ? gw_tensor_infos(&w, L->t, L->n, 32) : 0;
    assert_int_equal(gw_finish(&w, p, 32, data), 0);
    vf_model *m = NULL;
    vf_error e = {0};
    vf_status st = vf_model_open(p, &m, &e);
    if (st != VF_OK)
        fail_msg("%s", e.msg);
    tu_rm_rf(dir);
    free(p);
    free(dir);
    return m;
}

/* gemma2: llama.cpp's set_swa_pattern(2) makes every other layer sliding. */
static void kv_gemma2(gw *w)
{
    gw_kv_str(w, "general.architecture", "gemma2");
    gw_kv_u32(w, "gemma2.block_count", 6);
    gw_kv_u32(w, "gemma2.embedding_length", 2304);
    gw_kv_u32(w, "gemma2.attention.head_count", 8);
    gw_kv_u32(w, "gemma2.attention.head_count_kv", 4);
    gw_kv_u32(w, "gemma2.attention.key_length", 256);
    gw_kv_u32(w, "gemma2.attention.sliding_window", 4096);
}

static void test_gemma2_swa(void **state)
{
    (void)state;
    vf_model *m = open_kv(kv_gemma2, 7, NULL);
    const vf_hparams *hp = vf_model_hparams(m);
    assert_int_equal(hp->sliding_window, 4096);
    assert_int_equal(hp->head_dim, 256); /* key_length, not 2304/8 */
    assert_non_null(hp->layer_is_swa);
    for (uint32_t i = 0; i < 6; i++)
        assert_int_equal(hp->layer_is_swa[i], i % 2 == 0);
    vf_model_free(m);
}

/* gemma3: five sliding layers, then one global. */
static void kv_gemma3(gw *w)
{
    gw_kv_str(w, "general.architecture", "gemma3");
    gw_kv_u32(w, "gemma3.block_count", 12);
    gw_kv_u32(w, "gemma3.attention.head_count", 8);
    gw_kv_u32(w, "gemma3.attention.sliding_window", 1024);
}

static void test_gemma3_swa(void **state)
{
    (void)state;
    vf_model *m = open_kv(kv_gemma3, 4, NULL);
    const vf_hparams *hp = vf_model_hparams(m);
    static const uint8_t want[12] = {1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0};
    assert_non_null(hp->layer_is_swa);
    assert_memory_equal(hp->layer_is_swa, want, 12);
    vf_model_free(m);
}

/* Per-layer arrays: head counts (0 KV heads = a recurrent layer), FF sizes,
 * an explicit SWA bool pattern. */
static void kv_arrays(gw *w)
{
    static const uint32_t kvh[4] = {8, 8, 0, 8}, heads[4] = {32, 32, 32, 32}, ff[4] = {1024, 2048, 1024, 4096};
    static const uint8_t swa[4] = {1, 0, 0, 1};
    gw_kv_str(w, "general.architecture", "jamba");
    gw_kv_u32(w, "jamba.block_count", 4);
    gw_kv_u32(w, "jamba.embedding_length", 4096);
    gw_kv_arr_u32(w, "jamba.attention.head_count", heads, 4);
    gw_kv_arr_u32(w, "jamba.attention.head_count_kv", kvh, 4);
    gw_kv_arr_u32(w, "jamba.feed_forward_length", ff, 4);
    gw_kv_u32(w, "jamba.attention.sliding_window", 512);
    gw_kv_arr_bool(w, "jamba.attention.sliding_window_pattern", swa, 4);
    gw_kv_u32(w, "jamba.ssm.conv_kernel", 4);
    gw_kv_u32(w, "jamba.ssm.inner_size", 8192);
    gw_kv_u32(w, "jamba.ssm.state_size", 16);
}

static void test_per_layer_arrays(void **state)
{
    (void)state;
    vf_model *m = open_kv(kv_arrays, 11, NULL);
    const vf_hparams *hp = vf_model_hparams(m);
    assert_int_equal(hp->n_heads, 32);
    assert_null(hp->layer_n_heads); /* uniform */
    assert_int_equal(hp->n_kv_heads, 8);
    assert_non_null(hp->layer_n_kv_heads);
    assert_int_equal(hp->layer_n_kv_heads[2], 0);
    assert_non_null(hp->layer_no_kv);
    assert_int_equal(hp->layer_no_kv[2], 1);
    assert_int_equal(hp->layer_no_kv[1], 0);
    assert_int_equal(hp->intermediate_size, 4096);
    assert_non_null(hp->layer_ff);
    assert_int_equal(hp->layer_ff[1], 2048);
    assert_int_equal(hp->head_dim, 128);
    static const uint8_t swa[4] = {1, 0, 0, 1};
    assert_memory_equal(hp->layer_is_swa, swa, 4);
    /* llama.cpp n_embd_r + n_embd_s in f32: (4-1)*8192 + 16*8192 elements */
    assert_int_equal(hp->recurrent_state_bytes, 4 * (3 * 8192 + 16 * 8192));
    vf_model_free(m);
}

/* falcon-h1 as llama.cpp's converter writes it (Falcon-H1-7B's dimensions):
 * uniform KV heads, so no layer is marked; llama.cpp's hybrid memory for
 * LLM_ARCH_FALCON_H1 keeps KV and r/s in every layer (filter_attn and
 * filter_recr both true). r/s per layer in f32: (4 - 1) x (3072 + 2 x 1 x 256)
 * + 256 x 3072 = 797,184 elements = 3,188,736 B; KV f16 at 4,096 cells: 44 x
 * 2 x 2 KV heads x 128 x 2 B x 4,096 = 184,549,376 B. */
static void kv_falcon_h1(gw *w)
{
    gw_kv_str(w, "general.architecture", "falcon-h1");
    gw_kv_u32(w, "falcon-h1.block_count", 44);
    gw_kv_u32(w, "falcon-h1.embedding_length", 3072);
    gw_kv_u32(w, "falcon-h1.feed_forward_length", 12288);
    gw_kv_u32(w, "falcon-h1.attention.head_count", 12);
    gw_kv_u32(w, "falcon-h1.attention.head_count_kv", 2);
    gw_kv_u32(w, "falcon-h1.attention.key_length", 128);
    gw_kv_u32(w, "falcon-h1.attention.value_length", 128);
    gw_kv_u32(w, "falcon-h1.ssm.conv_kernel", 4);
    gw_kv_u32(w, "falcon-h1.ssm.inner_size", 3072);
    gw_kv_u32(w, "falcon-h1.ssm.state_size", 256);
    gw_kv_u32(w, "falcon-h1.ssm.group_count", 1);
    gw_kv_u32(w, "falcon-h1.ssm.time_step_rank", 24);
    gw_kv_u32(w, "falcon-h1.vocab_size", 130048);
}

static void test_falcon_h1_state(void **state)
{
    (void)state;
    vf_model *m = open_kv(kv_falcon_h1, 14, NULL);
    const vf_hparams *hp = vf_model_hparams(m);
    assert_null(hp->layer_no_kv); /* every layer attends */
    assert_null(hp->layer_recurrent);
    assert_int_equal(hp->recurrent_state_bytes, 3188736);
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_LLAMACPP;
    o.infer.context = 4096;
    vf_estimate e;
    vf_error err = {0};
    if (vf_estimate_run(m, &o, &e, &err) != VF_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(e.kv_cache, 184549376 + 44 * 3188736);
    vf_model_free(m);
}

/* DeepSeek-style MLA as llama.cpp's converter stores it, plus an MTP block. */
static void kv_mla(gw *w)
{
    gw_kv_str(w, "general.architecture", "deepseek2");
    gw_kv_u32(w, "deepseek2.block_count", 4);
    gw_kv_u32(w, "deepseek2.nextn_predict_layers", 1);
    gw_kv_u32(w, "deepseek2.embedding_length", 7168);
    gw_kv_u32(w, "deepseek2.attention.head_count", 128);
    gw_kv_u32(w, "deepseek2.attention.head_count_kv", 1);
    gw_kv_u32(w, "deepseek2.attention.key_length", 576);
    gw_kv_u32(w, "deepseek2.attention.value_length", 512);
    gw_kv_u32(w, "deepseek2.attention.key_length_mla", 192);
    gw_kv_u32(w, "deepseek2.attention.value_length_mla", 128);
    gw_kv_u32(w, "deepseek2.attention.q_lora_rank", 1536);
    gw_kv_u32(w, "deepseek2.attention.kv_lora_rank", 512);
    gw_kv_u32(w, "deepseek2.rope.dimension_count", 64);
    gw_kv_u32(w, "deepseek2.expert_count", 256);
    gw_kv_u32(w, "deepseek2.expert_used_count", 8);
    gw_kv_u32(w, "deepseek2.expert_shared_count", 1);
    gw_kv_u32(w, "deepseek2.leading_dense_block_count", 3);
    gw_kv_u32(w, "deepseek2.vocab_size", 129280);
}

static void test_mla(void **state)
{
    (void)state;
    layout L = {0};
    add(&L, "blk.2.attn_kv_a_mqa.weight", GW_T_F32, 2, 7168, 576, 1);
    add(&L, "blk.3.attn_kv_a_mqa.weight", GW_T_F32, 2, 7168, 576, 1);
    vf_model *m = open_kv(kv_mla, 18, &L);
    const vf_hparams *hp = vf_model_hparams(m);
    assert_int_equal(hp->n_layers, 3);
    assert_int_equal(hp->n_mtp_layers, 1);
    assert_int_equal(hp->head_dim, 192);
    assert_int_equal(hp->v_head_dim, 128);
    assert_int_equal(hp->qk_rope_head_dim, 64);
    assert_int_equal(hp->qk_nope_head_dim, 128);
    assert_int_equal(hp->q_lora_rank, 1536);
    assert_int_equal(hp->kv_lora_rank, 512);
    assert_int_equal(hp->n_kv_heads, 1);
    assert_int_equal(hp->n_shared_experts, 1);
    assert_int_equal(hp->first_k_dense, 3);
    assert_int_equal(hp->vocab_size, 129280);
    assert_int_equal(vf_model_tensor(m, 0)->flags & VF_TENSOR_MTP, 0);
    assert_int_equal(vf_model_tensor(m, 1)->flags & VF_TENSOR_MTP, VF_TENSOR_MTP);
    vf_model_free(m);
}

/* A hostile block_count must not become a 4 GiB per-layer allocation. */
static void kv_deep(gw *w)
{
    gw_kv_str(w, "general.architecture", "gemma2");
    gw_kv_u32(w, "gemma2.block_count", 4000000000u);
    gw_kv_u32(w, "gemma2.attention.sliding_window", 4096);
    gw_kv_str(w, "general.architecture.x", "mamba");
}

static void test_implausible_depth(void **state)
{
    (void)state;
    vf_model *m = open_kv(kv_deep, 4, NULL);
    const vf_hparams *hp = vf_model_hparams(m);
    assert_int_equal(hp->n_layers, 4000000000u);
    assert_null(hp->layer_is_swa);
    assert_int_equal(vf_model_warning_count(m), 1);
    assert_non_null(strstr(vf_model_warning(m, 0), "implausible"));
    vf_model_free(m);
}

/* ---- errors the unit tests pin (the full matrix is tests/cli/test_gguf_corrupt.sh) ---- */
static void expect_error(void (*fn)(gw *), const char *want)
{
    char *dir = tu_tmpdir(), *p = tu_path(dir, "bad.gguf");
    gw w = {0};
    fn(&w);
    assert_int_equal(gw_finish_raw(&w, p), 0);
    vf_model *m = NULL;
    vf_error e = {0};
    vf_status st = vf_model_open(p, &m, &e);
    assert_int_equal(st, e.status);
    assert_int_equal(vf_status_exit_code(st), 3);
    assert_null(m);
    if (!strstr(e.msg, want))
        fail_msg("'%s' lacks '%s'", e.msg, want);
    assert_true(strncmp(e.msg, p, strlen(p)) == 0);
    tu_rm_rf(dir);
    free(p);
    free(dir);
}

static void bad_v1(gw *w) { gw_begin(w, 1, 0, 0); }
static void bad_nested(gw *w)
{
    gw_begin(w, 3, 0, 1);
    gw_key(w, "a", GW_ARRAY);
    gw_u32(w, GW_ARRAY);
    gw_u64(w, 1);
}
static void bad_array_lies(gw *w)
{
    gw_begin(w, 3, 0, 1);
    gw_key(w, "a", GW_ARRAY);
    gw_u32(w, GW_U64);
    gw_u64(w, (uint64_t)1 << 20);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error(bad_v1, "unsupported gguf version 1");
    expect_error(bad_nested, "nested arrays");
    expect_error(bad_array_lies, "runs past the end of the file");
}

/* ---- llama.cpp's real headers and its own figures ---- */

static const char *ref_dir(void)
{
    const char *r = getenv("VF_REFERENCE");
    if (r)
        return r;
    return "tests/reference";
}

static json_t *load_results(void)
{
    char p[512];
    snprintf(p, sizeof p, "%s/llamacpp/results.json", ref_dir());
    json_error_t je;
    json_t *r = json_load_file(p, 0, &je);
    if (!r)
        fail_msg("cannot read %s: %s", p, je.text);
    return r;
}

/* Sizes of llama.cpp's vocab files the reference models copy (README: Llama-3 BPE 128256). */
static uint64_t vocab_of(const char *vocab)
{
    if (strcmp(vocab, "llama-spm") == 0)
        return 32000;
    if (strcmp(vocab, "llama-bpe") == 0)
        return 128256;
    if (strcmp(vocab, "qwen2") == 0)
        return 151936;
    fail_msg("unknown vocab %s", vocab);
    return 0;
}

static int64_t jint(const json_t *o, const char *k) { return json_integer_value(json_object_get(o, k)); }

static void test_llamacpp_heads(void **state)
{
    (void)state;
    json_t *res = load_results(), *files = json_object_get(res, "files"), *models = json_object_get(res, "models");
    char *dir = tu_tmpdir();
    const char *fname;
    json_t *fj;
    size_t checked = 0;
    json_object_foreach(files, fname, fj)
    {
        char *p = tu_grow_gguf(ref_dir(), dir, fname);
        vf_model *m = NULL;
        vf_error e = {0};
        if (vf_model_open(p, &m, &e) != VF_OK)
            fail_msg("%s", e.msg);
        vf_model_totals t;
        vf_model_totals_get(m, &t);
        const vf_hparams *hp = vf_model_hparams(m);
        /* the file's own facts (from gguf-dump) */
        assert_int_equal(vf_model_tensor_count(m), jint(fj, "n_tensors"));
        assert_int_equal(t.params, jint(fj, "n_params"));
        assert_int_equal(t.bytes, jint(fj, "tensor_data_bytes"));
        const char *dt;
        json_t *bt;
        json_object_foreach(json_object_get(fj, "by_type"), dt, bt)
        {
            vf_dtype d = vf_dtype_from_name(dt);
            assert_int_not_equal(d, VF_DTYPE_UNKNOWN);
            assert_int_equal(dtype_params_of(m, d), jint(bt, "n_elements"));
            assert_int_equal(dtype_bytes_of(m, d), jint(bt, "bytes"));
        }
        /* the tensors fill the file exactly: data offset + data bytes = file size
         * (the slimmed header's file, tests/reference/README.md: its tokenizer
         * arrays are shorter than the original's, so file_size_bytes is not it) */
        const vf_file_info *f = vf_model_file(m, 0);
        assert_true(f->size < (uint64_t)jint(fj, "file_size_bytes"));
        assert_int_equal(f->data_offset + f->data_bytes, f->size);
        /* the model's hyper-parameters as the generator set them */
        char mname[64];
        snprintf(mname, sizeof mname, "%s", fname);
        char *dash = strrchr(mname, '-');
        assert_non_null(dash);
        *dash = '\0';
        json_t *mj = json_object_get(models, mname);
        assert_non_null(mj);
        assert_string_equal(hp->architecture, json_string_value(json_object_get(mj, "arch")));
        assert_int_equal(hp->n_layers, jint(mj, "n_layer"));
        assert_int_equal(hp->hidden_size, jint(mj, "n_embd"));
        assert_int_equal(hp->n_heads, jint(mj, "n_head"));
        assert_int_equal(hp->n_kv_heads, jint(mj, "n_head_kv"));
        assert_int_equal(hp->head_dim, jint(mj, "head_dim"));
        assert_int_equal(hp->intermediate_size, jint(mj, "n_ff"));
        assert_int_equal(hp->tie_word_embeddings, json_is_true(json_object_get(mj, "tied")));
        assert_int_equal(hp->vocab_size, vocab_of(json_string_value(json_object_get(mj, "vocab"))));
        assert_int_equal(hp->n_experts, jint(mj, "n_expert"));
        if (json_object_get(mj, "n_ctx_train"))
            assert_int_equal(hp->context_length, jint(mj, "n_ctx_train"));
        json_t *sw = json_object_get(json_object_get(mj, "extra_kv"), "gemma2.attention.sliding_window");
        if (sw) {
            assert_int_equal(hp->sliding_window, json_integer_value(sw));
            for (uint32_t l = 0; l < hp->n_layers; l++) /* llama.cpp gemma2: set_swa_pattern(2) */
                assert_int_equal(hp->layer_is_swa[l], l % 2 == 0);
        }
        for (size_t i = 0; i < vf_model_tensor_count(m); i++) {
            const vf_tensor *x = vf_model_tensor(m, i);
            if (strstr(x->name, "_exps.weight"))
                assert_int_equal(x->n_experts, jint(mj, "n_expert"));
        }
        /* llama.cpp's printed figures for this file */
        size_t ri;
        json_t *run;
        bool seen = false;
        json_array_foreach(json_object_get(res, "runs"), ri, run)
        {
            if (strcmp(json_string_value(json_object_get(run, "model_file")), fname) != 0 ||
                !json_is_true(json_object_get(run, "ok")))
                continue;
            seen = true;
            /* general.file_type named as the run's quant label */
            assert_string_equal(hp->quant_method, json_string_value(json_object_get(run, "quant")));
            /* "file size = X MiB (Y BPW)": llama.cpp's sum of tensor bytes and bits per weight */
            double mib, bpw;
            const char *fs = json_string_value(json_object_get(run, "file_size_reported"));
            assert_int_equal(sscanf(fs, "%lf MiB (%lf BPW)", &mib, &bpw), 2);
            assert_true(fabs((double)t.bytes / 1048576.0 - mib) <= 0.005 + 1e-9);
            assert_true(fabs((double)t.bytes * 8.0 / (double)t.params - bpw) <= 0.005 + 1e-9);
            /* the mapped model buffer, when nothing was repacked out of it */
            json_t *bufs = json_object_get(run, "model_buffers_MiB");
            if (json_is_true(json_object_get(run, "mmap")) && json_object_size(bufs) == 1 &&
                json_object_get(bufs, "CPU_Mapped")) {
                double mapped = json_number_value(json_object_get(bufs, "CPU_Mapped"));
                assert_true(fabs((double)t.bytes / 1048576.0 - mapped) <= 0.005 + 1e-9);
            }
        }
        assert_true(seen);
        vf_model_free(m);
        unlink(p);
        free(p);
        checked++;
    }
    assert_int_equal(checked, 24);
    json_decref(res);
    tu_rm_rf(dir);
    free(dir);
}

/* A 150,000-token vocabulary: counted, not kept. */
static void kv_big_vocab(gw *w)
{
    gw_kv_str(w, "general.architecture", "qwen2");
    gw_kv_tokens(w, "tokenizer.ggml.tokens", 150000);
    gw_kv_arr_f32(w, "tokenizer.ggml.scores", 150000);
}

static void test_big_vocab(void **state)
{
    (void)state;
    vf_model *m = open_kv(kv_big_vocab, 3, NULL);
    assert_int_equal(vf_model_hparams(m)->vocab_size, 150000);
    json_t *s = json_object_get(m->gguf_kv, "tokenizer.ggml.scores");
    assert_string_equal(json_string_value(json_object_get(s, "type")), "float32");
    assert_int_equal(json_integer_value(json_object_get(s, "count")), 150000);
    vf_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_layout),   cmocka_unit_test(test_v2),
        cmocka_unit_test(test_split),          cmocka_unit_test(test_split_missing_shard),
        cmocka_unit_test(test_moe_experts),    cmocka_unit_test(test_unknown_type),
        cmocka_unit_test(test_gemma2_swa),     cmocka_unit_test(test_gemma3_swa),
        cmocka_unit_test(test_per_layer_arrays), cmocka_unit_test(test_falcon_h1_state), cmocka_unit_test(test_mla),
        cmocka_unit_test(test_errors),         cmocka_unit_test(test_llamacpp_heads),
        cmocka_unit_test(test_big_vocab),      cmocka_unit_test(test_implausible_depth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
