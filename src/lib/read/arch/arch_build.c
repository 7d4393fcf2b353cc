/* arch_build.c — the tensor-list builder the architecture families share:
 * plain parameters, and linear layers stored the way a checkpoint with the
 * given quantization_config stores them (packed words, scales, zero points).
 *
 * Layouts (PyTorch order, out x in for nn.Linear(in, out)):
 *   bitsandbytes 4-bit (Params4bit as serialised by bnb QuantState.as_dict(packed=True)):
 *     weight U8 [ceil(out*in/2), 1]; weight.absmax F32 [ceil(n/64)] (U8 with double
 *     quant, + weight.nested_absmax F32 [ceil(blocks/256)], weight.nested_quant_map
 *     F32 [256]); weight.quant_map F32 [16]; weight.quant_state.bitsandbytes__<type>
 *     U8 [length of the json it packs].
 *   bitsandbytes 8-bit (Linear8bitLt._save_to_state_dict): weight I8 [out, in],
 *     SCB F32 [out], weight_format U8 [] (kept for backward compatibility).
 *   GPTQ (auto-gptq / gptqmodel QuantLinear): qweight I32 [in*bits/32, out],
 *     qzeros I32 [groups, out*bits/32], scales F16 [groups, out], g_idx I32 [in].
 *   AWQ GEMM: qweight I32 [in, out*bits/32], qzeros I32 [groups, out*bits/32],
 *     scales F16 [groups, out].
 *   fp8 (transformers FineGrainedFP8, DeepSeek-V3): weight F8_E4M3 [out, in],
 *     weight_scale_inv F32 [ceil(out/b0), ceil(in/b1)].
 *   compressed-tensors: pack-quantized weight_packed I32 [out, in*bits/32],
 *     weight_scale [out, groups], weight_zero_point I32 [ceil(out*bits/32), groups]
 *     when asymmetric, weight_shape I64 [2]; float-/int-quantized weight F8_E4M3/I8
 *     [out, in] + weight_scale [out, 1] (channel) or [1] (tensor); nvfp4 weight_packed
 *     U8 [out, in/2] + weight_scale F8_E4M3 [out, in/16] + weight_global_scale F32 [1].
 * Packed weights carry VF_TENSOR_PACKED and n_params = out*in (the logical
 * weights); scales and zero points carry n_params = 0. */
#include "read/arch/arch.h"
#include "base/substrings.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 320

void vf__ab_fail(vf__ab *b, vf_status st, const char *fmt, ...)
{
    if (b->st != VF_OK)
        return;
    char msg[VF_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    b->st = vf__err(b->err, st, b->path, "%s", msg);
}

void vf__ab_raw(vf__ab *b, vf_dtype dt, uint32_t flags, uint64_t n_params, uint32_t nd, const uint64_t *shape,
                const char *name)
{
    if (b->st != VF_OK)
        return;
    vf_tensor t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.dtype = dt;
    t.n_dims = nd;
    t.file = VF_NO_FILE;
    t.layer = -1;
    t.n_elements = 1;
    for (uint32_t i = 0; i < nd; i++) {
        t.shape[i] = shape[i];
        if (vf__mul_overflow(t.n_elements, shape[i], &t.n_elements)) {
            vf__ab_fail(b, VF_ERANGE, "tensor '%s': element count overflows", name);
            return;
        }
    }
    if (t.n_elements == 0) {
        vf__ab_fail(b, VF_ERANGE, "tensor '%s' would be empty: a size in the config is 0", name);
        return;
    }
    vf_status st = vf_dtype_bytes(dt, t.n_elements, &t.n_bytes);
    if (st != VF_OK) {
        vf__ab_fail(b, VF_ERANGE, "tensor '%s': byte size out of range", name);
        return;
    }
    t.flags = flags | b->flags;
    vf_tensor *d = vf__model_add_tensor(b->m, &t);
    if (!d) {
        vf__ab_fail(b, VF_ENOMEM, "out of memory or too many tensors");
        return;
    }
    /* packed words and quantization side data: the caller states the weights */
    if ((flags & VF_TENSOR_PACKED) || n_params != UINT64_MAX)
        d->n_params = n_params == UINT64_MAX ? 0 : n_params;
}

/* Scales, zero points and other side data: stored, no weights of their own. */
static void aux(vf__ab *b, vf_dtype dt, uint32_t nd, const uint64_t *shape, const char *name)
{
    vf__ab_raw(b, dt, 0, 0, nd, shape, name);
}

/* A large MoE's config names ~100k tensors, nearly all from "%s", "%u" and
 * "%llu" pieces: those are written here without vsnprintf's machinery (a third of
 * the time a DeepSeek-V3 inspect took). false: a conversion it does not know,
 * or a name past cap; the caller then formats with vsnprintf. */
static bool name_format(char *out, size_t cap, const char *fmt, va_list ap)
{
    size_t k = 0;
    for (const char *f = fmt; *f; f++) {
        if (*f != '%') {
            if (k + 1 >= cap)
                return false;
            out[k++] = *f;
        } else if (f[1] == 's') {
            const char *s = va_arg(ap, const char *);
            size_t n = strlen(s);
            if (k + n >= cap)
                return false;
            memcpy(out + k, s, n);
            k += n;
            f++;
        } else if (f[1] == 'u' || (f[1] == 'l' && f[2] == 'l' && f[3] == 'u')) {
            unsigned long long v = f[1] == 'u' ? va_arg(ap, unsigned) : va_arg(ap, unsigned long long);
            if (f[1] == 'l')
                f += 2;
            char d[24];
            size_t n = 0;
            do
                d[n++] = (char)('0' + v % 10);
            while ((v /= 10) != 0);
            if (k + n >= cap)
                return false;
            while (n)
                out[k++] = d[--n];
            f++;
        } else {
            return false;
        }
    }
    out[k] = '\0';
    return true;
}

/* vsnprintf, by the fast path where it can. */
static VF_PRINTF(3, 0) void format_name(char *out, size_t cap, const char *fmt, va_list ap)
{
    va_list fast;
    va_copy(fast, ap);
    bool done = name_format(out, cap, fmt, fast);
    va_end(fast);
    if (!done)
        vsnprintf(out, cap, fmt, ap);
}

/* pre + suffix, as snprintf("%s<suffix>") would write it (truncated to cap). */
static void name_join(char *out, size_t cap, const char *pre, const char *suffix)
{
    size_t a = strlen(pre), c = strlen(suffix);
    if (a >= cap)
        a = cap - 1;
    memcpy(out, pre, a);
    if (c > cap - 1 - a)
        c = cap - 1 - a;
    memcpy(out + a, suffix, c);
    out[a + c] = '\0';
}

void vf__ab_name(char *out, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    format_name(out, cap, fmt, ap);
    va_end(ap);
}

static VF_PRINTF(4, 0) void vparam(vf__ab *b, uint32_t nd, const uint64_t *shape, const char *fmt, va_list ap)
{
    char name[NAME_MAX_LEN];
    format_name(name, sizeof name, fmt, ap);
    vf__ab_raw(b, b->dt, 0, UINT64_MAX, nd, shape, name);
}

void vf__ab_param(vf__ab *b, uint64_t d0, uint64_t d1, const char *fmt, ...)
{
    uint64_t s[2] = {d0, d1};
    va_list ap;
    va_start(ap, fmt);
    vparam(b, d1 ? 2 : 1, s, fmt, ap);
    va_end(ap);
}

void vf__ab_layernorm(vf__ab *b, uint64_t n, const char *fmt, ...)
{
    char pre[NAME_MAX_LEN - 8];
    va_list ap;
    va_start(ap, fmt);
    format_name(pre, sizeof pre, fmt, ap);
    va_end(ap);
    vf__ab_param(b, n, 0, "%s.weight", pre);
    vf__ab_param(b, n, 0, "%s.bias", pre);
}

void vf__ab_param3(vf__ab *b, uint64_t d0, uint64_t d1, uint64_t d2, const char *fmt, ...)
{
    uint64_t s[3] = {d0, d1, d2};
    va_list ap;
    va_start(ap, fmt);
    vparam(b, 3, s, fmt, ap);
    va_end(ap);
}

static uint64_t ceil_div(uint64_t a, uint64_t d) { return d ? a / d + (a % d != 0) : a; }

/* The compiled form of a "re:" pattern, anchored at the start as
 * compressed-tensors' re.match; NULL when it does not compile or the cache
 * is full (then the pattern matches nothing). */
static const regex_t *compiled(vf__ab *b, const char *pat)
{
    for (size_t i = 0; i < b->n_rx; i++)
        if (b->rx[i].pat == pat)
            return b->rx[i].ok ? &b->rx[i].rx : NULL;
    if (b->n_rx >= VF_AB_MAX_RX)
        return NULL;
    vf__ab_rx *r = &b->rx[b->n_rx++];
    r->pat = pat;
    const char *re = pat + 3;
    size_t n = strlen(re);
    char anchored[600];
    r->ok = n > 0 && n <= 512 && (size_t)snprintf(anchored, sizeof anchored, "^(%s)", re) < sizeof anchored &&
            regcomp(&r->rx, anchored, REG_EXTENDED | REG_NOSUB) == 0;
    return r->ok ? &r->rx : NULL;
}

static void skip_free(struct vf__ab_skipidx *x);

void vf__ab_done(vf__ab *b)
{
    for (size_t i = 0; i < b->n_rx; i++)
        if (b->rx[i].ok)
            regfree(&b->rx[i].rx);
    b->n_rx = 0;
    for (int i = 0; i < 2; i++) {
        skip_free(b->skipidx[i]);
        b->skipidx[i] = NULL;
    }
}

/* One pattern of modules_to_not_convert / ignore: "re:REGEX", a glob with
 * '*', or a substring of the module name (transformers' bitsandbytes / fp8
 * replacement rule). */
static bool pattern_matches(vf__ab *b, const char *pat, const char *module)
{
    if (strncmp(pat, "re:", 3) == 0) {
        const regex_t *rx = compiled(b, pat);
        return rx && regexec(rx, module, 0, NULL, 0) == 0;
    }
    if (strchr(pat, '*') || strchr(pat, '?') || strchr(pat, '[')) {
        if (fnmatch(pat, module, 0) == 0)
            return true;
        char sub[600];
        if ((size_t)snprintf(sub, sizeof sub, "%s.*", pat) >= sizeof sub)
            return false;
        return fnmatch(sub, module, 0) == 0;
    }
    return pat[0] && strstr(module, pat) != NULL;
}

/* At most this many entries of a list are consulted, and this many bytes of
 * its plain names indexed (real lists name every router and norm of a model:
 * GLM-4.5-FP8 839 names, 42 KB); a list past them has its first
 * MAX_ONE_BY_ONE names tried one by one. The bounds keep hostile lists cheap. */
#define MAX_PATTERNS 4096
#define MAX_PLAIN_BYTES (1u << 18)
#define MAX_ONE_BY_ONE 512

static bool is_plain(const char *pat) { return strncmp(pat, "re:", 3) != 0 && !strpbrk(pat, "*?["); }

/*
 * A list's plain names, for the substring rule without one strstr per name:
 * an FP8 checkpoint's list names every router (Qwen3-Next-80B-A3B-FP8: 407
 * names) and is asked for each of its ~73k linears, which was most of its
 * inspect; one Aho–Corasick pass over the module's name answers for all.
 */
typedef struct vf__ab_skipidx {
    const json_t *list; /* the list indexed */
    bool other;         /* re: or glob patterns too, tried one by one */
    vf__substrings *plain; /* NULL: the names one by one */
} vf__ab_skipidx;

static void skip_free(vf__ab_skipidx *x)
{
    if (x)
        vf__substrings_free(x->plain);
    free(x);
}

/* NULL (no memory): the caller matches name by name. */
static vf__ab_skipidx *skip_index(vf__ab *b, int which, const json_t *list)
{
    if (b->skipidx[which] && b->skipidx[which]->list == list)
        return b->skipidx[which];
    skip_free(b->skipidx[which]);
    vf__ab_skipidx *x = b->skipidx[which] = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->list = list;
    size_t n = json_array_size(list), bytes = 0;
    for (size_t i = 0; i < n && i < MAX_PATTERNS; i++) {
        const char *p = json_string_value(json_array_get(list, i));
        if (p && is_plain(p))
            bytes += strlen(p) < MAX_PLAIN_BYTES ? strlen(p) : MAX_PLAIN_BYTES;
    }
    x->plain = bytes && bytes <= MAX_PLAIN_BYTES ? vf__substrings_new(bytes) : NULL;
    for (size_t i = 0; i < n && i < MAX_PATTERNS; i++) {
        const char *p = json_string_value(json_array_get(list, i));
        if (!p || !p[0])
            continue; /* pattern_matches: an empty name matches nothing */
        if (!is_plain(p))
            x->other = true;
        else if (x->plain && !vf__substrings_add(x->plain, p, strlen(p))) {
            vf__substrings_free(x->plain); /* cannot happen: the bytes were counted */
            x->plain = NULL;
        }
    }
    return x;
}

static bool list_matches(vf__ab *b, int which, const json_t *list, const char *module)
{
    if (json_is_string(list))
        return pattern_matches(b, json_string_value(list), module);
    if (!json_is_array(list))
        return false;
    vf__ab_skipidx *x = skip_index(b, which, list);
    bool indexed = x && x->plain;
    if (indexed && vf__substrings_any(x->plain, module))
        return true;
    if (indexed && !x->other)
        return false;
    size_t n = json_array_size(list), tried = 0;
    for (size_t i = 0; i < n && i < MAX_PATTERNS && tried < MAX_ONE_BY_ONE; i++) {
        const char *p = json_string_value(json_array_get(list, i));
        if (!p || (indexed && is_plain(p)))
            continue;
        if (pattern_matches(b, p, module))
            return true;
        tried++;
    }
    return false;
}

/* Whether module name is excluded from quantization (modules_to_not_convert,
 * ignore, llm_int8_skip_modules; lm_head always). */
static bool ab_keep_precision(vf__ab *b, const char *module)
{
    if (b->q.kind == VF_Q_NONE)
        return true;
    /* the output head stays in high precision in every method's default */
    if (strstr(module, "lm_head") || strstr(module, "embed_out") || strstr(module, "shared_head.head"))
        return true;
    return list_matches(b, 0, b->q.skip, module) || list_matches(b, 1, b->q.skip2, module);
}

/* bitsandbytes packs the non-tensor part of the quant state as json text:
 * json.dumps({"quant_type", "blocksize", "dtype", "shape"[, "nested_blocksize",
 * "nested_dtype", "nested_offset"]}).encode(). nested_offset is a float whose
 * repr length varies with the data; 20 characters is typical (documented). */
static uint64_t bnb_state_len(const vf__ab *b, uint64_t out, uint64_t in)
{
    const char *dt = b->dt == VF_DTYPE_F16 ? "float16" : b->dt == VF_DTYPE_F32 ? "float32" : "bfloat16";
    char buf[512];
    int n = snprintf(buf, sizeof buf,
                     "{\"quant_type\": \"%s\", \"blocksize\": 64, \"dtype\": \"%s\", \"shape\": [%llu, %llu]%s}",
                     b->q.bnb_type, dt, (unsigned long long)out, (unsigned long long)in,
                     b->q.bnb_double
                         ? ", \"nested_blocksize\": 256, \"nested_dtype\": \"float32\", \"nested_offset\": "
                           "0.012345678901234567"
                         : "");
    return n > 0 ? (uint64_t)n : 1;
}

static void linear_quant(vf__ab *b, const char *pre, uint64_t out, uint64_t in)
{
    char name[NAME_MAX_LEN];
    uint64_t w;
    if (vf__mul_overflow(out, in, &w)) {
        vf__ab_fail(b, VF_ERANGE, "%s: weight size overflows", pre);
        return;
    }
    const vf__quant *q = &b->q;
    switch (q->kind) {
    case VF_Q_BNB4: {
        uint64_t blocks = ceil_div(w, 64);
        name_join(name, sizeof name, pre, ".weight");
        vf__ab_raw(b, VF_DTYPE_U8, VF_TENSOR_PACKED, w, 2, (uint64_t[]){ceil_div(w, 2), 1}, name);
        name_join(name, sizeof name, pre, ".weight.absmax");
        aux(b, q->bnb_double ? VF_DTYPE_U8 : VF_DTYPE_F32, 1, &blocks, name);
        name_join(name, sizeof name, pre, ".weight.quant_map");
        aux(b, VF_DTYPE_F32, 1, (uint64_t[]){16}, name);
        if (q->bnb_double) {
            name_join(name, sizeof name, pre, ".weight.nested_absmax");
            aux(b, VF_DTYPE_F32, 1, (uint64_t[]){ceil_div(blocks, 256)}, name);
            name_join(name, sizeof name, pre, ".weight.nested_quant_map");
            aux(b, VF_DTYPE_F32, 1, (uint64_t[]){256}, name);
        }
        snprintf(name, sizeof name, "%s.weight.quant_state.bitsandbytes__%s", pre, q->bnb_type);
        aux(b, VF_DTYPE_U8, 1, (uint64_t[]){bnb_state_len(b, out, in)}, name);
        break;
    }
    case VF_Q_BNB8:
        name_join(name, sizeof name, pre, ".weight");
        vf__ab_raw(b, VF_DTYPE_I8, 0, w, 2, (uint64_t[]){out, in}, name);
        name_join(name, sizeof name, pre, ".SCB");
        aux(b, VF_DTYPE_F32, 1, &out, name);
        name_join(name, sizeof name, pre, ".weight_format");
        aux(b, VF_DTYPE_U8, 0, (uint64_t[]){1}, name);
        break;
    case VF_Q_GPTQ:
    case VF_Q_AWQ: {
        uint64_t g = q->group ? ceil_div(in, q->group) : 1, pack = 32 / q->bits;
        if (q->kind == VF_Q_GPTQ) {
            name_join(name, sizeof name, pre, ".qweight");
            vf__ab_raw(b, VF_DTYPE_I32, VF_TENSOR_PACKED, w, 2, (uint64_t[]){ceil_div(in * q->bits, 32), out}, name);
        } else {
            name_join(name, sizeof name, pre, ".qweight");
            vf__ab_raw(b, VF_DTYPE_I32, VF_TENSOR_PACKED, w, 2, (uint64_t[]){in, ceil_div(out, pack)}, name);
        }
        name_join(name, sizeof name, pre, ".qzeros");
        aux(b, VF_DTYPE_I32, 2, (uint64_t[]){g, ceil_div(out * q->bits, 32)}, name);
        name_join(name, sizeof name, pre, ".scales");
        aux(b, VF_DTYPE_F16, 2, (uint64_t[]){g, out}, name);
        if (q->kind == VF_Q_GPTQ) {
            name_join(name, sizeof name, pre, ".g_idx");
            aux(b, VF_DTYPE_I32, 1, &in, name);
        }
        break;
    }
    case VF_Q_FP8:
        name_join(name, sizeof name, pre, ".weight");
        vf__ab_raw(b, VF_DTYPE_F8_E4M3, 0, w, 2, (uint64_t[]){out, in}, name);
        if (q->block[0] && q->block[1]) {
            name_join(name, sizeof name, pre, ".weight_scale_inv");
            aux(b, VF_DTYPE_F32, 2, (uint64_t[]){ceil_div(out, q->block[0]), ceil_div(in, q->block[1])}, name);
        } else {
            name_join(name, sizeof name, pre, ".weight_scale");
            aux(b, VF_DTYPE_F32, 0, (uint64_t[]){1}, name);
        }
        if (q->static_input) {
            name_join(name, sizeof name, pre, ".input_scale");
            aux(b, VF_DTYPE_F32, 0, (uint64_t[]){1}, name);
        }
        break;
    case VF_Q_CT: {
        uint64_t g = q->group ? ceil_div(in, q->group) : 1;
        if (q->ct_format == VF_CT_PACK) {
            name_join(name, sizeof name, pre, ".weight_packed");
            vf__ab_raw(b, VF_DTYPE_I32, VF_TENSOR_PACKED, w, 2, (uint64_t[]){out, ceil_div(in * q->bits, 32)}, name);
            name_join(name, sizeof name, pre, ".weight_scale");
            aux(b, b->dt, 2, (uint64_t[]){out, g}, name);
            if (!q->sym) {
                name_join(name, sizeof name, pre, ".weight_zero_point");
                aux(b, VF_DTYPE_I32, 2, (uint64_t[]){ceil_div(out * q->bits, 32), g}, name);
            }
            name_join(name, sizeof name, pre, ".weight_shape");
            aux(b, VF_DTYPE_I64, 1, (uint64_t[]){2}, name);
        } else if (q->ct_format == VF_CT_NVFP4) {
            name_join(name, sizeof name, pre, ".weight_packed");
            vf__ab_raw(b, VF_DTYPE_U8, VF_TENSOR_PACKED, w, 2, (uint64_t[]){out, ceil_div(in, 2)}, name);
            name_join(name, sizeof name, pre, ".weight_scale");
            aux(b, VF_DTYPE_F8_E4M3, 2, (uint64_t[]){out, ceil_div(in, 16)}, name);
            name_join(name, sizeof name, pre, ".weight_global_scale");
            aux(b, VF_DTYPE_F32, 1, (uint64_t[]){1}, name);
            name_join(name, sizeof name, pre, ".input_global_scale");
            aux(b, VF_DTYPE_F32, 1, (uint64_t[]){1}, name);
        } else {
            name_join(name, sizeof name, pre, ".weight");
            vf__ab_raw(b, q->ct_format == VF_CT_FLOAT ? VF_DTYPE_F8_E4M3 : VF_DTYPE_I8, 0, w, 2,
                       (uint64_t[]){out, in}, name);
            name_join(name, sizeof name, pre, ".weight_scale");
            if (q->per_tensor)
                aux(b, VF_DTYPE_F32, 1, (uint64_t[]){1}, name);
            else
                aux(b, b->dt, 2, (uint64_t[]){out, g}, name);
            if (!q->sym) {
                name_join(name, sizeof name, pre, ".weight_zero_point");
                aux(b, VF_DTYPE_I8, 2, (uint64_t[]){out, g}, name);
            }
            if (q->static_input) {
                name_join(name, sizeof name, pre, ".input_scale");
                aux(b, VF_DTYPE_F32, 1, (uint64_t[]){1}, name);
            }
        }
        break;
    }
    default: /* mxfp4 quantizes only gpt-oss experts (arch_decoder.c) */
        name_join(name, sizeof name, pre, ".weight");
        vf__ab_raw(b, b->dt, 0, UINT64_MAX, 2, (uint64_t[]){out, in}, name);
        break;
    }
}

void vf__ab_linear(vf__ab *b, unsigned flags, uint64_t out, uint64_t in, const char *fmt, ...)
{
    if (b->st != VF_OK)
        return;
    char pre[NAME_MAX_LEN - 64];
    va_list ap;
    va_start(ap, fmt);
    format_name(pre, sizeof pre, fmt, ap);
    va_end(ap);
    if ((flags & VF_LIN_NOQUANT) || b->q.kind == VF_Q_MXFP4 || ab_keep_precision(b, pre))
        vf__ab_param(b, out, in, "%s.weight", pre);
    else
        linear_quant(b, pre, out, in);
    if (flags & VF_LIN_BIAS) {
        /* GPTQ/AWQ kernels keep the bias in half precision like the scales */
        vf__ab_param(b, out, 0, "%s.bias", pre);
    }
}
