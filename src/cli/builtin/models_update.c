/* models_update.c — vramfit models --update ID...: each id read from the Hub
 * afresh (config, index and each shard's header: headers only) and kept in
 * vramfit's cache, so that it answers offline afterwards as a catalog model
 * does, without a new release. */
#include "builtin/models_update.h"
#include "cli.h"

#include <stdio.h>
#include <string.h>

/* One id: its line (or JSON entry) and its exit status. */
static int update_one(const char *id, json_t *arr)
{
    char src[600];
    bool bare = strncmp(id, "hf://", 5) != 0;
    if (!vf_hub_id_valid(id) || (size_t)snprintf(src, sizeof src, "%s%s", bare ? "hf://" : "", id) >= sizeof src)
        return vf_usage_error("models", "--update: '%s' is not a Hub id (org/name[@revision])", id);
    vf_open_opts o = *vf_cli_hub_open_opts();
    o.refresh = true;
    vf_model *m = NULL;
    vf_error e = {0};
    if (vf_model_open_with(src, &o, &m, &e) != VF_OK) {
        if (arr) {
            json_t *x = json_object();
            json_object_set_new(x, "id", json_string(id));
            json_object_set_new(x, "updated", json_false());
            json_object_set_new(x, "error", json_string(e.msg));
            json_array_append_new(arr, x);
        }
        return vf_report_error(&e);
    }
    vf_model_totals t;
    vf_model_totals_get(m, &t);
    if (arr) {
        json_t *x = json_object();
        json_object_set_new(x, "id", json_string(id));
        json_object_set_new(x, "updated", json_true());
        json_object_set_new(x, "params", vf_json_u64(t.params));
        json_object_set_new(x, "origin", json_string(vf_model_origin(m)));
        json_array_append_new(arr, x);
    } else {
        char a[40];
        printf("%s: %s parameters from %s; kept in vramfit's cache, it answers offline as %s\n", id,
               vf_fmt_count(t.params, a, sizeof a), vf_model_origin(m), bare ? id : id + 5);
    }
    vf_model_free(m);
    return VF_EXIT_OK;
}

int vf_cli_models_update(int argc, char **argv, int first, bool json)
{
    if (vf_cli_hub_open_opts()->offline) /* HF_HUB_OFFLINE: the Hub path says so, per id */
        return vf_usage_error("models", "--update fetches from the Hub: not with --offline");
    if (first >= argc)
        return vf_usage_error("models", "--update needs the ids to fetch (org/name ...)");
    json_t *arr = json ? json_array() : NULL;
    int rc = VF_EXIT_OK;
    for (int i = first; i < argc; i++) {
        int r = update_one(argv[i], arr);
        if (r == VF_EXIT_USAGE) {
            json_decref(arr);
            return r;
        }
        if (rc == VF_EXIT_OK)
            rc = r;
    }
    if (json) {
        json_t *o = json_object();
        json_object_set_new(o, "updated", arr);
        int w = vf_print_json(o);
        return rc == VF_EXIT_OK ? w : rc;
    }
    return fflush(stdout) && rc == VF_EXIT_OK ? VF_EXIT_IO : rc;
}
