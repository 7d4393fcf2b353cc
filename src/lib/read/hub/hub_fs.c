/* hub_fs.c — a Hub repository as a file set the readers read through.
 *
 * Each file is known by its first bytes: opening it fetches bytes
 * [0, 64 KiB) by a range request (its size comes with them, in
 * Content-Range), and a read past them fetches only up to what the reader
 * asked for, so a safetensors header costs one request, or two when it is
 * longer than 64 KiB, and a GGUF header is read 64 KiB at a time as its
 * reader walks it. Never a weight file's data. A whole file is fetched only
 * for the small ones read whole (config.json, the index). What vramfit's
 * cache holds is used first, unless --refresh. The shards of a checkpoint
 * are fetched as chains over the pool (fs_prefetch): each shard's rest is
 * asked for the moment its first bytes arrive. */
#include "read/hub/hub_cache.h"
#include "read/hub/hub_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vf__hub_urlenc(const char *s, bool keep_slash, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t k = 0;
    for (const unsigned char *c = (const unsigned char *)s; *c && k + 4 < cap; c++) {
        bool plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' ||
                     *c == '_' || *c == '-' || *c == '~' || (keep_slash && *c == '/');
        if (plain) {
            out[k++] = (char)*c;
        } else {
            out[k++] = '%';
            out[k++] = hex[*c >> 4];
            out[k++] = hex[*c & 15];
        }
    }
    out[k] = '\0';
}

static vf__hub *hub_of(vf__fs *fs) { return (vf__hub *)fs; }

/* The network, made on first use; refused offline. */
static vf_status network(vf__hub *h, const char *label, vf_error *err)
{
    if (h->offline)
        return vf__err(err, VF_ENOENT, label,
                       "not in the local caches, and offline (HF_HUB_OFFLINE or --offline): the Hub was not asked");
    if (h->http)
        return VF_OK;
    long total = h->o.timeout_s > 0 ? h->o.timeout_s : 60;
    h->http = vf__http_new(h->endpoint, h->token, total < 10 ? total : 10, total, err);
    return h->http ? VF_OK : (err ? err->status : VF_EIO);
}

static void stream_end(vf__hub *h, bool cancel);
void vf__hub_stream_end(vf__hub *h, bool cancel) { stream_end(h, cancel); }

vf_status vf__hub_get(vf__hub *h, const char *url, size_t cap, const char *label, char **body, size_t *len,
                      vf_error *err)
{
    *body = NULL;
    stream_end(h, false); /* one batch on the pool at a time */
    vf_status st = network(h, label, err);
    if (st != VF_OK)
        return st;
    vf__http_req r = {.url = url, .cap = cap, .label = label};
    vf__http_run(h->http, &r, 1, NULL);
    h->requests++;
    if (r.st != VF_OK) {
        if (err)
            *err = r.err;
        return r.st;
    }
    *body = (char *)r.body;
    *len = r.len;
    r.body = NULL;
    vf__http_req_clear(&r);
    return VF_OK;
}

/* ---- the files ---- */

static hub_file *find(vf__hub *h, const char *path)
{
    size_t rl = strlen(h->root);
    if (strncmp(path, h->root, rl) != 0 || path[rl] != '/')
        return NULL;
    const char *name = path + rl + 1;
    for (size_t i = 0; i < h->info.n_files; i++)
        if (strcmp(h->files[i].name, name) == 0)
            return &h->files[i];
    return NULL;
}

static char *entry_path(vf__hub *h, const hub_file *f)
{
    char esc[3 * 1024 + 8], sub[3 * 1024 + 64];
    vf__hubcache_escape(f->name, esc, sizeof esc);
    snprintf(sub, sizeof sub, "%s/files/%s", h->info.sha, esc);
    return vf__hubcache_dir(h->id.repo, sub);
}

/* What vramfit's cache holds of f, once. */
static void from_cache(vf__hub *h, hub_file *f)
{
    if (f->looked_in_cache || f->data)
        return;
    f->looked_in_cache = true;
    if (h->o.refresh)
        return;
    char *p = entry_path(h, f);
    if (p && vf__hubcache_get(p, VF_SAFETENSORS_MAX_HEADER + VF_HUB_FIRST_READ, &f->data, &f->len, &f->total))
        f->have_total = true;
    free(p);
}

static void resolve_url(vf__hub *h, const hub_file *f, char *out, size_t cap)
{
    char name[3 * 1024 + 8];
    vf__hub_urlenc(f->name, true, name, sizeof name);
    snprintf(out, cap, "%s/%s/resolve/%s/%s", h->endpoint, h->id.repo, h->info.sha, name);
}

/* Appends one answered range to its file. */
static vf_status take(hub_file *f, vf__http_req *r, const char *label, vf_error *err)
{
    if (f->have_total && r->total != f->total)
        return vf__err(err, VF_EIO, label, "the file's size changed between requests (%llu, then %llu bytes)",
                       (unsigned long long)f->total, (unsigned long long)r->total);
    if ((r->len == 0 && r->total != 0) || r->len > SIZE_MAX - f->len - 1)
        return vf__err(err, VF_EIO, label, "the server sent no bytes for the range asked for");
    unsigned char *d = realloc(f->data, f->len + r->len + 1);
    if (!d)
        return vf__err(err, VF_ENOMEM, label, "out of memory");
    memcpy(d + f->len, r->body, r->len);
    f->data = d;
    f->len += r->len;
    f->data[f->len] = '\0';
    f->total = r->total;
    f->have_total = true;
    f->dirty = true;
    if (!f->url && r->final_url) {
        f->url = r->final_url;
        r->final_url = NULL;
    }
    return VF_OK;
}

/* One file's bytes wanted from the network. */
typedef struct want {
    hub_file *f;
    uint64_t upto;    /* a range: the file's first upto bytes */
    size_t cap;       /* a whole file of at most cap bytes (0: a range) */
    vf__need_fn need; /* a header: once its first bytes came, exactly the rest of it, at once */
    bool soft;        /* asked for ahead of its reader: a failure is the reader's to meet */
    bool keep;        /* a failure stays with the file (a prefetch: its open reports it) */
    bool done;        /* ended for good */
    vf_status st;     /* how it went */
    vf_error err;
    char label[8 + VF_HUB_REPO_MAX + 1024];
    char url[4200];
} want;

/* Wants on their way: w[i] answers rs[i]. A stream (a prefetch) owns its
 * wants and outlives the call that started it (hub_priv.h). */
typedef struct hub_batch {
    vf__hub *h;
    want *owned;
    want **w;
    vf__http_req *rs;
    vf__http_batch *run;
} batch;

/* Sets r to ask for what w's file lacks; false when it lacks nothing. */
static bool arm(want *w, vf__http_req *r)
{
    hub_file *f = w->f;
    if (w->cap) {
        *r = (vf__http_req){.url = w->url, .cap = w->cap, .label = w->label};
        return true;
    }
    /* the first read is 64 KiB (the size comes with it); later ones only
     * what the reader asked for, so a long header costs exactly itself */
    uint64_t last = f->len == 0 && w->upto < VF_HUB_FIRST_READ ? VF_HUB_FIRST_READ : w->upto;
    if (f->have_total && last > f->total)
        last = f->total;
    if (f->have_total && f->len >= last)
        return false;
    *r = (vf__http_req){.url = f->url ? f->url : w->url, .ranged = true, .first = f->len, .last = last - 1,
                        .label = w->label};
    return true;
}

/* A whole file's answer replaces what was held. */
static void take_whole(hub_file *f, vf__http_req *r)
{
    free(f->data);
    f->data = r->body;
    f->len = r->len;
    f->total = r->len;
    f->have_total = f->dirty = true;
    r->body = NULL;
}

/* The then hook: keeps request i's answer in its file and, for a header
 * whose first bytes say it is longer, asks for exactly the rest on the same
 * slot at once (no round waits on the slowest shard). */
static bool settle(void *ctx, size_t i, vf__http_req *r)
{
    batch *b = ctx;
    want *w = b->w[i];
    hub_file *f = w->f;
    b->h->requests++;
    if (r->st != VF_OK) {
        w->st = r->st;
        w->err = r->err;
    } else if (w->cap) {
        take_whole(f, r);
        w->st = VF_OK;
    } else {
        w->st = take(f, r, w->label, &w->err);
    }
    vf__http_req_clear(r);
    if (w->st != VF_OK && w->keep && !w->soft) {
        f->st = w->st; /* reported when the reader opens it */
        f->err = w->err;
    }
    uint64_t upto = w->st == VF_OK && w->need ? w->need(f->data, f->len, f->total) : 0;
    w->need = NULL; /* the length word is read once */
    if (upto > f->len) {
        w->upto = upto;
        if (arm(w, r))
            return true;
    }
    w->done = true;
    return false;
}

/* Starts fetching what each want lacks, all at once; NULL (each want
 * saying why) when out of memory. */
static batch *batch_start(vf__hub *h, want *w, size_t n)
{
    batch *b = calloc(1, sizeof *b);
    if (b) {
        b->h = h;
        b->w = calloc(n ? n : 1, sizeof *b->w);
        b->rs = calloc(n ? n : 1, sizeof *b->rs);
    }
    if (!b || !b->w || !b->rs) {
        for (size_t i = 0; i < n; i++) {
            w[i].st = vf__err(&w[i].err, VF_ENOMEM, h->root, "out of memory");
            w[i].done = true;
        }
        if (b) {
            free(b->w);
            free(b->rs);
        }
        free(b);
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        w[i].st = VF_OK;
        w[i].done = false;
        snprintf(w[i].label, sizeof w[i].label, "%s/%s", h->root, w[i].f->name);
        resolve_url(h, w[i].f, w[i].url, sizeof w[i].url);
        if (arm(&w[i], &b->rs[k]))
            b->w[k++] = &w[i];
        else
            w[i].done = true; /* nothing lacking */
    }
    bool many = k >= 8 && h->o.progress;
    vf__http_hooks hooks = {settle, many ? h->o.progress : NULL, b};
    b->run = vf__http_begin(h->http, b->rs, k, &hooks);
    for (size_t i = 0; !b->run && i < k; i++) { /* out of memory: each request says so */
        b->w[i]->st = b->rs[i].st;
        b->w[i]->err = b->rs[i].err;
        b->w[i]->done = true;
    }
    return b;
}

/* Runs the rest to the end (or cancels it) and frees the batch. */
static void batch_end(batch *b, bool cancel)
{
    if (!b)
        return;
    vf__http_end(b->run, cancel);
    free(b->w);
    free(b->rs);
    free(b->owned);
    free(b);
}

/* Fetches what each want lacks, all at once, each want's outcome in its st. */
static void fetch(vf__hub *h, want *w, size_t n)
{
    batch_end(batch_start(h, w, n), false);
}

/* ---- the stream: a prefetch whose transfers go on while the reader reads ---- */

/* Ends the stream (cancel: what still runs is dropped); the pool serves one
 * batch at a time, so any other fetch ends it first. */
static void stream_end(vf__hub *h, bool cancel)
{
    batch_end(h->stream, cancel);
    h->stream = NULL;
}

/* Moves the stream on without waiting; for f in it, waits until its want
 * ended: VF_OK, or the failure its reader meets (in *err). Each of the
 * reader's reads moves the stream on, so the transfers continue while the
 * reader parses what came. */
static vf_status stream_wait(vf__hub *h, hub_file *f, vf_error *err)
{
    batch *b = h->stream;
    if (!b)
        return VF_OK;
    bool more = b->run && vf__http_step(b->run, 0);
    want *w = NULL;
    for (size_t i = 0; b->owned && b->owned[i].f; i++)
        if (b->owned[i].f == f)
            w = &b->owned[i];
    while (w && !w->done && more)
        more = vf__http_step(b->run, 100);
    vf_status st = w && w->done && !w->soft ? w->st : VF_OK;
    if (st != VF_OK && err)
        *err = w->err;
    if (!more)
        stream_end(h, false); /* all ended: the pool is free again */
    return st;
}

/* The pick's config.json, which the opener reads beside safetensors weights,
 * joins the first fetch that goes to the network (one round trip fewer). */
static void with_sidecar(vf__hub *h, want *w, size_t *k)
{
    if (h->sidecar_asked)
        return;
    h->sidecar_asked = true;
    if (!vf__ends_with(h->pick, ".safetensors") && !vf__ends_with(h->pick, ".index.json"))
        return;
    const char *slash = strrchr(h->pick, '/');
    char path[sizeof w->label];
    snprintf(path, sizeof path, "%.*s/config.json", (int)(slash - h->pick), h->pick);
    hub_file *f = find(h, path);
    if (!f)
        return;
    from_cache(h, f);
    for (size_t i = 0; i < *k; i++)
        if (w[i].f == f)
            return;
    if (f->have_total && f->len == f->total)
        return;
    w[*k] = (want){.f = f, .cap = VF_MAX_CONFIG_BYTES, .soft = true};
    (*k)++;
}

/* f's first upto bytes (or all of it, when shorter) in f->data; cap: the
 * whole file instead, at most cap bytes. */
static vf_status ensure(vf__hub *h, hub_file *f, uint64_t upto, size_t cap, const char *label, vf_error *err)
{
    from_cache(h, f);
    vf_status st = stream_wait(h, f, err);
    if (st != VF_OK)
        return st;
    if (f->have_total && (cap ? f->len == f->total : f->len >= (upto < f->total ? upto : f->total)))
        return VF_OK;
    stream_end(h, false);
    st = network(h, label, err);
    if (st != VF_OK)
        return st;
    want *w = calloc(2, sizeof *w);
    if (!w)
        return vf__err(err, VF_ENOMEM, label, "out of memory");
    size_t k = 1;
    w[0] = (want){.f = f, .upto = upto, .cap = cap};
    with_sidecar(h, w, &k);
    fetch(h, w, k);
    st = w[0].st;
    if (st != VF_OK && err)
        *err = w[0].err;
    free(w);
    return st;
}

/* ---- the byte source ---- */

typedef struct hub_src {
    vf__src base;
    vf__hub *h;
    hub_file *f;
} hub_src;

static vf_status src_pread(vf__src *s, void *buf, size_t n, uint64_t off, vf_error *err)
{
    hub_src *x = (hub_src *)s;
    uint64_t end;
    if (vf__add_overflow(off, n, &end) || end > s->size)
        return vf__err(err, VF_EFORMAT, s->path, "file is truncated");
    vf_status st = ensure(x->h, x->f, end, 0, s->path, err);
    if (st != VF_OK)
        return st;
    if (x->f->len < end)
        return vf__err(err, VF_EIO, s->path, "the server sent fewer bytes than asked for");
    memcpy(buf, x->f->data + off, n);
    return VF_OK;
}

static void src_close(vf__src *s) { free(s); }

static const vf__src_ops hub_src_ops = {src_pread, src_close};

static vf_status fs_open(vf__fs *fs, const char *path, vf__src **out, vf_error *err)
{
    vf__hub *h = hub_of(fs);
    *out = NULL;
    hub_file *f = find(h, path);
    if (!f)
        return vf__err(err, VF_ENOENT, path, "the repository has no such file");
    if (f->st != VF_OK) {
        if (err)
            *err = f->err;
        return f->st;
    }
    vf_status st = ensure(h, f, VF_HUB_FIRST_READ, 0, path, err);
    if (st != VF_OK)
        return st;
    hub_src *s = calloc(1, sizeof *s);
    if (!s)
        return vf__err(err, VF_ENOMEM, path, "out of memory");
    *s = (hub_src){{&hub_src_ops, path, f->total}, h, f};
    *out = &s->base;
    return VF_OK;
}

static bool fs_exists(vf__fs *fs, const char *path) { return find(hub_of(fs), path) != NULL; }

static vf_status fs_read_small(vf__fs *fs, const char *path, size_t cap, char **out, size_t *len, vf_error *err)
{
    vf__hub *h = hub_of(fs);
    *out = NULL;
    hub_file *f = find(h, path);
    if (!f)
        return vf__err(err, VF_ENOENT, path, "the repository has no such file");
    vf_status st = ensure(h, f, 0, cap, path, err);
    if (st != VF_OK)
        return st;
    if (f->total > cap)
        return vf__err(err, VF_EFORMAT, path, "file is %llu bytes, over the %zu-byte limit",
                       (unsigned long long)f->total, cap);
    if (!(*out = malloc(f->len + 1)))
        return vf__err(err, VF_ENOMEM, path, "out of memory");
    memcpy(*out, f->data, f->len);
    (*out)[f->len] = '\0';
    *len = f->len;
    return VF_OK;
}

/* All the files' heads at once, each a chain on one slot: its first 64 KiB,
 * then at once, for a header longer than that, exactly the rest of it. Up
 * to STREAM_MAX files the fetching goes on while the reader reads them (a
 * stream, moved on by each read); more are fetched in batches first. */
#define PREFETCH_BATCH 256 /* files per batch: bounds the bookkeeping, not the pool */
#define STREAM_MAX 1024    /* files a stream keeps wants for (~5 KiB each) */

static size_t prefetch_wants(vf__hub *h, const char *const *paths, size_t n, vf__need_fn need, want *w)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        hub_file *f = find(h, paths[i]);
        if (!f || f->st != VF_OK)
            continue;
        from_cache(h, f);
        if (f->have_total) /* its head from the cache: at most the rest of the header is lacking */
            w[k++] = (want){.f = f, .upto = need(f->data, f->len, f->total), .keep = true};
        else
            w[k++] = (want){.f = f, .upto = VF_HUB_FIRST_READ, .need = need, .keep = true};
    }
    with_sidecar(h, w, &k);
    return k;
}

static void fs_prefetch(vf__fs *fs, const char *const *paths, size_t n, vf__need_fn need)
{
    vf__hub *h = hub_of(fs);
    vf_error e;
    stream_end(h, false);
    if (network(h, h->root, &e) != VF_OK)
        return; /* each open then fetches, or says why not */
    if (n <= STREAM_MAX) {
        want *w = calloc(n + 2, sizeof *w); /* the sidecar, and a zero entry that ends the list */
        if (!w)
            return;
        size_t k = prefetch_wants(h, paths, n, need, w);
        batch *b = batch_start(h, w, k);
        if (b)
            b->owned = w;
        else
            free(w);
        h->stream = b;
        return;
    }
    want *w = calloc(PREFETCH_BATCH + 1, sizeof *w);
    for (size_t at = 0; w && at < n; at += PREFETCH_BATCH)
        fetch(h, w, prefetch_wants(h, paths + at, n - at < PREFETCH_BATCH ? n - at : PREFETCH_BATCH, need, w));
    free(w);
}

const vf__fs_ops vf__hub_fs_ops = {fs_open, fs_exists, fs_read_small, fs_prefetch};
