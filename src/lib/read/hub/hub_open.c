/* hub_open.c — a Hub repository at one revision: its endpoint and token
 * (huggingface_hub's conventions), its commit and file list (the API's
 * answer, or vramfit's cache of it), and the file to read first.
 *
 * The token (HF_TOKEN, else the token file in HF_HOME) goes only to the
 * endpoint's scheme, host and port (hub_http.c). The network is never
 * touched offline (HF_HUB_OFFLINE=1 or --offline). */
#include "read/hub/hub_cache.h"
#include "read/hub/hub_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool vf__hub_env_offline(void)
{
    const char *v = getenv("HF_HUB_OFFLINE");
    return v && (strcmp(v, "1") == 0 || strcasecmp(v, "on") == 0 || strcasecmp(v, "yes") == 0 ||
                 strcasecmp(v, "true") == 0);
}

static vf_status set_endpoint(vf__hub *h, vf_error *err)
{
    const char *e = getenv("HF_ENDPOINT");
    if (!e || !*e)
        e = "https://huggingface.co";
    size_t n = strlen(e);
    while (n > 0 && e[n - 1] == '/')
        n--;
    if (n >= sizeof h->endpoint || !(strncasecmp(e, "https://", 8) == 0 || strncasecmp(e, "http://", 7) == 0))
        return vf__err(err, VF_EINVAL, h->root, "HF_ENDPOINT must be an http(s) URL, at most %zu characters",
                       sizeof h->endpoint - 1);
    memcpy(h->endpoint, e, n);
    h->endpoint[n] = '\0';
    return VF_OK;
}

/* The token file huggingface_hub writes: HF_TOKEN_PATH, else HF_HOME/token. */
static char *token_file(void)
{
    const char *p = getenv("HF_TOKEN_PATH"), *home = getenv("HF_HOME"), *x = getenv("XDG_CACHE_HOME"),
               *u = getenv("HOME");
    char path[4096];
    if (p && *p)
        snprintf(path, sizeof path, "%s", p);
    else if (home && *home)
        snprintf(path, sizeof path, "%s/token", home);
    else if (x && *x)
        snprintf(path, sizeof path, "%s/huggingface/token", x);
    else if (u && *u)
        snprintf(path, sizeof path, "%s/.cache/huggingface/token", u);
    else
        return NULL;
    char *text = NULL;
    size_t len = 0;
    vf_error e = {0};
    if (!vf__is_file(path) || vf__read_small_file(path, 4096, &text, &len, &e) != VF_OK)
        return NULL;
    return text;
}

/* A token is one printable word: anything else could split the header. */
static vf_status set_token(vf__hub *h, vf_error *err)
{
    const char *env = getenv("HF_TOKEN");
    char *t = env && *env ? strdup(env) : token_file();
    if (!t)
        return VF_OK;
    size_t a = 0, b = strlen(t);
    while (a < b && (t[a] == ' ' || t[a] == '\n' || t[a] == '\r' || t[a] == '\t'))
        a++;
    while (b > a && (t[b - 1] == ' ' || t[b - 1] == '\n' || t[b - 1] == '\r' || t[b - 1] == '\t'))
        b--;
    for (size_t i = a; i < b; i++)
        if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] >= 0x7f) {
            free(t);
            return vf__err(err, VF_EINVAL, h->root, "HF_TOKEN holds a character a token cannot have");
        }
    memmove(t, t + a, b - a);
    t[b - a] = '\0';
    if (b == a) {
        free(t);
        return VF_OK;
    }
    h->token = t;
    return VF_OK;
}

/* refs/{rev} and {commit}/api.json in vramfit's cache, when both check out */
static bool api_from_cache(vf__hub *h)
{
    char esc[800], sub[900];
    vf__hubcache_escape(h->id.rev, esc, sizeof esc);
    snprintf(sub, sizeof sub, "refs/%s", esc);
    char *ref = vf__hubcache_dir(h->id.repo, sub);
    unsigned char *sha = NULL, *text = NULL;
    size_t n = 0;
    uint64_t total;
    bool ok = ref && vf__hubcache_get(ref, 40, &sha, &n, &total) && n == 40;
    free(ref);
    char *api = NULL;
    if (ok) {
        snprintf(sub, sizeof sub, "%.40s/api.json", (char *)sha);
        api = vf__hubcache_dir(h->id.repo, sub);
        ok = api && vf__hubcache_get(api, VF_HUB_API_CAP, &text, &n, &total);
    }
    vf_error e = {0};
    ok = ok && vf__hub_api_parse((char *)text, n, h->root, &h->info, &e) == VF_OK &&
         memcmp(h->info.sha, sha, 40) == 0;
    if (ok) {
        h->api_text = (char *)text;
        h->api_len = n;
        text = NULL;
    } else {
        vf__hub_info_free(&h->info);
    }
    free(sha);
    free(text);
    free(api);
    return ok;
}

static vf_status api_from_hub(vf__hub *h, vf_error *err)
{
    char rev[800], url[1400];
    vf__hub_urlenc(h->id.rev, false, rev, sizeof rev);
    snprintf(url, sizeof url, "%s/api/models/%s/revision/%s", h->endpoint, h->id.repo, rev);
    vf_status st = vf__hub_get(h, url, VF_HUB_API_CAP, h->root, &h->api_text, &h->api_len, err);
    if (st == VF_ENOENT && !h->offline)
        return vf__err(err, VF_ENOENT, h->root, "the Hub (%s) has no repository '%s' at revision '%s'", h->endpoint,
                       h->id.repo, h->id.rev);
    if (st == VF_OK)
        st = vf__hub_api_parse(h->api_text, h->api_len, h->root, &h->info, err);
    h->api_dirty = st == VF_OK;
    return st;
}

static vf_status choose(vf__hub *h, vf_error *err)
{
    if (!(h->files = calloc(h->info.n_files ? h->info.n_files : 1, sizeof *h->files)))
        return vf__err(err, VF_ENOMEM, h->root, "out of memory");
    for (size_t i = 0; i < h->info.n_files; i++)
        h->files[i].name = h->info.files[i];
    const char *pick = NULL;
    vf_status st = vf__hub_choose(h->info.files, h->info.n_files, h->id.quant, h->o.file, h->root, &pick, err);
    if (st != VF_OK)
        return st;
    size_t n = strlen(h->root) + strlen(pick) + 2;
    if (!(h->pick = malloc(n)))
        return vf__err(err, VF_ENOMEM, h->root, "out of memory");
    snprintf(h->pick, n, "%s/%s", h->root, pick);
    return VF_OK;
}

vf_status vf__hub_open(const vf__hub_id *id, const vf__hub_opts *o, vf__hub **out, vf_error *err)
{
    *out = NULL;
    vf__hub *h = calloc(1, sizeof *h);
    if (!h)
        return vf__err(err, VF_ENOMEM, id->repo, "out of memory");
    h->fs.ops = &vf__hub_fs_ops;
    h->id = *id;
    if (o)
        h->o = *o;
    h->offline = h->o.offline || vf__hub_env_offline();
    snprintf(h->root, sizeof h->root, "hf://%s", id->repo);
    vf_status st = set_endpoint(h, err);
    if (st == VF_OK)
        st = set_token(h, err);
    if (st == VF_OK && (h->o.refresh || !api_from_cache(h)))
        st = api_from_hub(h, err);
    if (st == VF_OK)
        st = choose(h, err);
    if (st != VF_OK) {
        vf__hub_free(h);
        return st;
    }
    *out = h;
    return VF_OK;
}

vf__fs *vf__hub_fs(vf__hub *h) { return &h->fs; }
const char *vf__hub_pick(const vf__hub *h) { return h->pick; }
const char *vf__hub_root(const vf__hub *h) { return h->root; }

const char *vf__hub_answered(const vf__hub *h)
{
    vf__hub *w = (vf__hub *)h;
    if (h->requests > 0)
        snprintf(w->answered, sizeof w->answered, "the Hub (%s), commit %.12s, %zu requests", h->endpoint,
                 h->info.sha, h->requests);
    else
        snprintf(w->answered, sizeof w->answered, "vramfit's cache of the Hub, commit %.12s (--refresh fetches again)",
                 h->info.sha);
    return h->answered;
}

void vf__hub_save(vf__hub *h)
{
    vf__hub_stream_end(h, false);
    char esc[3200], sub[3300];
    bool ok = true;
    for (size_t i = 0; i < h->info.n_files; i++) {
        hub_file *f = &h->files[i];
        if (!f->dirty)
            continue;
        vf__hubcache_escape(f->name, esc, sizeof esc);
        snprintf(sub, sizeof sub, "%s/files/%s", h->info.sha, esc);
        char *p = vf__hubcache_dir(h->id.repo, sub);
        ok = p && vf__hubcache_put(p, f->data, f->len, f->total) && ok;
        free(p);
    }
    if (h->api_dirty && ok) { /* the answer last: an entry names only files already kept */
        snprintf(sub, sizeof sub, "%s/api.json", h->info.sha);
        char *p = vf__hubcache_dir(h->id.repo, sub);
        ok = p && vf__hubcache_put(p, h->api_text, h->api_len, h->api_len);
        free(p);
        vf__hubcache_escape(h->id.rev, esc, sizeof esc);
        snprintf(sub, sizeof sub, "refs/%s", esc);
        p = vf__hubcache_dir(h->id.repo, sub);
        if (ok && p)
            vf__hubcache_put(p, h->info.sha, 40, 40);
        free(p);
    }
}

void vf__hub_free(vf__hub *h)
{
    if (!h)
        return;
    vf__hub_stream_end(h, true);
    for (size_t i = 0; h->files && i < h->info.n_files; i++) {
        free(h->files[i].data);
        free(h->files[i].url);
    }
    free(h->files);
    vf__hub_info_free(&h->info);
    vf__http_free(h->http);
    if (h->token) {
        memset(h->token, 0, strlen(h->token));
        free(h->token);
    }
    free(h->api_text);
    free(h->pick);
    free(h);
}
