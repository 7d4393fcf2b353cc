/* model.c — the model description every reader fills, and vf_model_open. */
#include "internal.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const role_names[] = {
#define VF_X_(name, s) [VF_ROLE_##name] = s,
    VF_ROLE_MAP(VF_X_)
#undef VF_X_
};

const char *vf_role_name(vf_role r) { return (unsigned)r < VF_ROLE_COUNT ? role_names[r] : "other"; }

vf_model *vf__model_new(vf_format fmt, const char *source)
{
    vf_model *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->format = fmt;
    m->source = strdup(source ? source : "");
    m->hp.torch_dtype = VF_DTYPE_UNKNOWN;
    if (!m->source) {
        free(m);
        return NULL;
    }
    return m;
}

void vf__hparams_free(vf_hparams *hp)
{
    free(hp->layer_n_heads);
    free(hp->layer_n_kv_heads);
    free(hp->layer_head_dim);
    free(hp->layer_is_swa);
    free(hp->layer_no_kv);
    free(hp->layer_ff);
    hp->layer_n_heads = hp->layer_n_kv_heads = hp->layer_head_dim = NULL;
    hp->layer_is_swa = hp->layer_no_kv = NULL;
    hp->layer_ff = NULL;
}

void vf_model_free(vf_model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_strings; i++)
        free(m->strings[i]);
    free(m->strings);
    for (size_t i = 0; i < m->n_warnings; i++)
        free(m->warnings[i]);
    free(m->warnings);
    free(m->tensors);
    free(m->files);
    vf__hparams_free(&m->hp);
    json_decref(m->config);
    json_decref(m->gguf_kv);
    free(m->source);
    free(m);
}

/* Grows an array to hold one more element; false on overflow or no memory. */
static bool grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return true;
    size_t nc = *cap ? *cap * 2 : 16;
    if (nc > SIZE_MAX / elem)
        return false;
    void *p = realloc(*arr, nc * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = nc;
    return true;
}

/* Names are many (100k+ tensors) and short: they are carved from 64 KiB
 * blocks listed in m->strings rather than malloc'd one by one. */
#define VF_ARENA_BLOCK ((size_t)64 << 10)

static const char *model_strdup(vf_model *m, const char *s)
{
    size_t n = strlen(s) + 1;
    if (n > m->arena_left) {
        if (!grow((void **)&m->strings, &m->cap_strings, m->n_strings, sizeof *m->strings))
            return NULL;
        bool own = n > VF_ARENA_BLOCK / 4; /* a long one gets its own block; the current stays */
        char *b = malloc(own ? n : VF_ARENA_BLOCK);
        if (!b)
            return NULL;
        m->strings[m->n_strings++] = b;
        if (own)
            return memcpy(b, s, n);
        m->arena_next = b;
        m->arena_left = VF_ARENA_BLOCK;
    }
    char *d = memcpy(m->arena_next, s, n);
    m->arena_next += n;
    m->arena_left -= n;
    return d;
}

vf_tensor *vf__model_add_tensor(vf_model *m, const vf_tensor *t)
{
    if (m->n_tensors >= VF_MAX_TENSORS)
        return NULL;
    if (!grow((void **)&m->tensors, &m->cap_tensors, m->n_tensors, sizeof *m->tensors))
        return NULL;
    const char *name = model_strdup(m, t->name ? t->name : "");
    if (!name)
        return NULL;
    vf_tensor *d = &m->tensors[m->n_tensors++];
    *d = *t;
    d->name = name;
    if (d->n_params == 0 && !(d->flags & VF_TENSOR_PACKED))
        d->n_params = d->n_elements;
    return d;
}

uint32_t vf__model_add_file(vf_model *m, const char *path, uint64_t size)
{
    if (m->n_files >= VF_MAX_SHARDS)
        return VF_NO_FILE;
    if (!grow((void **)&m->files, &m->cap_files, m->n_files, sizeof *m->files))
        return VF_NO_FILE;
    const char *p = model_strdup(m, path);
    if (!p)
        return VF_NO_FILE;
    vf_file_info *f = &m->files[m->n_files];
    memset(f, 0, sizeof *f);
    f->path = p;
    f->size = size;
    f->alignment = 1;
    return (uint32_t)m->n_files++;
}

void vf__model_warn(vf_model *m, const char *fmt, ...)
{
    if (!grow((void **)&m->warnings, &m->cap_warnings, m->n_warnings, sizeof *m->warnings))
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *w = strdup(buf);
    if (w)
        m->warnings[m->n_warnings++] = w;
}

/* ---- accessors ---- */
vf_format vf_model_format(const vf_model *m) { return m->format; }
const char *vf_model_source(const vf_model *m) { return m->source; }
const vf_hparams *vf_model_hparams(const vf_model *m) { return &m->hp; }
size_t vf_model_tensor_count(const vf_model *m) { return m->n_tensors; }
const vf_tensor *vf_model_tensor(const vf_model *m, size_t i) { return i < m->n_tensors ? &m->tensors[i] : NULL; }
size_t vf_model_file_count(const vf_model *m) { return m->n_files; }
const vf_file_info *vf_model_file(const vf_model *m, size_t i) { return i < m->n_files ? &m->files[i] : NULL; }
size_t vf_model_warning_count(const vf_model *m) { return m->n_warnings; }
const char *vf_model_warning(const vf_model *m, size_t i) { return i < m->n_warnings ? m->warnings[i] : NULL; }

void vf_model_totals_get(const vf_model *m, vf_model_totals *t)
{
    memset(t, 0, sizeof *t);
    const vf_hparams *hp = &m->hp;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const vf_tensor *x = &m->tensors[i];
        size_t d = (unsigned)x->dtype <= VF_DTYPE_COUNT ? (size_t)x->dtype : VF_DTYPE_COUNT;
        t->elements += x->n_elements;
        t->bytes += x->n_bytes;
        t->dtype_bytes[d] += x->n_bytes;
        if (x->flags & VF_TENSOR_NOT_PARAM) {
            t->buffer_elements += x->n_elements;
            continue;
        }
        t->params += x->n_params;
        t->dtype_params[d] += x->n_params;
        if (x->flags & VF_TENSOR_MTP) {
            t->mtp_params += x->n_params;
            continue; /* not used per token in ordinary decoding */
        }
        if (x->role == VF_ROLE_EXPERT && hp->n_experts > 0 && hp->n_experts_active > 0 &&
            hp->n_experts_active < hp->n_experts)
            /* exact: expert tensors come in n_experts equal parts */
            t->active_params += x->n_params / hp->n_experts * hp->n_experts_active +
                                (x->n_params % hp->n_experts) * hp->n_experts_active / hp->n_experts;
        else
            t->active_params += x->n_params;
    }
}

/* ---- classification by name (Hugging Face and GGUF naming) ---- */

static int32_t tensor_layer_from_name(const char *name)
{
    /* the first all-digit path segment: "model.layers.12.mlp..." / "blk.3.attn_q" */
    const char *p = name;
    while (*p) {
        const char *seg = p;
        while (*p && *p != '.')
            p++;
        size_t len = (size_t)(p - seg);
        if (len > 0 && len < 9) {
            bool digits = true;
            int32_t v = 0; /* < 10^8: fits */
            for (size_t i = 0; i < len && digits; i++) {
                digits = seg[i] >= '0' && seg[i] <= '9';
                if (digits)
                    v = v * 10 + (seg[i] - '0');
            }
            if (digits && seg != name)
                return v;
        }
        if (*p)
            p++;
    }
    return -1;
}

static bool has(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

static vf_role tensor_role_from_name(const char *n)
{
    /* called for every tensor (100k+ in a large MoE): the length once, the
     * suffixes compared as constants */
    size_t len = strlen(n);
#define ENDS(lit) (len >= sizeof(lit) - 1 && memcmp(n + len - (sizeof(lit) - 1), lit, sizeof(lit) - 1) == 0)
    /* buffers that checkpoints store but that are not parameters */
    if (ENDS("rotary_emb.inv_freq") || ENDS(".attn.masked_bias") ||
        ENDS(".attn.bias") /* not c_attn.bias */ || ENDS("position_ids") || ENDS("rope_freqs.weight"))
        return VF_ROLE_BUFFER;
    /* quantization side data: scales, zeros, indices, absmax */
    if (ENDS(".scales") || ENDS(".qzeros") || ENDS(".g_idx") ||
        ENDS(".SCB") || ENDS(".absmax") || ENDS(".quant_map") ||
        ENDS(".nested_absmax") || ENDS(".nested_quant_map") ||
        has(n, ".quant_state.") || ENDS("_scale") || ENDS("_scale_inv") ||
        ENDS("_scales") || ENDS(".weight_zero_point") || ENDS(".input_scale"))
        return VF_ROLE_QUANT_AUX;
    if (has(n, "shared_expert") || has(n, "_shexp"))
        return VF_ROLE_SHARED_EXPERT;
    if (has(n, ".experts.") || has(n, "_exps"))
        return VF_ROLE_EXPERT;
    if (has(n, "shared_expert_gate"))
        return VF_ROLE_ROUTER;
    if (has(n, ".mlp.gate.") || has(n, "block_sparse_moe.gate.") || has(n, "ffn_gate_inp") ||
        has(n, "exp_probs_b") || has(n, ".router.") || has(n, "e_score_correction_bias"))
        return VF_ROLE_ROUTER;
    if (has(n, "norm") || has(n, "LayerNorm") || has(n, ".ln_") || has(n, "ln_f.") || has(n, ".ln1") ||
        has(n, ".ln2"))
        return VF_ROLE_NORM;
    if (ENDS(".bias") || ENDS("_bias") || ENDS(".sinks") ||
        ENDS("attn_sinks.weight"))
        return VF_ROLE_BIAS;
    if (has(n, "wpe.") || has(n, "position_embeddings") || has(n, "token_type_embeddings") ||
        has(n, "position_embd"))
        return VF_ROLE_POS_EMBED;
    if (has(n, "embed_tokens") || has(n, "wte.") || has(n, "word_embeddings") || has(n, "token_embd") ||
        has(n, "tok_embeddings") || has(n, "embed_in"))
        return VF_ROLE_EMBED;
    if (has(n, "lm_head") || has(n, "embed_out") || strcmp(n, "output.weight") == 0 ||
        has(n, "cls.predictions") || has(n, "shared_head.head"))
        return VF_ROLE_OUTPUT;
    if (has(n, "q_a_proj") || has(n, "q_b_proj") || has(n, "kv_a_proj") || has(n, "kv_b_proj") ||
        has(n, "attn_q_a") || has(n, "attn_q_b") || has(n, "attn_kv_a") || has(n, "attn_kv_b") ||
        has(n, "attn_k_b") || has(n, "attn_v_b"))
        return VF_ROLE_ATTN_LORA;
    if (has(n, "q_proj") || has(n, "attn_q.") || has(n, "self.query"))
        return VF_ROLE_ATTN_Q;
    if (has(n, "k_proj") || has(n, "attn_k.") || has(n, "self.key"))
        return VF_ROLE_ATTN_K;
    if (has(n, "v_proj") || has(n, "attn_v.") || has(n, "self.value"))
        return VF_ROLE_ATTN_V;
    if (has(n, "qkv_proj") || has(n, "c_attn") || has(n, "query_key_value") || has(n, "attn_qkv") ||
        has(n, "Wqkv"))
        return VF_ROLE_ATTN_QKV;
    if (has(n, "o_proj") || has(n, "attn_output") || has(n, "attn.c_proj") || has(n, "attention.dense") ||
        has(n, "attention.output.dense") || has(n, "self_attention.dense") || has(n, "out_proj"))
        return VF_ROLE_ATTN_O;
    if (has(n, "gate_up_proj"))
        return VF_ROLE_MLP_UP;
    if (has(n, "gate_proj") || has(n, "ffn_gate") || has(n, ".w1.") || has(n, "mlp.fc1"))
        return VF_ROLE_MLP_GATE;
    if (has(n, "up_proj") || has(n, "ffn_up") || has(n, "c_fc") || has(n, "dense_h_to_4h") ||
        has(n, "intermediate.dense") || has(n, ".w3.") || has(n, "fc_in"))
        return VF_ROLE_MLP_UP;
    if (has(n, "down_proj") || has(n, "ffn_down") || has(n, "mlp.c_proj") || has(n, "dense_4h_to_h") ||
        has(n, ".output.dense") || has(n, ".w2.") || has(n, "fc_out") || has(n, "mlp.fc2"))
        return VF_ROLE_MLP_DOWN;
    return VF_ROLE_OTHER;
#undef ENDS
}

void vf__model_classify(vf_model *m)
{
    const vf_hparams *hp = &m->hp;
    for (size_t i = 0; i < m->n_tensors; i++) {
        vf_tensor *t = &m->tensors[i];
        t->layer = tensor_layer_from_name(t->name);
        vf_role r = tensor_role_from_name(t->name);
        /* a bias of an expert projection is still an expert's */
        t->role = r;
        if (r == VF_ROLE_BUFFER)
            t->flags |= VF_TENSOR_NOT_PARAM;
        if (hp->n_layers > 0 && hp->n_mtp_layers > 0 && t->layer >= (int32_t)hp->n_layers)
            t->flags |= VF_TENSOR_MTP;
        if (r == VF_ROLE_EXPERT && t->n_experts == 0 && hp->n_experts > 1 && t->n_dims >= 2 &&
            t->shape[0] == hp->n_experts)
            t->n_experts = hp->n_experts;
    }
}

/* ---- opening ---- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted list of directory entries ending with suffix (malloc'd strings). */
static vf_status list_dir(const char *dir, const char *suffix, char ***out, size_t *n, vf_error *err)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return vf__err(err, VF_EIO, dir, "cannot read directory");
    char **v = NULL;
    size_t cap = 0, k = 0;
    struct dirent *e;
    vf_status st = VF_OK;
    while ((e = readdir(d)) != NULL) {
        if (!vf__ends_with(e->d_name, suffix) || e->d_name[0] == '.')
            continue;
        if (k >= VF_MAX_SHARDS || !grow((void **)&v, &cap, k, sizeof *v) || !(v[k] = strdup(e->d_name))) {
            st = vf__err(err, VF_ENOMEM, dir, "too many files");
            break;
        }
        k++;
    }
    closedir(d);
    if (st != VF_OK) {
        for (size_t i = 0; i < k; i++)
            free(v[i]);
        free(v);
        return st;
    }
    if (k > 1)
        qsort(v, k, sizeof *v, cmp_str);
    *out = v;
    *n = k;
    return VF_OK;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* Warns when the tensor list config.json implies stores a different number of
 * parameter elements (buffers excluded, packed words as stored) than the
 * weight files hold: the files stay the truth. */
static void check_sidecar_count(vf_model *m, const char *text, size_t len, const char *cfg_path)
{
    vf_model *c = vf__model_new(VF_FORMAT_CONFIG, cfg_path);
    vf_error e = {0};
    if (c && vf__hfconfig_read_text(c, text, len, cfg_path, &e) == VF_OK) {
        vf__model_classify(c);
        vf__model_classify(m);
        vf_model_totals tc, tf;
        vf_model_totals_get(c, &tc);
        vf_model_totals_get(m, &tf);
        uint64_t nc = tc.elements - tc.buffer_elements, nf = tf.elements - tf.buffer_elements;
        /* a file may store a copy of a tied head (Qwen3-0.6B does) */
        bool tied_copy = c->hp.tie_word_embeddings && nf > nc && nf - nc == c->hp.vocab_size * c->hp.hidden_size;
        if (nc != nf && !tied_copy)
            vf__model_warn(m, "%s: config.json implies %llu parameter elements, the weight files hold %llu", cfg_path,
                           (unsigned long long)nc, (unsigned long long)nf);
    }
    vf_model_free(c);
}

/* Reads config.json beside weight files into m->config and m->hp. A broken
 * config next to good weights is a warning, not a failure: the weights are
 * the truth. */
static void merge_sidecar_config(vf_model *m, const char *dir)
{
    char *cfg_path = vf__path_join(dir, "config.json");
    if (!cfg_path)
        return;
    if (vf__is_file(cfg_path)) {
        char *text = NULL;
        size_t len = 0;
        vf_error e = {0};
        if (vf__read_small_file(cfg_path, VF_MAX_CONFIG_BYTES, &text, &len, &e) == VF_OK) {
            json_t *cfg = vf__json_parse(text, len, cfg_path, &e);
            if (cfg && json_is_object(cfg)) {
                vf_hparams hp;
                memset(&hp, 0, sizeof hp);
                hp.torch_dtype = VF_DTYPE_UNKNOWN;
                if (vf__hfconfig_parse_hparams(&hp, cfg, cfg_path, &e) == VF_OK) {
                    vf__hparams_free(&m->hp);
                    m->hp = hp;
                    json_decref(m->config);
                    m->config = json_incref(cfg);
                    check_sidecar_count(m, text, len, cfg_path);
                } else {
                    vf__hparams_free(&hp);
                    vf__model_warn(m, "%s", e.msg);
                }
            } else if (cfg) {
                vf__model_warn(m, "%s: not a json object", cfg_path);
            } else {
                vf__model_warn(m, "%s", e.msg);
            }
            json_decref(cfg);
            free(text);
        } else {
            vf__model_warn(m, "%s", e.msg);
        }
    }
    free(cfg_path);
}

static vf_status read_config_file(vf_model *m, const char *path, vf_error *err)
{
    char *text = NULL;
    size_t len = 0;
    vf_status st = vf__read_small_file(path, VF_MAX_CONFIG_BYTES, &text, &len, err);
    if (st == VF_OK) {
        /* refuse malformed json here, the same way for every config reader */
        json_t *j = vf__json_parse(text, len, path, err);
        if (!j)
            st = VF_EFORMAT;
        else if (!json_is_object(j))
            st = vf__err(err, VF_EFORMAT, path, "config is not a json object");
        json_decref(j);
    }
    if (st == VF_OK)
        st = vf__hfconfig_read_text(m, text, len, path, err);
    free(text);
    return st;
}

/* A GGUF split is opened by its first shard: "-00001-of-0000N.gguf". */
static const char *first_gguf(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strstr(names[i], "-of-") || strstr(names[i], "-00001-of-"))
            return names[i];
    return n ? names[0] : NULL;
}

static vf_status open_dir(vf_model **mp, const char *dir, vf_error *err)
{
    vf_status st;
    char *p = NULL;
    char **names = NULL;
    size_t n = 0;
    vf_model *m = NULL;

    if ((p = vf__path_join(dir, "model.safetensors.index.json")) && vf__is_file(p)) {
        m = vf__model_new(VF_FORMAT_SAFETENSORS, dir);
        st = m ? vf__safetensors_read_index(m, p, err) : vf__err(err, VF_ENOMEM, dir, "out of memory");
        goto done;
    }
    free(p);
    p = NULL;
    if ((st = list_dir(dir, ".safetensors", &names, &n, err)) != VF_OK)
        goto done;
    if (n > 0) {
        m = vf__model_new(VF_FORMAT_SAFETENSORS, dir);
        if (!m) {
            st = vf__err(err, VF_ENOMEM, dir, "out of memory");
            goto done;
        }
        for (size_t i = 0; i < n && st == VF_OK; i++) {
            char *fp = vf__path_join(dir, names[i]);
            st = fp ? vf__safetensors_read(m, fp, err) : vf__err(err, VF_ENOMEM, dir, "out of memory");
            free(fp);
        }
        goto done;
    }
    free_list(names, n);
    names = NULL;
    if ((st = list_dir(dir, ".gguf", &names, &n, err)) != VF_OK)
        goto done;
    if (n > 0) {
        m = vf__model_new(VF_FORMAT_GGUF, dir);
        p = vf__path_join(dir, first_gguf(names, n));
        st = m && p ? vf__gguf_read(m, p, err) : vf__err(err, VF_ENOMEM, dir, "out of memory");
        goto done;
    }
    if ((p = vf__path_join(dir, "config.json")) && vf__is_file(p)) {
        m = vf__model_new(VF_FORMAT_CONFIG, dir);
        st = m ? read_config_file(m, p, err) : vf__err(err, VF_ENOMEM, dir, "out of memory");
        goto done;
    }
    st = vf__err(err, VF_ENOENT, dir, "no model files (config.json, *.safetensors, *.gguf) in directory");
done:
    if (st == VF_OK && m && m->format != VF_FORMAT_CONFIG)
        merge_sidecar_config(m, dir);
    free(p);
    free_list(names, n);
    if (st != VF_OK) {
        vf_model_free(m);
        m = NULL;
    }
    *mp = m;
    return st;
}

vf_status vf_model_open(const char *source, vf_model **out, vf_error *err)
{
    if (!source || !out)
        return vf__err(err, VF_EINVAL, "", "no model given");
    *out = NULL;
    vf_status st;
    vf_model *m = NULL;

    if (vf__is_dir(source)) {
        st = open_dir(&m, source, err);
    } else if (vf__is_file(source)) {
        char *dir = vf__path_dir(source);
        if (!dir)
            return vf__err(err, VF_ENOMEM, source, "out of memory");
        if (vf__ends_with(source, ".safetensors")) {
            m = vf__model_new(VF_FORMAT_SAFETENSORS, source);
            st = m ? vf__safetensors_read(m, source, err) : VF_ENOMEM;
        } else if (vf__ends_with(source, ".index.json")) {
            m = vf__model_new(VF_FORMAT_SAFETENSORS, source);
            st = m ? vf__safetensors_read_index(m, source, err) : VF_ENOMEM;
        } else if (vf__ends_with(source, ".gguf")) {
            m = vf__model_new(VF_FORMAT_GGUF, source);
            st = m ? vf__gguf_read(m, source, err) : VF_ENOMEM;
        } else if (vf__ends_with(source, ".json")) {
            m = vf__model_new(VF_FORMAT_CONFIG, source);
            st = m ? read_config_file(m, source, err) : VF_ENOMEM;
        } else {
            st = vf__err(err, VF_EUNSUPPORTED, source,
                         "unrecognised file type (expected .safetensors, .gguf, .index.json or config.json)");
        }
        if (st == VF_ENOMEM && !m)
            vf__err(err, VF_ENOMEM, source, "out of memory");
        if (st == VF_OK && m->format == VF_FORMAT_SAFETENSORS)
            merge_sidecar_config(m, dir);
        free(dir);
    } else {
        size_t len = 0;
        const char *canonical = NULL;
        const char *text = vf__catalog_config_text(source, &len, &canonical);
        if (!text) {
            const char *near[3];
            size_t nn = vf_catalog_suggest(source, near, 3);
            if (nn == 0)
                return vf__err(err, VF_ENOENT, source, "no such file, directory or catalog model");
            return vf__err(err, VF_ENOENT, source, "no such file, directory or catalog model; did you mean: %s%s%s%s%s",
                           near[0], nn > 1 ? ", " : "", nn > 1 ? near[1] : "", nn > 2 ? ", " : "",
                           nn > 2 ? near[2] : "");
        }
        m = vf__model_new(VF_FORMAT_CONFIG, canonical ? canonical : source);
        st = m ? vf__hfconfig_read_text(m, text, len, canonical ? canonical : source, err)
               : vf__err(err, VF_ENOMEM, source, "out of memory");
        if (st == VF_OK && canonical && !m->hp.name[0])
            snprintf(m->hp.name, sizeof m->hp.name, "%s", canonical);
    }
    if (st != VF_OK) {
        vf_model_free(m);
        return st;
    }
    vf__model_classify(m);
    *out = m;
    return VF_OK;
}
