/* cmd_models.c — vramfit models: the embedded model catalog. */
#include "cli.h"
#include "args/estimate_opts.h"
#include "builtin/models_fits.h"
#include "builtin/models_update.h"

#include <ctype.h>
#include <getopt.h>
#include <string.h>
#include <strings.h>

static void help(void)
{
    printf("usage: vramfit models [--json] [--family F] [--task chat|embed|vision] [--max-params N]\n"
           "       vramfit models --fits GPU[xN] | --local [--runtime R] [--context N] [--batch N] [--train ...]\n"
           "                      [--host-memory SIZE] [--family F] [--max-params N] [--task T] [--json] [knobs]\n"
           "       vramfit models --update ID... [--json]\n\n"
           "Lists the embedded catalog: real Hugging Face config.json files built into vramfit, so\n"
           "that any command takes a MODEL by its Hugging Face id (Qwen/Qwen3-8B) or alias (qwen3-8b),\n"
           "case-insensitively, offline. For each model: its id, family (the config's model_type),\n"
           "parameters and active parameters per token (they differ for mixture-of-experts models),\n"
           "counted from the architecture the config describes when vramfit was built, and the\n"
           "context length it states.\n\n"
           "With --fits: what runs on these GPUs. For every catalog model, the best configuration that\n"
           "fits: the weights as stored, else the runtime's formats from best quality down (llama.cpp\n"
           "q8_0 q6_k q5_k_m q4_k_m q3_k_m q2_k; vLLM fp8 awq; transformers int8 nf4; --weights W: that\n"
           "one only; training: as stored), and with --host-memory on llama.cpp the most layers on the\n"
           "GPU with the rest in host memory; its memory per GPU, headroom and longest context, each what\n"
           "'vramfit fit MODEL --gpu GPU --weights W' answers. Fitting models first, largest first.\n"
           "Exit status 0 when any model fits, 1 when none does.\n\n"
           "  --family F        only models whose model_type is F or a variant of it (qwen3 lists\n"
           "                    qwen3 and qwen3_moe)\n"
           "  --task T          chat (models that generate text, vision ones too), vision (they read\n"
           "                    images) or embed (encoders, embedding models, rerankers)\n"
           "  --max-params N    only models of at most N parameters (8000000000, 8G or 8B)\n"
           "  --fits G[xN]      a catalog GPU or a size, as fit's --gpu (\"RTX 4090\", \"H100x8\", \"24GiB\")\n"
           "  --local           --fits this machine's devices (NVML), their free memory\n"
           "  --host-memory S   llama.cpp: host memory for the layers left on the CPU (\"64GiB\")\n"
           "  --train           training instead of inference (the training knobs as for fit)\n"
           "  --units U         gib (default) or gb\n"
           "  --json            {\"models\": [{\"id\", \"alias\", \"family\", \"task\", \"params\",\n"
           "                    \"active_params\", \"context_length\"}]}; a count the config cannot give is\n"
           "                    null. With --fits: {\"gpu\", \"gpu_count\", \"gpu_bytes\", \"models\": [{\"id\",\n"
           "                    \"fits\", \"weights\", \"needed_bytes\", \"headroom_bytes\", \"max_context\",\n"
           "                    \"n_gpu_layers\", \"params\", \"estimated\"}]}: weights \"stored\" or a --weights\n"
           "                    format; needed and headroom null where the weights alone at the smallest\n"
           "                    format exceed the devices (not estimated); n_gpu_layers -1 = all\n"
           "  --update ID...    fetch each Hub id afresh (config, index, shard headers: never a weight)\n"
           "                    into vramfit's cache, so that it answers offline afterwards as a catalog\n"
           "                    model does; --json: {\"updated\": [{\"id\", \"updated\", \"params\", \"origin\"\n"
           "                    | \"error\"}]}; exit status 0 when every id was fetched\n"
           "knobs with --fits (as for 'vramfit fit'):\n");
    vf_cli_infer_opts_help(stdout);
    vf_cli_train_opts_help(stdout);
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
    char list[512] = "";
    size_t used = 0, families = 0, listed = 0;
    for (size_t i = 0; i < vf_catalog_count(); i++) {
        vf_catalog_info ci;
        if (vf_catalog_entry(i, &ci) != VF_OK || !ci.family[0])
            continue;
        bool seen = false; /* families are few: a linear scan of the earlier entries */
        for (size_t j = 0; j < i && !seen; j++) {
            vf_catalog_info cj;
            seen = vf_catalog_entry(j, &cj) == VF_OK && strcmp(cj.family, ci.family) == 0;
        }
        if (seen)
            continue;
        families++;
        /* the first dozen (one line a page can show); 'vramfit models' lists every one */
        if (listed < 12 && used + strlen(ci.family) + 3 < sizeof list) {
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", ci.family);
            listed++;
        }
    }
    if (listed < families)
        return vf_usage_error("models", "no catalog model of family '%s' (%zu families: %s and %zu more, as "
                                        "'vramfit models' lists them)", want, families, list, families - listed);
    return vf_usage_error("models", "no catalog model of family '%s' (families: %s)", want, list);
}


/* "8000000000", "8G", "8B" (billions, as model names say) */
static bool parse_params(const char *v, uint64_t *out)
{
    char buf[64];
    size_t n = strlen(v);
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, v, n + 1);
    if (buf[n - 1] == 'B' || buf[n - 1] == 'b')
        buf[n - 1] = 'G';
    return vf_parse_u64(buf, out) && *out > 0;
}

/* One option of models' own table into q: 1 taken, 0 not one of them, or -2 - an exit code. */
static int own_option(int c, const char *v, vf_cli_models_query *q, bool *fits)
{
    switch (c) {
    case M_JSON:
        q->a.json = true;
        return 1;
    case M_FAMILY:
        q->family = v;
        return 1;
    case M_FITS:
        q->a.gpu = v;
        *fits = true;
        return 1;
    case M_LOCAL:
        q->a.local = true;
        *fits = true;
        return 1;
    case M_HOST:
        if (!vf_parse_bytes(v, &q->host_bytes) || !q->host_bytes)
            return -2 - vf_usage_error("models", "--host-memory: '%s' is not a size (\"64GiB\")", v);
        return 1;
    case M_MAX_PARAMS:
        if (!parse_params(v, &q->max_params))
            return -2 - vf_usage_error("models", "--max-params: '%s' is not a count (8G, 8B)", v);
        return 1;
    case M_TASK:
        if (strcmp(v, "chat") && strcmp(v, "embed") && strcmp(v, "vision"))
            return -2 - vf_usage_error("models", "--task: '%s' is not chat, embed or vision", v);
        q->task = v;
        return 1;
    case M_TRAIN:
        q->a.est.mode = VF_MODE_TRAINING;
        return 1;
    case M_UNITS:
        if (!vf_parse_units(v, &q->a.units))
            return -2 - vf_usage_error("models", "--units: '%s' is not gib or gb", v);
        return 1;
    default:
        return 0;
    }
}

/* -1 to go on, else an exit code. */
static int parse(int argc, char **argv, vf_cli_models_query *q, bool *fits)
{
    struct option all[160];
    const struct option *const tables[] = {vf_cli_models_options, vf_cli_estimate_options, vf_cli_train_options};
    memset(q, 0, sizeof *q);
    vf_estimate_opts_init(&q->a.est);
    vf_cli_env_defaults(&q->a.est);
    *fits = false;
    bool knobs = false;
    if (!vf_cli_options_merge(all, sizeof all / sizeof all[0], tables, 3))
        return vf_usage_error("models", "too many options");
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", all, NULL)) != -1) {
        if (c == M_HELP) {
            help();
            return VF_EXIT_OK;
        }
        if (c == ':')
            return vf_usage_error("models", "option '%s' needs a value", argv[optind - 1]);
        if (c == '?')
            return vf_usage_error("models", "unknown option '%s'", argv[optind - 1]);
        int r = own_option(c, optarg, q, fits);
        if (r <= -2)
            return -2 - r;
        if (r == 1)
            continue;
        if (c == VF_OPT_GPU)
            return vf_usage_error("models", "--gpu: the devices are --fits GPU[xN] here");
        if (c == VF_OPT_RUNTIME)
            q->a.runtime_set = true;
        r = vf_cli_parse_infer_opt(c, optarg, &q->a.est);
        if (r == 0)
            r = vf_cli_parse_train_opt(c, optarg, &q->a.est);
        if (r < 0)
            return VF_EXIT_USAGE;
        if (r == 0)
            return vf_usage_error("models", "unknown option '%s'", argv[optind - 1]);
        knobs = true;
    }
    if (optind != argc)
        return vf_usage_error("models", "unexpected argument '%s'", argv[optind]);
    if (q->a.gpu && q->a.local)
        return vf_usage_error("models", "--fits and --local exclude each other");
    if (!*fits && (knobs || q->host_bytes || q->a.est.mode == VF_MODE_TRAINING))
        return vf_usage_error("models", "the knobs, --train and --host-memory go with --fits GPU or --local");
    q->weights_set = q->a.est.weights[0] != 0;
    return -1;
}

/* models --update ID... [--json]: its own form (not in the option table the
 * server's /api/models reads: a page cannot make vramfit fetch). -1: not it. */
static int update_form(int argc, char **argv)
{
    bool update = false, json = false;
    for (int i = 1; i < argc; i++)
        update |= strcmp(argv[i], "--update") == 0;
    if (!update)
        return -1;
    int rc = vf_cli_hub_args(&argc, argv); /* --hub-timeout, --offline (refused) */
    if (rc >= 0)
        return rc;
    int k = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--update") || !strcmp(argv[i], "--json")) {
            json |= !strcmp(argv[i], "--json");
            continue;
        }
        if (argv[i][0] == '-')
            return vf_usage_error("models", "--update takes ids, --json and the Hub options only, not '%s'", argv[i]);
        argv[k++] = argv[i];
    }
    return vf_cli_models_update(k, argv, 1, json);
}

int cmd_models(int argc, char **argv)
{
    int up = update_form(argc, argv);
    if (up >= 0)
        return up;
    vf_cli_models_query q;
    bool fits;
    int rc = parse(argc, argv, &q, &fits);
    if (rc >= 0)
        return rc;
    if (fits)
        return vf_cli_models_fits(&q);
    bool json = q.a.json;
    const char *family = q.family;
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
        if (family && !vf_cli_family_matches(r->info.family, family))
            continue;
        if ((q.task && !vf_cli_task_matches(r->info.task, q.task)) || (q.max_params && r->info.params > q.max_params))
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
            json_object_set_new(e, "task", json_string(r->info.task));
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
