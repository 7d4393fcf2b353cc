/* cmd_models.c — vramfit models: the embedded model catalog. */
#include "cli.h"

#include <ctype.h>
#include <getopt.h>
#include <string.h>
#include <strings.h>

static void help(void)
{
    printf("usage: vramfit models [--json] [--family F]\n\n"
           "Lists the embedded catalog: real Hugging Face config.json files built into vramfit, so\n"
           "that any command takes a MODEL by its Hugging Face id (Qwen/Qwen3-8B) or alias (qwen3-8b),\n"
           "case-insensitively, offline. For each model: its id, family (the config's model_type),\n"
           "parameters and active parameters per token (they differ for mixture-of-experts models),\n"
           "counted from the architecture the config describes, and the context length it states.\n\n"
           "  --family F   only models whose model_type is F or a variant of it (qwen3 lists\n"
           "               qwen3 and qwen3_moe)\n"
           "  --json       {\"models\": [{\"id\", \"alias\", \"family\", \"params\", \"active_params\",\n"
           "               \"context_length\"}]}; a count the config cannot give is null\n");
}

/* F itself, or F followed by "_variant" (qwen3 → qwen3_moe, gemma3 → gemma3_text);
 * "_<digit>" starts another family (qwen3_5 is not a qwen3). */
static bool family_matches(const char *family, const char *want)
{
    size_t n = strlen(want);
    return strncasecmp(family, want, n) == 0 &&
           (family[n] == 0 || (family[n] == '_' && !isdigit((unsigned char)family[n + 1])));
}

typedef struct row {
    vf_catalog_info info;
    bool counted;
    uint64_t params, active, context;
} row;

/* The build counted each model (vf_catalog_info); one it could not open is
 * listed without counts ('vramfit inspect ID' shows why). */
static void count_row(row *r)
{
    r->counted = r->info.counted;
    r->params = r->info.params;
    r->active = r->info.active_params;
    r->context = r->info.model_context ? r->info.model_context : r->info.context_length;
}

static int unknown_family(const char *want)
{
    char list[1024] = "";
    size_t used = 0;
    for (size_t i = 0; i < vf_catalog_count(); i++) {
        vf_catalog_info ci;
        if (vf_catalog_entry(i, &ci) != VF_OK || !ci.family[0])
            continue;
        bool seen = false; /* families are few: a linear scan of the earlier entries */
        for (size_t j = 0; j < i && !seen; j++) {
            vf_catalog_info cj;
            seen = vf_catalog_entry(j, &cj) == VF_OK && strcmp(cj.family, ci.family) == 0;
        }
        if (!seen && used + strlen(ci.family) + 3 < sizeof list)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", ci.family);
    }
    return vf_usage_error("models", "no catalog model of family '%s' (families: %s)", want, list);
}

int cmd_models(int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, 0, 'j'},
                                         {"family", required_argument, 0, 'f'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    bool json = false;
    const char *family = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":jf:h", opts, NULL)) != -1) {
        if (c == 'j')
            json = true;
        else if (c == 'f')
            family = optarg;
        else if (c == 'h') {
            help();
            return VF_EXIT_OK;
        } else if (c == ':')
            return vf_usage_error("models", "option '%s' needs a value", argv[optind - 1]);
        else
            return vf_usage_error("models", "unknown option '%s'", argv[optind - 1]);
    }
    if (optind != argc)
        return vf_usage_error("models", "unexpected argument '%s'", argv[optind]);

    size_t n = vf_catalog_count(), k = 0;
    row *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows) {
        fprintf(stderr, "vramfit: models: out of memory\n");
        return VF_EXIT_IO;
    }
    for (size_t i = 0; i < n; i++) {
        row *r = &rows[k];
        if (vf_catalog_entry(i, &r->info) != VF_OK)
            continue;
        if (family && !family_matches(r->info.family, family))
            continue;
        count_row(r);
        k++;
    }
    if (family && k == 0) {
        free(rows);
        return unknown_family(family);
    }

    if (json) {
        json_t *o = json_object(), *a = json_array();
        for (size_t i = 0; i < k; i++) {
            const row *r = &rows[i];
            json_t *e = json_object();
            json_object_set_new(e, "id", json_string(r->info.id));
            json_object_set_new(e, "alias", json_string(r->info.alias));
            json_object_set_new(e, "family", json_string(r->info.family));
            json_object_set_new(e, "params", r->counted ? json_integer((json_int_t)r->params) : json_null());
            json_object_set_new(e, "active_params", r->counted ? json_integer((json_int_t)r->active) : json_null());
            json_object_set_new(e, "context_length", r->context ? json_integer((json_int_t)r->context) : json_null());
            json_array_append_new(a, e);
        }
        json_object_set_new(o, "models", a);
        free(rows);
        return vf_print_json(o);
    }

    printf("%-44s %-12s %9s %9s %9s\n", "model", "family", "params", "active", "context");
    for (size_t i = 0; i < k; i++) {
        const row *r = &rows[i];
        char p[32] = "-", ac[32] = "-", ctx[32] = "-";
        if (r->counted) {
            vf_fmt_short(r->params, p, sizeof p);
            vf_fmt_short(r->active, ac, sizeof ac);
        }
        if (r->context)
            snprintf(ctx, sizeof ctx, "%llu", (unsigned long long)r->context);
        printf("%-44s %-12s %9s %9s %9s\n", r->info.id, r->info.family, p, ac, ctx);
    }
    printf("\n%zu models. MODEL may be the id or the alias (the part after the slash), any case.\n", k);
    free(rows);
    return VF_EXIT_OK;
}
