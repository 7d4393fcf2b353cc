/* hub_http.h — HTTP for the Hub: libcurl's multi interface over a bounded
 * pool of kept-alive connections, redirects followed by hand so that the
 * token goes to the endpoint's origin only, and every answer checked as
 * untrusted input (status, Content-Range, length, content type). */
#ifndef VF_HUB_HTTP_H
#define VF_HUB_HTTP_H

#include "model/model.h"

#define VF_HUB_MAX_REDIRECTS 5
#define VF_HUB_POOL 16 /* transfers in flight at most, and connections to one host */

typedef struct vf__http vf__http;

typedef struct vf__http_req {
    /* in */
    const char *url;
    bool ranged;              /* ask for bytes [first, last] */
    uint64_t first, last;
    size_t cap;               /* most body bytes taken (a whole file: its size limit) */
    const char *label;        /* "hf://org/name/file": labels errors */
    /* out */
    unsigned char *body;      /* malloc'd, len bytes (+1 NUL) */
    size_t len;
    uint64_t total;           /* the whole file's size (Content-Range, else the body) */
    char *final_url;          /* where the bytes came from after redirects (malloc'd) */
    long http_status;
    vf_status st;
    vf_error err;
} vf__http_req;

/* endpoint: "https://huggingface.co" (no trailing slash); token may be NULL.
 * connect_s and total_s bound every request. */
VF_HIDDEN vf__http *vf__http_new(const char *endpoint, const char *token, long connect_s, long total_s,
                                 vf_error *err);
VF_HIDDEN void vf__http_free(vf__http *h);
/* What the caller hears while requests run (every member may be NULL).
 * then: request i ended (its st, body, ...); the callback takes what it
 * needs, and returns true having set reqs[i]'s url and range anew (and
 * cleared its body) to run it again at once on the slot it freed, ahead of
 * the requests not started yet: a follow-up never waits behind them. A
 * follow-up that cannot start comes back to the hook failed, so it must arm
 * one only after an answer it took.
 * progress: called as requests end for good (done of n). */
typedef struct vf__http_hooks {
    bool (*then)(void *ctx, size_t i, vf__http_req *r);
    void (*progress)(void *ctx, size_t done, size_t total);
    void *ctx;
} vf__http_hooks;

/* Runs n requests, at most VF_HUB_POOL at once; each gets its own st/err.
 * hooks may be NULL. */
VF_HIDDEN void vf__http_run(vf__http *h, vf__http_req *reqs, size_t n, const vf__http_hooks *hooks);

/* The same, a step at a time, so that a caller can work between steps while
 * the transfers go on (one batch on a vf__http at a time). begin: NULL when
 * out of memory (each request says so). step: starts what the pool has room
 * for, takes what ended, waits at most wait_ms for more (0: not at all);
 * false once every request ended. end: runs the rest to the end, or with
 * cancel ends what still runs with an error (its hook not called); frees. */
typedef struct vf__http_batch vf__http_batch;
VF_HIDDEN vf__http_batch *vf__http_begin(vf__http *h, vf__http_req *reqs, size_t n, const vf__http_hooks *hooks);
VF_HIDDEN bool vf__http_step(vf__http_batch *b, int wait_ms);
VF_HIDDEN void vf__http_end(vf__http_batch *b, bool cancel);
VF_HIDDEN void vf__http_req_clear(vf__http_req *r);

/* Policy checks, exposed for the unit tests. */
/* true when url has the endpoint's scheme, host and port: the token may go there */
VF_HIDDEN bool vf__http_same_origin(const char *endpoint, const char *url);
/* true when a redirect from → to may be followed (http(s) only; no HTTPS→HTTP
 * downgrade, except to a loopback host) */
VF_HIDDEN bool vf__http_redirect_ok(const char *from, const char *to);
/* "bytes a-b/total" → true when it answers exactly [first, ≤last] */
VF_HIDDEN bool vf__http_content_range(const char *v, uint64_t first, uint64_t last, uint64_t *a, uint64_t *b,
                                      uint64_t *total);

#endif
