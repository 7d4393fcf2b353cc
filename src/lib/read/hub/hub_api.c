/* hub_api.c — the Hub API's answer for one revision, as untrusted input.
 * GET /api/models/{id}/revision/{rev} answers a JSON object; what is read:
 * "sha" (the commit: 40 hex digits), "siblings" (objects whose "rfilename"
 * is a relative path inside the repository), "gated" (false or a string).
 * Names that could step out of a directory are refused. */
#include "read/hub/hub.h"

#include <stdlib.h>
#include <string.h>

#define MAX_NAME 1024

/* A repository path: relative, no "." or ".." segment, no empty segment,
 * no backslash or control character. */
static bool safe_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > MAX_NAME || s[0] == '/' || s[n - 1] == '/')
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == '\\' || s[i] == 0x7f)
            return false;
    for (const char *seg = s; seg;) {
        const char *slash = strchr(seg, '/');
        size_t len = slash ? (size_t)(slash - seg) : strlen(seg);
        if (len == 0 || (len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
            return false;
        seg = slash ? slash + 1 : NULL;
    }
    return true;
}

void vf__hub_info_free(vf__hub_info *info)
{
    for (size_t i = 0; i < info->n_files; i++)
        free(info->files[i]);
    free(info->files);
    memset(info, 0, sizeof *info);
}

static vf_status read_siblings(json_t *sib, const char *label, vf__hub_info *out, vf_error *err)
{
    size_t n = json_array_size(sib);
    if (n > VF_MAX_SHARDS)
        return vf__err(err, VF_EFORMAT, label, "the hub lists %zu files, more than %u", n, VF_MAX_SHARDS);
    if (!(out->files = calloc(n ? n : 1, sizeof *out->files)))
        return vf__err(err, VF_ENOMEM, label, "out of memory");
    size_t i;
    json_t *v;
    json_array_foreach(sib, i, v)
    {
        const char *name = json_string_value(json_object_get(v, "rfilename"));
        if (!name || !vf__utf8_valid(name, strlen(name)) || !safe_name(name))
            return vf__err(err, VF_EFORMAT, label, "the hub's answer lists a file with a bad name (sibling %zu)", i);
        if (!(out->files[out->n_files] = strdup(name)))
            return vf__err(err, VF_ENOMEM, label, "out of memory");
        out->n_files++;
    }
    return VF_OK;
}

vf_status vf__hub_api_parse(const char *text, size_t len, const char *label, vf__hub_info *out, vf_error *err)
{
    memset(out, 0, sizeof *out);
    json_t *root = vf__json_parse(text, len, label, err);
    if (!root)
        return VF_EFORMAT;
    vf_status st = VF_OK;
    const char *sha = json_string_value(json_object_get(root, "sha"));
    json_t *sib = json_object_get(root, "siblings");
    json_t *gated = json_object_get(root, "gated");
    if (!json_is_object(root))
        st = vf__err(err, VF_EFORMAT, label, "the hub's answer is not a json object");
    else if (!sha || !vf__hub_is_commit(sha))
        st = vf__err(err, VF_EFORMAT, label, "the hub's answer has no commit sha (40 hex digits)");
    else if (!json_is_array(sib))
        st = vf__err(err, VF_EFORMAT, label, "the hub's answer has no siblings list");
    else
        st = read_siblings(sib, label, out, err);
    if (st == VF_OK) {
        memcpy(out->sha, sha, 41);
        out->gated = gated && !json_is_false(gated) && !json_is_null(gated);
    } else {
        vf__hub_info_free(out);
    }
    json_decref(root);
    return st;
}
