/* serve_args.c — an API request's query as the command line of the command
 * it runs. There is no second parser: each query parameter must be a long
 * option of that command's own getopt tables (the ones its parser merges),
 * named as the CLI names it; a value option becomes "--name=value" (one word:
 * never a separate word an option parser could take for an option), a flag
 * becomes "--name" for 1/true/on, and the command's parser then judges the
 * values exactly as on the command line. The model goes after "--", and is
 * either a catalog name or, with --models-dir, a path inside that folder. */
#include "serve/serve.h"

#include "args/estimate_opts.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* What a page may not ask for: the server adds --json itself; --local would
 * read this machine's devices, --help prints text. */
static const char *const denied[] = {"json", "help", "local", NULL};

static const struct option *const estimate_tables[] = {vf_cli_estimate_cmd_options, vf_cli_estimate_options,
                                                       vf_cli_train_options, NULL};
static const struct option *const fit_tables[] = {vf_cli_fit_options, vf_cli_estimate_options, vf_cli_train_options,
                                                  NULL};
/* models' own table (family=F, the reverse question's fits=GPU, ...), then
 * the knobs it prices the reverse question with, as its parser merges them */
static const struct option *const models_tables[] = {vf_cli_models_options, vf_cli_estimate_options,
                                                     vf_cli_train_options, NULL};
/* snapshot's options but --estimate, whose "MODEL knobs" would open a model
 * past the fence the model word keeps: /api/snapshot?model=FILE.pickle */
static const struct option snapshot_page_options[] = {{"units", required_argument, 0, 'u'}, {0, 0, 0, 0}};
static const struct option *const snapshot_tables[] = {snapshot_page_options, NULL};
static const struct option *const no_tables[] = {NULL};

const vf_serve_endpoint vf_serve_endpoints[] = {
    {"/api/estimate", "estimate", true, estimate_tables},
    {"/api/fit", "fit", true, fit_tables},
    {"/api/plan", "plan", true, fit_tables},
    {"/api/sweep", "sweep", true, fit_tables},
    {"/api/inspect", "inspect", true, no_tables},
    {"/api/models", "models", false, models_tables},
    {"/api/gpus", "gpus", false, no_tables},
    {"/api/snapshot", "snapshot", true, snapshot_tables},
    {NULL, NULL, false, NULL},
};

static bool is_denied(const char *name)
{
    for (const char *const *d = denied; *d; d++)
        if (!strcmp(*d, name))
            return true;
    return false;
}

const struct option *vf_serve_find_option(const vf_serve_endpoint *ep, const char *name)
{
    if (is_denied(name))
        return NULL;
    /* the first table that has it wins, as in the command's merged table */
    for (const struct option *const *t = ep->tables; *t; t++)
        for (const struct option *o = *t; o->name; o++)
            if (!strcmp(o->name, name))
                return o;
    return NULL;
}

static bool flag_value(const char *v, bool *on)
{
    static const char *const yes[] = {"", "1", "true", "on", "yes"}, *const no[] = {"0", "false", "off", "no"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (!strcasecmp(v, yes[i]))
            return *on = true;
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (!strcasecmp(v, no[i])) {
            *on = false;
            return true;
        }
    return false;
}

/* Options whose value names a model file, fenced as the model is: a page
 * must not open through them what it may not open as the model. */
static const char *const model_valued[] = {"draft", "mmproj", NULL};

static bool is_model_valued(const char *name)
{
    for (const char *const *m = model_valued; *m; m++)
        if (!strcmp(*m, name))
            return true;
    return false;
}

/* A path inside --models-dir as its real path (symbolic links followed),
 * checked to stay inside; NULL with a->status/why when it does not. */
static char *inside_path(vf_serve_argv *a, const vf_serve_ctx *ctx, const char *model)
{
    char joined[PATH_MAX * 2], real[PATH_MAX];
    size_t dl = strlen(ctx->models_dir);
    if (model[0] == '/')
        snprintf(joined, sizeof joined, "%s", model);
    else
        snprintf(joined, sizeof joined, "%s/%s", ctx->models_dir, model);
    const char *path = joined;
    if (realpath(joined, real)) {
        path = real;
    } else if (strstr(joined, "/../") || !strncmp(joined, "../", 3) ||
               (strlen(joined) >= 3 && !strcmp(joined + strlen(joined) - 3, "/.."))) {
        path = NULL; /* cannot be resolved, so cannot be fenced */
    }
    if (!path || strncmp(path, ctx->models_dir, dl) != 0 || (path[dl] != '/' && path[dl] != '\0')) {
        snprintf(a->why, sizeof a->why, "'%.200s' is outside the models folder this server was given", model);
        a->status = 403;
        return NULL;
    }
    return strdup(path);
}

/* A Hub id, always as hf://org/name...: never a path, never the catalog the
 * page already looked in. A name the command would still open as a file or
 * folder where the server runs (it tries a path first) is refused. */
static char *hub_word(vf_serve_argv *a, const char *model)
{
    size_t n = strlen(model) + 6;
    char *w = malloc(n);
    if (!w)
        return NULL;
    snprintf(w, n, "%s%s", strncmp(model, "hf://", 5) == 0 ? "" : "hf://", model);
    if (access(w, F_OK) == 0) {
        snprintf(a->why, sizeof a->why, "'%.200s' names a file where this server runs, not only a Hub id", w);
        a->status = 403;
        free(w);
        return NULL;
    }
    a->hub_used = true;
    return w;
}

/* Why a name is not opened, with the catalog's own near names. */
static void not_found(vf_serve_argv *a, const vf_serve_ctx *ctx, const char *model)
{
    const char *near[3];
    size_t nn = vf_catalog_suggest(model, near, 3);
    bool id = vf_hub_id_valid(model);
    snprintf(a->why, sizeof a->why, "%.200s: not a catalog model%s%s%s%s%s%s%s", model,
             id          ? ", and this server reads no Hub ids (start it with --hub)"
             : ctx->hub  ? " nor a Hub id (org/name), and this server opens no files (--models-dir)"
                         : ", and this server opens no files (--models-dir)",
             nn ? "; did you mean: " : "", nn ? near[0] : "", nn > 1 ? ", " : "", nn > 1 ? near[1] : "",
             nn > 2 ? ", " : "", nn > 2 ? near[2] : "");
    a->status = 404;
}

/* What the command is given for a model the page names (malloc'd; NULL with
 * a->status/why): a catalog name as it is; else, with --hub, a Hub id
 * (unless a plain org/name is a file or folder inside --models-dir: a path
 * first, as the command itself looks); else a path inside --models-dir. */
static char *resolve_model(vf_serve_argv *a, const vf_serve_ctx *ctx, const char *model)
{
    if (vf_catalog_find(model) != (size_t)-1)
        return strdup(model);
    bool id = ctx->hub && vf_hub_id_valid(model);
    if (id && ctx->models_dir[0] && strncmp(model, "hf://", 5) != 0) {
        char inside[PATH_MAX * 2];
        snprintf(inside, sizeof inside, "%s/%s", ctx->models_dir, model);
        id = access(inside, F_OK) != 0;
    }
    if (id)
        return hub_word(a, model);
    if (!ctx->models_dir[0]) {
        not_found(a, ctx, model);
        return NULL;
    }
    return inside_path(a, ctx, model);
}

/* A word of argv the server made (owned by a); NULL: why says. */
static bool add_owned(vf_serve_argv *a, char *w)
{
    if (!w) {
        if (!a->why[0])
            snprintf(a->why, sizeof a->why, "out of memory");
        return false;
    }
    a->argv[a->argc++] = a->owned[a->n_owned++] = w;
    return true;
}

/* One query parameter (not the model) as at most one word of argv. */
static bool add_param(vf_serve_argv *a, const vf_serve_ctx *ctx, const vf_serve_endpoint *ep, const char *key,
                      const char *value)
{
    const struct option *o = vf_serve_find_option(ep, key);
    if (!o) {
        snprintf(a->why, sizeof a->why, "parameter '%.40s' is not an option of 'vramfit %s'", key, ep->command);
        return false;
    }
    const char *v = value ? value : "";
    if (o->has_arg == no_argument) {
        bool on;
        if (!flag_value(v, &on)) {
            snprintf(a->why, sizeof a->why, "parameter '%.40s' is a flag: 1 or 0", key);
            return false;
        }
        if (!on)
            return true;
        v = NULL;
    } else if (!*v) {
        return true; /* an empty box: the command's default */
    }
    if (a->argc >= VF_SERVE_MAX_ARGS - 3) {
        snprintf(a->why, sizeof a->why, "too many parameters");
        return false;
    }
    char *model = v && is_model_valued(o->name) ? resolve_model(a, ctx, v) : NULL;
    if (v && is_model_valued(o->name) && !model)
        return false;
    if (model)
        v = model;
    size_t len = strlen(o->name) + (v ? strlen(v) + 1 : 0) + 3;
    char *w = malloc(len);
    if (w && v)
        snprintf(w, len, "--%s=%s", o->name, v);
    else if (w)
        snprintf(w, len, "--%s", o->name);
    free(model);
    return add_owned(a, w);
}

typedef struct walk {
    vf_serve_argv *a;
    const vf_serve_ctx *ctx;
    const vf_serve_endpoint *ep;
    bool ok;
} walk;

static enum MHD_Result each_param(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    walk *w = cls;
    if (!strcmp(key, "model"))
        return MHD_YES;
    const unsigned char *v = (const unsigned char *)(value ? value : "");
    for (const unsigned char *p = v; *p; p++)
        if (*p < 0x20 || *p == 0x7f || p - v >= VF_SERVE_MAX_VALUE) {
            snprintf(w->a->why, sizeof w->a->why, "parameter '%.40s': the value is not plain text of at most %d bytes",
                     key, VF_SERVE_MAX_VALUE);
            w->ok = false;
            return MHD_NO;
        }
    if (!add_param(w->a, w->ctx, w->ep, key, value)) {
        w->ok = false;
        return MHD_NO;
    }
    return MHD_YES;
}

bool vf_serve_build_argv(struct MHD_Connection *c, const vf_serve_ctx *ctx, const vf_serve_endpoint *ep,
                         vf_serve_argv *a)
{
    memset(a, 0, sizeof *a);
    a->status = 400;
    a->argv[a->argc++] = (char *)ctx->exe;
    a->argv[a->argc++] = (char *)ep->command;
    a->argv[a->argc++] = "--json";
    walk w = {a, ctx, ep, true};
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, each_param, &w);
    if (!w.ok)
        return false;
    char *word = NULL;
    if (ep->needs_model) {
        const char *model = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "model");
        if (!model || !*model) {
            snprintf(a->why, sizeof a->why, "no model given");
            return false;
        }
        if (strlen(model) >= VF_SERVE_MAX_VALUE) {
            snprintf(a->why, sizeof a->why, "the model's name is longer than %d bytes", VF_SERVE_MAX_VALUE);
            return false;
        }
        if (!(word = resolve_model(a, ctx, model)))
            return add_owned(a, NULL);
    }
    if (a->hub_used) { /* a Hub request gives up well inside the command's own time */
        char t[40];
        snprintf(t, sizeof t, "--hub-timeout=%d", VF_SERVE_HUB_TIMEOUT_S);
        if (!add_owned(a, strdup(t))) {
            free(word);
            return false;
        }
    }
    if (word) { /* the model last, after "--": never taken for an option */
        a->argv[a->argc++] = "--";
        if (!add_owned(a, word))
            return false;
    }
    a->argv[a->argc] = NULL;
    return true;
}

void vf_serve_argv_free(vf_serve_argv *a)
{
    for (size_t i = 0; i < a->n_owned; i++)
        free(a->owned[i]);
    a->n_owned = 0;
}

/* GET /api/params: every parameter each endpoint takes, from the same tables. */
char *vf_serve_params_json(const vf_serve_ctx *ctx)
{
    json_t *j = json_object();
    for (const vf_serve_endpoint *ep = vf_serve_endpoints; ep->path; ep++) {
        json_t *arr = json_array();
        if (ep->needs_model) {
            json_t *m = json_object();
            json_object_set_new(m, "name", json_string("model"));
            json_object_set_new(m, "flag", json_false());
            json_array_append_new(arr, m);
        }
        for (const struct option *const *t = ep->tables; *t; t++)
            for (const struct option *o = *t; o->name; o++) {
                if (vf_serve_find_option(ep, o->name) != o)
                    continue; /* denied, or an earlier table's */
                json_t *p = json_object();
                json_object_set_new(p, "name", json_string(o->name));
                json_object_set_new(p, "flag", json_boolean(o->has_arg == no_argument));
                json_array_append_new(arr, p);
            }
        json_object_set_new(j, ep->command, arr);
    }
    json_t *server = json_object();
    json_object_set_new(server, "hub", json_boolean(ctx->hub));
    json_object_set_new(server, "files", json_boolean(ctx->models_dir[0] != '\0'));
    json_object_set_new(j, "server", server);
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    return s;
}
