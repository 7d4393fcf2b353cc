/* hfcache.c — the local Hugging Face cache, as huggingface_hub lays it out
 * (file_download.py, "Cache structure"): HF_HUB_CACHE, else HF_HOME/hub,
 * else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub;
 * models--{org}--{name}/refs/{rev} holds a commit; snapshots/{commit}/ holds
 * the files as symlinks into blobs/. A model someone downloaded answers
 * offline, and `vramfit load` can stream it from there. */
#include "read/hub/hub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *join3(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s%s%s", a, b, c);
    return p;
}

char *vf__hfcache_root(void)
{
    const char *v = getenv("HF_HUB_CACHE");
    if (v && *v)
        return strdup(v);
    if ((v = getenv("HF_HOME")) && *v)
        return join3(v, "/hub", "");
    if ((v = getenv("XDG_CACHE_HOME")) && *v)
        return join3(v, "/huggingface/hub", "");
    if ((v = getenv("HOME")) && *v)
        return join3(v, "/.cache/huggingface/hub", "");
    return NULL;
}

/* "org/name" → "models--org--name" */
static void folder_name(const char *repo, char *out, size_t cap)
{
    size_t k = (size_t)snprintf(out, cap, "models--");
    for (const char *p = repo; *p && k + 3 < cap; p++) {
        if (*p == '/') {
            out[k++] = '-';
            out[k++] = '-';
        } else {
            out[k++] = *p;
        }
    }
    out[k] = '\0';
}

/* refs/{rev}: a commit, whitespace around it ignored; bounded read */
static vf_status read_ref(const char *path, char commit[41], vf_error *err)
{
    char *text = NULL;
    size_t len = 0;
    vf_status st = vf__read_small_file(path, 256, &text, &len, err);
    if (st != VF_OK)
        return st;
    size_t a = 0, b = len;
    while (a < b && (text[a] == ' ' || text[a] == '\n' || text[a] == '\r' || text[a] == '\t'))
        a++;
    while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\n' || text[b - 1] == '\r' || text[b - 1] == '\t'))
        b--;
    text[b] = '\0';
    if (!vf__hub_is_commit(text + a))
        st = vf__err(err, VF_EFORMAT, path, "the hf cache's ref does not hold a commit (40 hex digits)");
    else
        memcpy(commit, text + a, 41);
    free(text);
    return st;
}

vf_status vf__hfcache_find(const vf__hub_id *id, char **dir, vf_error *err)
{
    *dir = NULL;
    char *root = vf__hfcache_root();
    if (!root)
        return VF_OK;
    char folder[2 * VF_HUB_REPO_MAX + 16];
    folder_name(id->repo, folder, sizeof folder);
    char *repo_dir = join3(root, "/", folder);
    free(root);
    if (!repo_dir)
        return vf__err(err, VF_ENOMEM, id->repo, "out of memory");
    vf_status st = VF_OK;
    char commit[41] = "";
    char *ref = NULL, *snap = NULL;
    if (!vf__is_dir(repo_dir))
        goto out; /* not downloaded: not an error */
    if (vf__hub_is_commit(id->rev)) {
        memcpy(commit, id->rev, 41);
    } else {
        if (!(ref = join3(repo_dir, "/refs/", id->rev))) {
            st = vf__err(err, VF_ENOMEM, id->repo, "out of memory");
            goto out;
        }
        if (!vf__is_file(ref))
            goto out; /* this revision was never downloaded */
        if ((st = read_ref(ref, commit, err)) != VF_OK)
            goto out;
    }
    if (!(snap = join3(repo_dir, "/snapshots/", commit))) {
        st = vf__err(err, VF_ENOMEM, id->repo, "out of memory");
        goto out;
    }
    if (!vf__is_dir(snap)) {
        if (ref)
            st = vf__err(err, VF_ENOENT, ref, "names snapshot %.12s, which the hf cache does not hold", commit);
        goto out;
    }
    *dir = snap;
    snap = NULL;
out:
    free(snap);
    free(ref);
    free(repo_dir);
    return st;
}
