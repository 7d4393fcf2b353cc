/* catalog.c — the embedded model catalog: names, aliases and near-miss suggestions.
 *
 * Entries come from the embedded files "models/<org>__<name>.json" (real
 * Hugging Face config.json files, see data/models/SOURCES.md). The table is
 * built once, on first use, from the embedded data; it never changes after. */
#include "internal.h"

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CAT_MAX 1024      /* entries; the build embeds far fewer */
#define CAT_ID_MAX 160
#define CAT_NORM_MAX 128  /* suggestions compare at most this many characters */

typedef struct cat_entry {
    char id[CAT_ID_MAX];     /* "Qwen/Qwen3-8B" */
    char alias[CAT_ID_MAX];  /* "qwen3-8b" */
    char alt[CAT_ID_MAX];    /* "llama-3.1-8b" for "Meta-Llama-3.1-8B" (Meta renamed its repos), else "" */
    char family[64];
    uint64_t ctx;
    const vf__embedded_file *file;
} cat_entry;

static cat_entry g_cat[CAT_MAX];
static size_t g_n;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void lower(char *s)
{
    for (; *s; s++)
        *s = (char)tolower((unsigned char)*s);
}

static uint64_t config_context(const json_t *cfg)
{
    /* the keys families use for the trained context, most common first */
    static const char *const keys[] = {"max_position_embeddings", "n_positions", "max_sequence_length",
                                       "seq_length", "n_ctx"};
    for (int pass = 0; pass < 2 && cfg; pass++) {
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            uint64_t v;
            if (vf__json_u64(json_object_get(cfg, keys[k]), &v) && v > 0)
                return v;
        }
        cfg = json_object_get(cfg, "text_config"); /* multimodal wrappers (Gemma 3) */
    }
    return 0;
}

static void fill_from_config(cat_entry *e)
{
    json_t *cfg = vf__json_parse(e->file->data, e->file->len, e->file->name, NULL);
    if (!json_is_object(cfg)) {
        json_decref(cfg);
        return;
    }
    const char *mt = json_string_value(json_object_get(cfg, "model_type"));
    if (mt)
        snprintf(e->family, sizeof e->family, "%s", mt);
    e->ctx = config_context(cfg);
    json_decref(cfg);
}

static int cmp_entry(const void *a, const void *b)
{
    return strcasecmp(((const cat_entry *)a)->id, ((const cat_entry *)b)->id);
}

static void build(void)
{
    static const char prefix[] = "models/", suffix[] = ".json";
    for (size_t i = 0; i < vf__embedded_count && g_n < CAT_MAX; i++) {
        const vf__embedded_file *f = &vf__embedded_files[i];
        size_t len = strlen(f->name);
        if (strncmp(f->name, prefix, sizeof prefix - 1) != 0 || !vf__ends_with(f->name, suffix))
            continue;
        const char *base = f->name + sizeof prefix - 1;
        size_t blen = len - (sizeof prefix - 1) - (sizeof suffix - 1);
        const char *sep = strstr(base, "__");
        if (!sep || sep == base || (size_t)(sep - base) + 2 >= blen || blen >= CAT_ID_MAX)
            continue; /* not "<org>__<name>.json" */
        cat_entry *e = &g_cat[g_n];
        size_t olen = (size_t)(sep - base);
        snprintf(e->id, sizeof e->id, "%.*s/%.*s", (int)olen, base, (int)(blen - olen - 2), sep + 2);
        snprintf(e->alias, sizeof e->alias, "%s", strchr(e->id, '/') + 1);
        lower(e->alias);
        if (strncmp(e->alias, "meta-", 5) == 0 && e->alias[5])
            memcpy(e->alt, e->alias + 5, strlen(e->alias + 5) + 1); /* shorter than alias */
        e->file = f;
        fill_from_config(e);
        g_n++;
    }
    qsort(g_cat, g_n, sizeof g_cat[0], cmp_entry);
}

static void ensure(void)
{
    pthread_once(&g_once, build);
}

size_t vf_catalog_count(void)
{
    ensure();
    return g_n;
}

vf_status vf_catalog_entry(size_t i, vf_catalog_info *out)
{
    ensure();
    if (i >= g_n || !out)
        return VF_EINVAL;
    out->id = g_cat[i].id;
    out->alias = g_cat[i].alias;
    out->family = g_cat[i].family;
    out->context_length = g_cat[i].ctx;
    return VF_OK;
}

const char *vf_catalog_config(size_t i, size_t *len)
{
    ensure();
    if (i >= g_n)
        return NULL;
    if (len)
        *len = g_cat[i].file->len;
    return g_cat[i].file->data;
}

/* "org/name" with the org compared case-insensitively, also "org__name". */
static bool id_matches(const char *id, const char *name)
{
    if (strcasecmp(id, name) == 0)
        return true;
    const char *slash = strchr(id, '/');
    const char *us = strstr(name, "__");
    if (!slash || !us || (size_t)(us - name) != (size_t)(slash - id))
        return false;
    return strncasecmp(id, name, (size_t)(slash - id)) == 0 && strcasecmp(slash + 1, us + 2) == 0;
}

size_t vf_catalog_find(const char *name)
{
    ensure();
    if (!name || !*name)
        return (size_t)-1;
    for (size_t i = 0; i < g_n; i++)
        if (id_matches(g_cat[i].id, name) || strcasecmp(g_cat[i].alias, name) == 0)
            return i;
    /* renamed repos: "meta-llama/Llama-3.1-8B" and "llama-3.1-8b" name "Meta-Llama-3.1-8B" */
    const char *slash = strchr(name, '/');
    for (size_t i = 0; i < g_n; i++) {
        if (!g_cat[i].alt[0])
            continue;
        if (strcasecmp(g_cat[i].alt, name) == 0)
            return i;
        if (slash && strncasecmp(g_cat[i].id, name, (size_t)(slash - name) + 1) == 0 &&
            strcasecmp(g_cat[i].alt, slash + 1) == 0)
            return i;
    }
    return (size_t)-1;
}

const char *vf__catalog_config_text(const char *name, size_t *len, const char **canonical)
{
    size_t i = vf_catalog_find(name);
    if (i == (size_t)-1)
        return NULL;
    if (canonical)
        *canonical = g_cat[i].id;
    if (len)
        *len = g_cat[i].file->len;
    return g_cat[i].file->data;
}

/* ---- suggestions ---- */

/* Lower-case letters and digits only: "Qwen-3_8B" and "qwen3-8b" both become "qwen38b". */
static size_t normalise(const char *s, char *out)
{
    size_t n = 0;
    for (; *s && n < CAT_NORM_MAX - 1; s++)
        if (isalnum((unsigned char)*s))
            out[n++] = (char)tolower((unsigned char)*s);
    out[n] = 0;
    return n;
}

static unsigned levenshtein(const char *a, size_t la, const char *b, size_t lb)
{
    unsigned row[CAT_NORM_MAX];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (unsigned)j;
    for (size_t i = 1; i <= la; i++) {
        unsigned diag = row[0];
        row[0] = (unsigned)i;
        for (size_t j = 1; j <= lb; j++) {
            unsigned up = row[j];
            unsigned best = diag + (a[i - 1] != b[j - 1]);
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            if (up + 1 < best)
                best = up + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/*
 * Cost of suggesting key for query q (both normalised), in tenths of an edit;
 * UINT32_MAX when too far to be useful. Containment ("mistral7b" inside
 * "mistral7binstructv03") costs little plus a bit per extra character;
 * otherwise the edit distance counts, accepted up to about a third of the
 * query's length.
 */
static unsigned cost(const char *q, size_t lq, const char *key)
{
    char k[CAT_NORM_MAX];
    size_t lk = normalise(key, k);
    if (lk == 0 || lq == 0)
        return UINT32_MAX;
    if (strcmp(q, k) == 0)
        return 0;
    unsigned best = UINT32_MAX;
    if (lq >= 3 && strstr(k, q))
        best = 5 + 2 * (unsigned)(lk - lq);
    else if (lk >= 3 && strstr(q, k))
        best = 5 + 3 * (unsigned)(lq - lk);
    unsigned d = levenshtein(q, lq, k, lk);
    unsigned limit = lq / 3 > 2 ? (unsigned)(lq / 3) : 2;
    if (d <= limit && 10 * d < best)
        best = 10 * d;
    return best;
}

size_t vf_catalog_suggest(const char *name, const char **out, size_t n)
{
    ensure();
    if (!name || !out || n == 0)
        return 0;
    char q[CAT_NORM_MAX];
    /* an "org/" prefix the user typed is compared with the id, the rest with the aliases */
    const char *slash = strrchr(name, '/');
    size_t lq = normalise(slash ? slash + 1 : name, q);
    char qfull[CAT_NORM_MAX];
    size_t lqfull = normalise(name, qfull);
    if (lq == 0)
        return 0;

    unsigned best[CAT_MAX];
    for (size_t i = 0; i < g_n; i++) {
        unsigned c = cost(q, lq, g_cat[i].alias);
        unsigned c2 = g_cat[i].alt[0] ? cost(q, lq, g_cat[i].alt) : UINT32_MAX;
        unsigned c3 = slash ? cost(qfull, lqfull, g_cat[i].id) : UINT32_MAX;
        if (c2 < c)
            c = c2;
        if (c3 < c)
            c = c3;
        best[i] = c;
    }
    size_t k = 0;
    while (k < n) { /* selection of the n cheapest, ties in id order */
        size_t pick = (size_t)-1;
        for (size_t i = 0; i < g_n; i++)
            if (best[i] != UINT32_MAX && (pick == (size_t)-1 || best[i] < best[pick]))
                pick = i;
        if (pick == (size_t)-1)
            break;
        out[k++] = g_cat[pick].id;
        best[pick] = UINT32_MAX;
    }
    return k;
}
