/* catalog_index.c — build tool: the model catalog's index, generated from
 * data/models/catalog.tsv and the config.json files it names.
 *
 * usage: catalog_index OUT.c DIR   (DIR holds catalog.tsv and the configs)
 *
 * One row per model id: the id, the embedded file answering it, its family
 * (the config's model_type) and stated context, its provenance. The build
 * fails when the data disagree with themselves: a config without a row, a row
 * naming a missing or unparsable file, an id twice, an id not "org/name". */
#include "read/pyfloats.h"

#include <jansson.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdbool.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ROWS_MAX 4096
#define LINE_MAX_ 65536

typedef struct row {
    char *id, *file, *prov;
    char family[64];
    uint64_t ctx;
    const char *task;
} row;

static row rows[ROWS_MAX];
static size_t nrows;

static int die(const char *what, const char *detail)
{
    fprintf(stderr, "catalog_index: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    return 1;
}

/* The trained context under the keys families use, else the text_config's. */
static uint64_t context_of(const json_t *cfg)
{
    static const char *const keys[] = {"max_position_embeddings", "n_positions", "max_sequence_length",
                                       "seq_length", "n_ctx"};
    for (int pass = 0; pass < 2 && cfg; pass++) {
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            json_t *v = json_object_get(cfg, keys[k]);
            if (json_is_integer(v) && json_integer_value(v) > 0)
                return (uint64_t)json_integer_value(v);
        }
        cfg = json_object_get(cfg, "text_config");
    }
    return 0;
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && strcmp(s + n - k, tail) == 0;
}

/* What the model is for (models --task): an encoder family (BERT, RoBERTa
 * and kin), an encoder or scorer without a language-model head (BertModel,
 * XLMRobertaModel, ...ForMaskedLM / ForSequenceClassification /
 * ForTokenClassification / ForQuestionAnswering; ChatGLMModel, a causal LM
 * despite its name, excepted) or an embedding model by name (gte-Qwen2 has a
 * causal decoder's architectures) is "embed"; one with a vision tower
 * (vision_config) "vision"; any other generates text: "chat". */
static const char *task_of(const char *id, const json_t *cfg)
{
    const char *arch = json_string_value(json_array_get(json_object_get(cfg, "architectures"), 0));
    arch = arch ? arch : "";
    char low[256];
    size_t n = 0;
    for (; id[n] && n + 1 < sizeof low; n++)
        low[n] = (char)tolower((unsigned char)id[n]);
    low[n] = 0;
    static const char *const embed_names[] = {"embed", "/gte-", "/bge-", "/e5-", "rerank", "minilm", "mpnet"};
    bool named = false;
    for (size_t i = 0; i < sizeof embed_names / sizeof embed_names[0]; i++)
        named = named || strstr(low, embed_names[i]) != NULL;
    /* the encoder families (a config may name no architectures at all) */
    static const char *const encoders[] = {"bert", "roberta", "xlm-roberta", "camembert", "data2vec-text",
                                           "nomic_bert"};
    const char *mt = json_string_value(json_object_get(cfg, "model_type"));
    for (size_t i = 0; mt && i < sizeof encoders / sizeof encoders[0]; i++)
        named = named || strcmp(mt, encoders[i]) == 0;
    if (named || ends_with(arch, "ForMaskedLM") || ends_with(arch, "ForSequenceClassification") ||
        ends_with(arch, "ForTokenClassification") || ends_with(arch, "ForQuestionAnswering") ||
        (ends_with(arch, "Model") && !ends_with(arch, "LMHeadModel") && strcmp(arch, "ChatGLMModel") != 0))
        return "embed";
    return json_is_object(json_object_get(cfg, "vision_config")) ? "vision" : "chat";
}

static int read_config(const char *dir, row *r)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, r->file);
    FILE *f = fopen(path, "rb");
    if (!f)
        return die("cannot open", path);
    static char text[1 << 22];
    size_t len = fread(text, 1, sizeof text, f);
    int big = !feof(f);
    fclose(f);
    if (big)
        return die("larger than 4 MiB", path);
    char *fixed = vf__python_floats(text, len); /* Nemotron-H's Infinity */
    json_error_t je;
    json_t *cfg = json_loadb(fixed ? fixed : text, len, 0, &je);
    free(fixed);
    if (!json_is_object(cfg)) {
        json_decref(cfg);
        return die("not a JSON object", path);
    }
    const char *mt = json_string_value(json_object_get(cfg, "model_type"));
    snprintf(r->family, sizeof r->family, "%s", mt ? mt : "");
    r->ctx = context_of(cfg);
    r->task = task_of(r->id, cfg);
    json_decref(cfg);
    if (strpbrk(r->family, "\"\\") || strpbrk(r->prov, "\"\\") || strpbrk(r->file, "\"\\/"))
        return die("a quote, backslash or slash in a file name, family or provenance", path);
    return 0;
}

static char *field(char **p)
{
    char *s = *p, *t = s ? strchr(s, '\t') : NULL;
    if (t)
        *t = 0;
    *p = t ? t + 1 : NULL;
    return s;
}

static int read_tsv(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/catalog.tsv", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return die("cannot open", path);
    static char line[LINE_MAX_];
    bool header = false;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (line[0] == '#' || !line[0])
            continue;
        if (!header) { /* the column names */
            header = true;
            continue;
        }
        if (nrows == ROWS_MAX)
            return die("too many rows", path);
        char *p = line, *id = field(&p), *file = field(&p), *prov = field(&p);
        const char *slash = id ? strchr(id, '/') : NULL;
        if (!file || !prov || !slash || slash == id || !slash[1] || strchr(slash + 1, '/') || strchr(id, '"') ||
            strchr(id, '\\'))
            return die("malformed row", id);
        rows[nrows].id = strdup(id);
        rows[nrows].file = strdup(file);
        rows[nrows].prov = strdup(prov);
        if (!rows[nrows].id || !rows[nrows].file || !rows[nrows].prov)
            return die("out of memory", NULL);
        if (read_config(dir, &rows[nrows]))
            return 1;
        nrows++;
    }
    fclose(f);
    return 0;
}

static int cmp_row(const void *a, const void *b)
{
    return strcasecmp(((const row *)a)->id, ((const row *)b)->id);
}

/* Every config in DIR is some row's file. */
static int check_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return die("cannot open", dir);
    struct dirent *e;
    int bad = 0;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0)
            continue;
        bool used = false;
        for (size_t i = 0; i < nrows && !used; i++)
            used = strcmp(rows[i].file, e->d_name) == 0;
        if (!used)
            bad |= die("a config no row of catalog.tsv names", e->d_name);
    }
    closedir(d);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return die("usage: catalog_index OUT.c DIR", NULL);
    if (read_tsv(argv[2]) || check_files(argv[2]))
        return 1;
    qsort(rows, nrows, sizeof rows[0], cmp_row);
    for (size_t i = 1; i < nrows; i++)
        if (strcasecmp(rows[i - 1].id, rows[i].id) == 0)
            return die("an id twice", rows[i].id);
    FILE *o = fopen(argv[1], "w");
    if (!o)
        return die("cannot write", argv[1]);
    fprintf(o, "/* generated by tools/catalog_index.c from data/models/catalog.tsv — do not edit */\n"
               "#include \"read/catalog_index.h\"\n\nconst vf__catalog_row vf__catalog_rows[] = {\n");
    for (size_t i = 0; i < nrows; i++)
        fprintf(o, "    {\"%s\", \"models/%s\", \"%s\", \"%s\", %" PRIu64 "u, \"%s\"},\n", rows[i].id,
                rows[i].file, rows[i].family, rows[i].prov, rows[i].ctx, rows[i].task);
    fprintf(o, "};\nconst size_t vf__catalog_nrows = %zu;\n", nrows);
    return fclose(o) ? die("cannot write", argv[1]) : 0;
}
