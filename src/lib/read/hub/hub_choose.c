/* hub_choose.c — which file of a repository to read first.
 *
 * Safetensors first, as transformers loads them (modeling_utils: the
 * sharded index, else model.safetensors); a Mistral-format
 * consolidated.safetensors is read only when no HF-format set is there, so
 * a repository shipping both is not counted twice. A GGUF repository: the
 * quantization tag picks the file as llama.cpp's "-hf repo:TAG" does (the
 * tag in the file name, case-insensitive; Q4_K_M when no tag is given; a
 * split by its first part; mmproj files are projectors, never the model). */
#include "read/hub/hub.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *base_name(const char *s)
{
    const char *slash = strrchr(s, '/');
    return slash ? slash + 1 : s;
}

/* strcasestr is a GNU extension: the portable few lines instead */
static const char *find_nocase(const char *hay, const char *needle)
{
    size_t k = strlen(needle);
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, k) == 0)
            return hay;
    return NULL;
}

static bool has_name(char *const *files, size_t n, const char *want, const char **pick)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(files[i], want) == 0) {
            *pick = files[i];
            return true;
        }
    return false;
}

/* A GGUF that is a model and not the 2nd..Nth part of a split. */
static bool gguf_candidate(const char *f)
{
    size_t n = strlen(f);
    if (n < 5 || strcasecmp(f + n - 5, ".gguf") != 0 || find_nocase(base_name(f), "mmproj"))
        return false;
    const char *of = strstr(f, "-of-");
    return !of || (of - f >= 6 && strncmp(of - 6, "-00001", 6) == 0);
}

/* The tag appears in the name with no letter, digit or '_' right after it
 * ("Q4_K" does not match "Q4_K_M"). */
static bool tag_in(const char *f, const char *tag)
{
    size_t k = strlen(tag);
    for (const char *p = find_nocase(f, tag); p; p = find_nocase(p + 1, tag)) {
        char c = p[k];
        bool word_end = !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_');
        char b = p > f ? p[-1] : '-';
        bool word_start = !((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9'));
        if (word_end && word_start)
            return true;
    }
    return false;
}

static vf_status choose_gguf(char *const *files, size_t n, const char *quant, const char *label, const char **pick,
                             vf_error *err)
{
    const char *tag = quant && *quant ? quant : "Q4_K_M";
    size_t all = 0, hits = 0;
    const char *any = NULL, *hit = NULL;
    char list[600] = "";
    for (size_t i = 0; i < n; i++) {
        if (!gguf_candidate(files[i]))
            continue;
        all++;
        any = files[i];
        if (tag_in(base_name(files[i]), tag)) {
            hits++;
            hit = files[i];
        }
    }
    if (hits == 1 || (hits == 0 && all == 1 && !(quant && *quant))) {
        *pick = hits == 1 ? hit : any;
        return VF_OK;
    }
    if (all == 0)
        return vf__err(err, VF_ENOENT, label, "no model files (config.json, *.safetensors, *.gguf) in the repository");
    bool none = hits == 0;
    for (size_t i = 0; i < n; i++)
        if (gguf_candidate(files[i]) && (none || tag_in(base_name(files[i]), tag))) {
            size_t at = strlen(list);
            snprintf(list + at, sizeof list - at, "%s%s", at ? ", " : "", files[i]);
        }
    if (none && quant && *quant)
        return vf__err(err, VF_EINVAL, label, "no gguf file matches ':%s'; the repository has: %s", quant, list);
    return vf__err(err, VF_EINVAL, label, "%s gguf files%s%s; name one with :QUANT or --file: %s",
                   none ? "several" : "ambiguous:", none ? "" : " match ", none ? "" : tag, list);
}

vf_status vf__hub_choose(char *const *files, size_t n, const char *quant, const char *file, const char *label,
                         const char **pick, vf_error *err)
{
    *pick = NULL;
    if (file && *file) {
        if (has_name(files, n, file, pick))
            return VF_OK;
        return vf__err(err, VF_ENOENT, label, "the repository has no file '%s'", file);
    }
    if (quant && *quant)
        return choose_gguf(files, n, quant, label, pick, err);
    if (has_name(files, n, "model.safetensors.index.json", pick) || has_name(files, n, "model.safetensors", pick) ||
        has_name(files, n, "consolidated.safetensors", pick))
        return VF_OK;
    bool gguf = false;
    for (size_t i = 0; i < n && !gguf; i++)
        gguf = gguf_candidate(files[i]);
    if (gguf)
        return choose_gguf(files, n, NULL, label, pick, err);
    if (has_name(files, n, "config.json", pick))
        return VF_OK;
    return vf__err(err, VF_ENOENT, label, "no model files (config.json, *.safetensors, *.gguf) in the repository");
}
