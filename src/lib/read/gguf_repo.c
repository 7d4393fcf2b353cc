/* gguf_repo.c — a GGUF repository's name ("bartowski/Qwen3-8B-GGUF:Q4_K_M",
 * "unsloth/gemma-3-4b-it-GGUF:UD-Q4_K_XL", "lmstudio-community/...-GGUF",
 * "ggml-org/...-GGUF") read as its base model and the file type it names,
 * so that offline such a name is the catalog's base model priced by
 * llama-quantize's per-tensor rules (memory/parts/ggufmix.c). Names only:
 * online the Hub reads the repository's own file. */
#include "read/readers.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Ollama's and llama.cpp's default for a repository named without a type. */
#define DEFAULT_FTYPE "Q4_K_M"

/* The repository's name without "-GGUF" into out, false when it has no such
 * ending or is too long. */
static bool strip_gguf(const char *name, size_t n, char *out, size_t cap)
{
    if (n <= 5 || strncasecmp(name + n - 5, "-gguf", 5) != 0 || n - 5 >= cap)
        return false;
    memcpy(out, name, n - 5);
    out[n - 5] = '\0';
    return true;
}

/* The catalog id a repository's model name stands for: the name itself (a
 * catalog short form, "Qwen3-8B"), or bartowski's "Org_Name" as "Org/Name". */
static const char *base_of(const char *model, char *buf, size_t cap)
{
    const char *canonical = NULL;
    if (vf__catalog_config_text(model, NULL, &canonical))
        return canonical;
    const char *u = strchr(model, '_');
    if (u && u != model && u[1] && (size_t)snprintf(buf, cap, "%.*s/%s", (int)(u - model), model, u + 1) < cap &&
        vf__catalog_config_text(buf, NULL, &canonical))
        return canonical;
    return NULL;
}

bool vf__gguf_repo_resolve(const char *source, vf__gguf_repo *out)
{
    memset(out, 0, sizeof *out);
    const char *slash = source ? strchr(source, '/') : NULL;
    if (!slash || slash == source || strchr(slash + 1, '/'))
        return false;
    const char *name = slash + 1, *colon = strchr(name, ':');
    size_t n = colon ? (size_t)(colon - name) : strlen(name);
    char model[160], buf[200];
    if (!strip_gguf(name, n, model, sizeof model))
        return false;
    const char *base = base_of(model, buf, sizeof buf);
    const char *ft = colon && colon[1] ? colon + 1 : DEFAULT_FTYPE;
    if (!base || strlen(ft) >= sizeof out->named)
        return false;
    snprintf(out->base, sizeof out->base, "%s", base);
    snprintf(out->named, sizeof out->named, "%s", ft);
    /* unsloth's dynamic mixes ("UD-Q4_K_XL") are their own recipe over a
     * K-quant: the rule of the nearest llama-quantize type prices them */
    const char *t = ft;
    out->own_recipe = strncasecmp(t, "UD-", 3) == 0;
    if (out->own_recipe)
        t += 3;
    size_t k = 0;
    for (; t[k] && k + 1 < sizeof out->ftype; k++)
        out->ftype[k] = (char)tolower((unsigned char)t[k]);
    out->ftype[k] = '\0';
    if (k > 3 && strcmp(out->ftype + k - 3, "_xl") == 0) { /* Q4_K_XL: Q4_K_M's rule */
        out->own_recipe = true;
        memcpy(out->ftype + k - 3, "_m", 3);
    }
    return true;
}
