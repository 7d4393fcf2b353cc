/* catalog.c — the embedded model catalog: names, aliases and near-miss suggestions.
 *
 * Entries come from the index generated at build time from
 * data/models/catalog.tsv: each id with the embedded config.json answering
 * it (its own, or its base's for a variant). The table of names is built once,
 * on first use, without parsing a config; it never changes after. */
#include "model/model.h"
#include "read/catalog_counts.h"
#include "read/catalog_index.h"
#include "read/readers.h"

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
    const vf__catalog_row *row;
    const vf__embedded_file *file;
    const vf__catalog_counts *counts; /* the build's count of it, NULL if none */
} cat_entry;

static cat_entry g_cat[CAT_MAX];
static size_t g_n;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void lower(char *s)
{
    for (; *s; s++)
        *s = (char)tolower((unsigned char)*s);
}

static int cmp_entry(const void *a, const void *b)
{
    return strcasecmp(((const cat_entry *)a)->id, ((const cat_entry *)b)->id);
}

static int cmp_counts(const void *key, const void *row)
{
    return strcasecmp((const char *)key, ((const vf__catalog_counts *)row)->id);
}

/* The table is sorted as the entries are; a search keeps it right whatever it holds. */
static const vf__catalog_counts *counts_of(const char *id)
{
    const vf__catalog_counts *c =
        bsearch(id, vf__catalog_counts_rows, vf__catalog_counts_n, sizeof vf__catalog_counts_rows[0], cmp_counts);
    return c && strcmp(c->id, id) == 0 ? c : NULL;
}

/* The generated index (data/models/catalog.tsv) names each id's embedded file. */
static void build(void)
{
    for (size_t i = 0; i < vf__catalog_nrows && g_n < CAT_MAX; i++) {
        const vf__catalog_row *r = &vf__catalog_rows[i];
        const vf__embedded_file *f = vf__embedded_find(r->file);
        const char *slash = strchr(r->id, '/');
        if (!f || !slash || strlen(r->id) >= CAT_ID_MAX)
            continue; /* the index tool checks both; kept for a library built from other data */
        cat_entry *e = &g_cat[g_n];
        snprintf(e->id, sizeof e->id, "%s", r->id);
        snprintf(e->alias, sizeof e->alias, "%s", slash + 1);
        lower(e->alias);
        if (strncmp(e->alias, "meta-", 5) == 0 && e->alias[5])
            memcpy(e->alt, e->alias + 5, strlen(e->alias + 5) + 1); /* shorter than alias */
        e->row = r;
        e->file = f;
        g_n++;
    }
    qsort(g_cat, g_n, sizeof g_cat[0], cmp_entry);
    for (size_t i = 0; i < g_n; i++)
        g_cat[i].counts = counts_of(g_cat[i].id);
    /* an alias two orgs share (google/gemma-2-9b, unsloth/gemma-2-9b) names the first id only */
    for (size_t i = 1; i < g_n; i++)
        for (size_t j = 0; j < i && g_cat[i].alias[0]; j++)
            if (strcmp(g_cat[j].alias, g_cat[i].alias) == 0)
                g_cat[i].alias[0] = '\0';
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
    memset(out, 0, sizeof *out);
    out->id = g_cat[i].id;
    out->alias = g_cat[i].alias;
    out->family = g_cat[i].row->family;
    out->context_length = g_cat[i].row->context;
    out->provenance = g_cat[i].row->provenance;
    out->task = g_cat[i].row->task;
    const vf__catalog_counts *c = g_cat[i].counts;
    out->counted = c != NULL;
    out->params = c ? c->params : 0;
    out->active_params = c ? c->active_params : 0;
    out->bytes = c ? c->bytes : 0;
    out->model_context = c ? c->context : 0;
    out->host_side_params = c ? c->host_side_params : 0;
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

/*
 * Ranking near misses. A name is compared in two forms: "norm", lower-case
 * letters, digits and dots only ("Qwen-3_8B" and "qwen3-8b" are both
 * "qwen38b", while "qwen2.5" stays apart from "qwen2-5"), and its tokens, the
 * runs between other characters ("mistral", "7b", "v0.1"). Costs are in
 * tenths of an edit; UINT32_MAX means too far to be useful.
 */
#define TOK_MAX 16

typedef struct name_form {
    char norm[CAT_NORM_MAX];
    size_t len;
    char sep[CAT_NORM_MAX]; /* lower case, other characters as '-': keeps token boundaries */
} name_form;

static void form(const char *s, name_form *f)
{
    size_t n = 0, m = 0;
    for (; *s && m < CAT_NORM_MAX - 1; s++) {
        unsigned char c = (unsigned char)tolower((unsigned char)*s);
        bool keep = isalnum(c) || c == '.';
        if (keep && n < CAT_NORM_MAX - 1)
            f->norm[n++] = (char)c;
        f->sep[m++] = keep ? (char)c : '-';
    }
    f->norm[n] = 0;
    f->sep[m] = 0;
    f->len = n;
}

/* Splits s into tokens (copied into buf); returns how many. */
static size_t tokens(const char *s, char buf[TOK_MAX][CAT_NORM_MAX])
{
    size_t n = 0, k = 0;
    for (;; s++) {
        unsigned char c = (unsigned char)tolower((unsigned char)*s);
        if (c && (isalnum(c) || c == '.')) {
            if (n < TOK_MAX && k < CAT_NORM_MAX - 1)
                buf[n][k++] = (char)c;
            continue;
        }
        if (k && n < TOK_MAX) {
            buf[n][k] = 0;
            n++;
        }
        k = 0;
        if (!c)
            break;
    }
    return n;
}

static bool is_number(const char *t)
{
    for (; *t; t++)
        if (!isdigit((unsigned char)*t) && *t != '.')
            return false;
    return true;
}

/*
 * A token of the query is in a name when it is a substring of the name's
 * norm; a bare number ("2", "3.1") must stand alone in the name ("llama-2-7b"
 * has 2, "llama-3.2-1b" has not).
 */
static bool token_in(const char *t, const name_form *k)
{
    if (!is_number(t))
        return strstr(k->norm, t) != NULL;
    size_t lt = strlen(t);
    for (const char *p = strstr(k->sep, t); p; p = strstr(p + 1, t)) {
        char before = p > k->sep ? p[-1] : '-', after = p[lt];
        if (!isdigit((unsigned char)before) && before != '.' && !isdigit((unsigned char)after) && after != '.')
            return true;
    }
    return false;
}

/* Edit distance where a changed or missing digit costs 3: "qwen3" and "qwen2" are different models. */
static unsigned distance(const char *a, size_t la, const char *b, size_t lb)
{
    unsigned row[CAT_NORM_MAX];
    row[0] = 0;
    for (size_t j = 1; j <= lb; j++)
        row[j] = row[j - 1] + (isdigit((unsigned char)b[j - 1]) ? 3u : 1u);
    for (size_t i = 1; i <= la; i++) {
        unsigned wa = isdigit((unsigned char)a[i - 1]) ? 3u : 1u;
        unsigned diag = row[0];
        row[0] += wa;
        for (size_t j = 1; j <= lb; j++) {
            unsigned wb = isdigit((unsigned char)b[j - 1]) ? 3u : 1u;
            unsigned sub = a[i - 1] == b[j - 1] ? 0u : (wa > wb ? wa : wb);
            unsigned best = diag + sub;
            if (row[j - 1] + wb < best)
                best = row[j - 1] + wb;
            if (row[j] + wa < best)
                best = row[j] + wa;
            diag = row[j];
            row[j] = best;
        }
    }
    return row[lb];
}

typedef struct query {
    name_form f;
    char tok[TOK_MAX][CAT_NORM_MAX];
    size_t ntok;
} query;

static unsigned cost(const query *q, const char *key)
{
    name_form k;
    form(key, &k);
    if (k.len == 0 || q->f.len == 0)
        return UINT32_MAX;
    if (strcmp(q->f.norm, k.norm) == 0)
        return 0;
    unsigned best = UINT32_MAX;
    size_t misses = 0, matched_len = 0;
    for (size_t i = 0; i < q->ntok; i++) {
        if (token_in(q->tok[i], &k))
            matched_len += strlen(q->tok[i]);
        else
            misses++;
    }
    /* every token present: the name says more than the query ("mistral-7b" in Mistral-7B-Instruct-v0.3) */
    if (misses == 0 && q->f.len >= 3 && k.len >= q->f.len)
        best = 5 + 2 * (unsigned)(k.len - q->f.len);
    /* all tokens but one, and at least two present ("qwen3-8b-instruct" for Qwen3-8B) */
    else if (misses == 1 && q->ntok >= 3 && k.len >= matched_len)
        best = 40 + 2 * (unsigned)(k.len - matched_len);
    /* the query says more than the name ("starcoder2" for starcoder) */
    if (k.len >= 3 && q->f.len > k.len && strstr(q->f.norm, k.norm)) {
        unsigned c = 5 + 3 * (unsigned)(q->f.len - k.len);
        if (c < best)
            best = c;
    }
    /* typos: up to about a third of the query's length */
    unsigned d = distance(q->f.norm, q->f.len, k.norm, k.len);
    unsigned limit = q->f.len / 3 > 2 ? (unsigned)(q->f.len / 3) : 2;
    if (d <= limit && 10 * d < best)
        best = 10 * d;
    return best;
}

size_t vf_catalog_suggest(const char *name, const char **out, size_t n)
{
    ensure();
    if (!name || !out || n == 0)
        return 0;
    /* an "org/" prefix the user typed is compared with the id, the rest with the aliases */
    const char *slash = strrchr(name, '/');
    query *q = malloc(2 * sizeof *q);
    if (!q)
        return 0;
    form(slash ? slash + 1 : name, &q[0].f);
    q[0].ntok = tokens(slash ? slash + 1 : name, q[0].tok);
    form(name, &q[1].f);
    q[1].ntok = tokens(name, q[1].tok);

    unsigned best[CAT_MAX];
    for (size_t i = 0; i < g_n; i++) {
        unsigned c = cost(&q[0], g_cat[i].alias);
        unsigned c2 = g_cat[i].alt[0] ? cost(&q[0], g_cat[i].alt) : UINT32_MAX;
        unsigned c3 = slash ? cost(&q[1], g_cat[i].id) : UINT32_MAX;
        if (c2 < c)
            c = c2;
        if (c3 < c)
            c = c3;
        best[i] = c;
    }
    free(q);
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
