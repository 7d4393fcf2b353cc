/* hub_priv.h — the repository object shared by hub_open.c and hub_fs.c. */
#ifndef VF_HUB_PRIV_H
#define VF_HUB_PRIV_H

#include "read/hub/hub.h"
#include "read/hub/hub_http.h"

#define VF_HUB_FIRST_READ ((uint64_t)64 << 10) /* a file's first range: 64 KiB */
#define VF_HUB_API_CAP ((size_t)64 << 20)      /* the API's answer */

typedef struct hub_file {
    const char *name;    /* repository path, into info.files */
    unsigned char *data; /* the file's first len bytes (+1 NUL) */
    size_t len;
    uint64_t total;      /* the whole file's size, once known */
    bool have_total;
    bool looked_in_cache;
    bool dirty;          /* fetched in this run: to be cached */
    char *url;           /* where the bytes are after redirects */
    vf_status st;        /* a failed prefetch, reported on open */
    vf_error err;
} hub_file;

struct vf__hub {
    vf__fs fs; /* first member: the file set hands itself back as a vf__hub */
    vf__hub_id id;
    vf__hub_opts o;
    bool offline;
    char endpoint[400];
    char *token;
    vf__http *http; /* made on the first request */
    char root[8 + VF_HUB_REPO_MAX];
    char *api_text;
    size_t api_len;
    bool api_dirty;
    vf__hub_info info;
    hub_file *files; /* one per info.files[i] */
    char *pick;
    char answered[600];
    size_t requests; /* HTTP requests made by this run */
    bool sidecar_asked; /* the pick's config.json joined a fetch (hub_fs.c) */
    struct hub_batch *stream; /* a prefetch whose transfers go on as the reader reads (hub_fs.c) */
};

/* hub_fs.c */
VF_HIDDEN extern const vf__fs_ops vf__hub_fs_ops;
/* GET endpoint+path (whole, ≤ cap), label for errors; the network's gate */
VF_HIDDEN vf_status vf__hub_get(vf__hub *h, const char *url, size_t cap, const char *label, char **body, size_t *len,
                                vf_error *err);
/* ends a prefetch still running (cancel: drops what still runs) */
VF_HIDDEN void vf__hub_stream_end(vf__hub *h, bool cancel);
/* url-encodes s into out (keep: unreserved and, when keep_slash, '/') */
VF_HIDDEN void vf__hub_urlenc(const char *s, bool keep_slash, char *out, size_t cap);

#endif
