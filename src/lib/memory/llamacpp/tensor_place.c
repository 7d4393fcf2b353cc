/* tensor_place.c — llama.cpp's tensor buffer overrides (-ot / --override-tensor
 * PATTERN=BUFT, --cpu-moe, --n-cpu-moe N): which buffer a weight lands in.
 * llama-model.cpp load_tensors' create_tensor tries the overrides in the
 * order given and takes the first whose pattern std::regex_search finds in
 * the tensor's GGUF name; common/arg.cpp turns --cpu-moe into the pattern
 * "\.ffn_(up|down|gate)_exps" = CPU and --n-cpu-moe N into
 * "blk\.I\.ffn_(up|down|gate)_exps" = CPU for I < N, appended where they
 * stand on the command line. Patterns here are POSIX extended expressions with
 * ECMAScript's \d, \w and \s rewritten to classes, which is the same language
 * for the patterns these flags are used with (docs/memory-model.md). */
#include "memory/llamacpp/tensor_place.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PATTERN 512

/* ECMAScript's class escapes, which POSIX lacks, rewritten; false when the
 * pattern does not fit. */
static bool to_posix(const char *p, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        const char *rep = NULL;
        char tmp[3] = {p[i], 0, 0};
        if (p[i] == '\\' && i + 1 < len) {
            switch (p[i + 1]) {
            case 'd': rep = "[0-9]"; break;
            case 'D': rep = "[^0-9]"; break;
            case 'w': rep = "[A-Za-z0-9_]"; break;
            case 'W': rep = "[^A-Za-z0-9_]"; break;
            case 's': rep = "[[:space:]]"; break;
            case 'S': rep = "[^[:space:]]"; break;
            default: tmp[1] = p[i + 1]; rep = tmp; break;
            }
            i++;
        } else {
            rep = tmp;
        }
        size_t n = strlen(rep);
        if (o + n >= cap)
            return false;
        memcpy(out + o, rep, n);
        o += n;
    }
    out[o] = '\0';
    return true;
}

/* A buffer type's name as llama.cpp prints them (ggml_backend_buft_name):
 * CPU and CUDA_Host (pinned) are host memory, DEVn (CUDA0, ROCm1, Vulkan0,
 * ...) the n-th GPU. */
static bool parse_buft(const char *s, size_t len, int *dev)
{
    if ((len == 3 && !memcmp(s, "CPU", 3)) || (len > 5 && !memcmp(s + len - 5, "_Host", 5))) {
        *dev = -1;
        return true;
    }
    size_t i = len;
    while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9')
        i--;
    if (i == 0 || i == len || len - i > 3)
        return false;
    for (size_t k = 0; k < i; k++)
        if (!((s[k] >= 'A' && s[k] <= 'Z') || (s[k] >= 'a' && s[k] <= 'z')))
            return false;
    *dev = atoi(s + i);
    return true;
}

void vf__lc_overrides_free(vf__lc_overrides *ov)
{
    for (uint32_t i = 0; i < ov->n; i++)
        regfree(&ov->rule[i].re);
    ov->n = 0;
}

vf_status vf__lc_overrides_parse(const char *spec, uint32_t n_dev, vf__lc_overrides *ov, vf_error *err)
{
    memset(ov, 0, sizeof *ov);
    if (!spec)
        return VF_OK;
    for (const char *p = spec; *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (!eq || eq == p) {
            vf__lc_overrides_free(ov);
            return vf__err(err, VF_EINVAL, "--override-tensor", "expected PATTERN=BUFFER_TYPE, got '%.*s'",
                           (int)(len > 80 ? 80 : len), p);
        }
        vf__lc_override *r = &ov->rule[ov->n];
        const char *b = eq + 1;
        size_t blen = len - (size_t)(b - p);
        if (ov->n >= VF__LC_MAX_OVERRIDES) {
            vf__lc_overrides_free(ov);
            return vf__err(err, VF_EINVAL, "--override-tensor", "at most %d overrides", VF__LC_MAX_OVERRIDES);
        }
        if (!parse_buft(b, blen, &r->dev)) {
            vf__lc_overrides_free(ov);
            return vf__err(err, VF_EINVAL, "--override-tensor",
                           "unknown buffer type '%.*s' (CPU, CUDA_Host, CUDA0, ...)", (int)(blen > 32 ? 32 : blen), b);
        }
        if (r->dev >= (int)(n_dev ? n_dev : 1) || (r->dev >= 0 && !n_dev)) {
            vf__lc_overrides_free(ov);
            return vf__err(err, VF_EINVAL, "--override-tensor", "buffer type '%.*s': there are %u GPUs",
                           (int)(blen > 32 ? 32 : blen), b, n_dev);
        }
        char pat[MAX_PATTERN];
        if (!to_posix(p, (size_t)(eq - p), pat, sizeof pat) ||
            regcomp(&r->re, pat, REG_EXTENDED | REG_NOSUB) != 0) {
            vf__lc_overrides_free(ov);
            return vf__err(err, VF_EINVAL, "--override-tensor", "pattern '%.*s' is not a regular expression vramfit reads",
                           (int)((size_t)(eq - p) > 80 ? 80 : (size_t)(eq - p)), p);
        }
        ov->n++;
        p += len;
        if (*p == '\n')
            p++;
    }
    return VF_OK;
}

/* Whether gguf_name gives t the converter's name (a checkpoint's expert in a
 * layer) rather than its own. */
static bool converted_name(const vf_model *m, const vf_tensor *t)
{
    return m->format != VF_FORMAT_GGUF && t->layer >= 0 &&
           (t->role == VF_ROLE_EXPERT || t->role == VF_ROLE_SHARED_EXPERT);
}

/* The tensor's name as llama.cpp's GGUF calls it: as stored for a GGUF file;
 * for a checkpoint, the routed and shared experts under the names its
 * converter gives them (blk.L.ffn_{gate,up,down}_{exps,shexp}.weight), any
 * other tensor its own name. */
static const char *gguf_name(const vf_model *m, const vf_tensor *t, char *buf, size_t cap)
{
    if (!converted_name(m, t))
        return t->name;
    const char *n = t->name;
    const char *which = strstr(n, "down") || strstr(n, ".w2") ? "down"
                        : strstr(n, "gate") || strstr(n, ".w1") ? "gate"
                                                                : "up";
    snprintf(buf, cap, "blk.%d.ffn_%s_%s.weight", t->layer, which, t->role == VF_ROLE_EXPERT ? "exps" : "shexp");
    return buf;
}

bool vf__lc_override_dev(const vf__lc_overrides *ov, const vf_model *m, const vf_tensor *t, int *dev)
{
    if (!ov->n)
        return false;
    char buf[96];
    const char *name = gguf_name(m, t, buf, sizeof buf);
    for (uint32_t i = 0; i < ov->n; i++)
        if (regexec(&ov->rule[i].re, name, 0, NULL, 0) == 0) {
            *dev = ov->rule[i].dev;
            return true;
        }
    return false;
}

bool vf__lc_is_routed_expert(const vf_model *m, const vf_tensor *t)
{
    /* the name gguf_name would write, read without writing it (every
     * estimate with --n-cpu-moe asks this of each of ~100k tensors):
     * blk.L.ffn_<which>_exps.weight is routed, ..._shexp.weight is not */
    if (converted_name(m, t))
        return t->role == VF_ROLE_EXPERT;
    /* ".ffn_{up,down,gate,gate_up}_" then "exps" or "chexps": every kind
     * starts ".ffn_", so one search finds each place one may start */
    static const char *const kinds[] = {"up_", "down_", "gate_", "gate_up_"};
    for (const char *p = strstr(t->name, ".ffn_"); p; p = strstr(p + 1, ".ffn_"))
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
            size_t n = strlen(kinds[i]);
            const char *rest = p + 5 + n;
            if (!strncmp(p + 5, kinds[i], n) && (!strncmp(rest, "exps", 4) || !strncmp(rest, "chexps", 6)))
                return true;
        }
    return false;
}
