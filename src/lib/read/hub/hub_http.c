/* hub_http.c — requests to the Hub through libcurl's multi interface.
 *
 * One multi handle per opened repository: its connection cache keeps the
 * connections alive between requests, and at most VF_HUB_POOL transfers
 * run at once. CURLMOPT_MAX_HOST_CONNECTIONS bounds the sockets to one host
 * to VF_HUB_POOL as well; the Hub and the CDN it redirects to keep a pool
 * each (2 x VF_HUB_POOL sockets at most): a file's requests go to one, then
 * the other, and one shared pool of VF_HUB_POOL closed and reopened a
 * connection on most of them (a TLS handshake each, on the real Hub).
 * Redirects are followed here, not by libcurl, so that each hop is checked:
 * at most VF_HUB_MAX_REDIRECTS, http(s) only, no HTTPS→HTTP downgrade, and
 * the Authorization header only on the endpoint's own scheme, host and port
 * (the Hub sends weight files to a CDN host that must not see the token). */
#include "read/hub/hub_http.h"

#include "read/hub/hub_curl.h" /* libcurl through its table: curl_* below call it */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ERROR_BODY_CAP ((size_t)1 << 20) /* an error page is read this far, then dropped */

struct vf__http {
    CURLM *multi;
    char *endpoint;
    char *auth;  /* "Authorization: Bearer ..." or NULL */
    long connect_s, total_s;
};

typedef struct xfer {
    vf__http *h;
    vf__http_req *r;
    CURL *e;
    struct curl_slist *hdrs;
    char *url;      /* the current hop's URL (malloc'd) */
    int hops;
    bool too_long;
    size_t dropped; /* bytes of an error body not kept */
    char content_range[96];
    char content_type[96];
    char error_code[48];
} xfer;

/* ---- policy ---- */

static bool url_parts(const char *url, char **scheme, char **host, char **port)
{
    *scheme = *host = *port = NULL;
    if (!vf__curl())
        return false;
    CURLU *u = curl_url();
    bool ok = u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
              curl_url_get(u, CURLUPART_SCHEME, scheme, 0) == CURLUE_OK &&
              curl_url_get(u, CURLUPART_HOST, host, 0) == CURLUE_OK &&
              curl_url_get(u, CURLUPART_PORT, port, CURLU_DEFAULT_PORT) == CURLUE_OK;
    curl_url_cleanup(u);
    return ok;
}

static void parts_free(char *a, char *b, char *c)
{
    if (!vf__curl())
        return; /* url_parts made none */
    curl_free(a);
    curl_free(b);
    curl_free(c);
}

bool vf__http_same_origin(const char *endpoint, const char *url)
{
    char *s1, *h1, *p1, *s2, *h2, *p2;
    bool a = url_parts(endpoint, &s1, &h1, &p1), b = url_parts(url, &s2, &h2, &p2);
    bool same = a && b && strcasecmp(s1, s2) == 0 && strcasecmp(h1, h2) == 0 && strcmp(p1, p2) == 0;
    parts_free(s1, h1, p1);
    parts_free(s2, h2, p2);
    return same;
}

static bool loopback(const char *host)
{
    return strcmp(host, "127.0.0.1") == 0 || strcasecmp(host, "localhost") == 0 || strcmp(host, "[::1]") == 0 ||
           strcmp(host, "::1") == 0;
}

bool vf__http_redirect_ok(const char *from, const char *to)
{
    char *s1, *h1, *p1, *s2, *h2, *p2;
    bool a = url_parts(from, &s1, &h1, &p1), b = url_parts(to, &s2, &h2, &p2);
    bool ok = a && b && (strcasecmp(s2, "https") == 0 || strcasecmp(s2, "http") == 0);
    if (ok && strcasecmp(s1, "https") == 0 && strcasecmp(s2, "http") == 0)
        ok = loopback(h2); /* a downgrade only where nothing leaves the machine (tests) */
    parts_free(s1, h1, p1);
    parts_free(s2, h2, p2);
    return ok;
}

/* A decimal u64, no sign, no overflow; *end past its last digit. */
static bool dec_u64(const char *s, const char **end, uint64_t *v)
{
    if (*s < '0' || *s > '9')
        return false;
    uint64_t x = 0;
    for (; *s >= '0' && *s <= '9'; s++)
        if (vf__mul_overflow(x, 10, &x) || vf__add_overflow(x, (uint64_t)(*s - '0'), &x))
            return false;
    *end = s;
    *v = x;
    return true;
}

bool vf__http_content_range(const char *v, uint64_t first, uint64_t last, uint64_t *a, uint64_t *b, uint64_t *total)
{
    if (strncasecmp(v, "bytes ", 6) != 0)
        return false;
    const char *p = v + 6;
    if (!dec_u64(p, &p, a) || *p++ != '-' || !dec_u64(p, &p, b) || *p++ != '/' || !dec_u64(p, &p, total))
        return false;
    while (*p == ' ' || *p == '\t')
        p++;
    return *p == '\0' && *a == first && *b >= *a && *b <= last && *b < *total;
}

/* ---- libcurl callbacks ---- */

static long status_of(CURL *e)
{
    long code = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
    return code;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ctx)
{
    xfer *x = ctx;
    size_t n = size * nmemb;
    long code = status_of(x->e);
    if (code < 200 || code > 299) { /* a redirect's or an error's body: not kept, but bounded */
        x->dropped += n;
        return x->dropped > ERROR_BODY_CAP ? 0 : n;
    }
    vf__http_req *r = x->r;
    if (n > r->cap - r->len) {
        x->too_long = true;
        return 0;
    }
    if (!r->body && !(r->body = malloc(r->cap + 1)))
        return 0;
    memcpy(r->body + r->len, data, n);
    r->len += n;
    return n;
}

/* Keeps the value of one response header (trimmed) when its name matches. */
static void keep_header(const char *line, size_t n, const char *name, char *dst, size_t cap)
{
    size_t k = strlen(name);
    if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
        return;
    const char *v = line + k + 1, *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    size_t len = (size_t)(end - v) < cap - 1 ? (size_t)(end - v) : cap - 1;
    memcpy(dst, v, len);
    dst[len] = '\0';
}

static size_t on_header(char *line, size_t size, size_t nmemb, void *ctx)
{
    xfer *x = ctx;
    size_t n = size * nmemb;
    keep_header(line, n, "content-range", x->content_range, sizeof x->content_range);
    keep_header(line, n, "content-type", x->content_type, sizeof x->content_type);
    keep_header(line, n, "x-error-code", x->error_code, sizeof x->error_code);
    return n;
}

/* ---- one transfer ---- */

static vf_status fail(xfer *x, vf_status st, const char *fmt, ...) VF_PRINTF(3, 4);
static vf_status fail(xfer *x, vf_status st, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    x->r->st = vf__err(&x->r->err, st, x->r->label, "%s", msg);
    return x->r->st;
}

/* Sets the easy handle up for the current hop and adds it to the multi. */
static vf_status start_hop(xfer *x)
{
    vf__http *h = x->h;
    vf__http_req *r = x->r;
    x->too_long = false;
    x->dropped = 0;
    x->content_range[0] = x->content_type[0] = x->error_code[0] = '\0';
    r->len = 0;
    curl_slist_free_all(x->hdrs);
    x->hdrs = NULL;
    char range[64];
    if (r->ranged) {
        snprintf(range, sizeof range, "Range: bytes=%llu-%llu", (unsigned long long)r->first,
                 (unsigned long long)r->last);
        x->hdrs = curl_slist_append(x->hdrs, range);
    }
    if (h->auth && vf__http_same_origin(h->endpoint, x->url))
        x->hdrs = curl_slist_append(x->hdrs, h->auth);
    if (!x->e && !(x->e = curl_easy_init()))
        return fail(x, VF_ENOMEM, "out of memory");
    CURL *e = x->e;
    curl_easy_setopt(e, CURLOPT_URL, x->url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->hdrs);
    curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, h->connect_s);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, h->total_s);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "vramfit/" VF_VERSION_STRING);
    if (curl_multi_add_handle(h->multi, e) != CURLM_OK)
        return fail(x, VF_EIO, "cannot start a transfer");
    return VF_OK;
}

static vf_status transport_error(xfer *x, CURLcode res)
{
    vf__http_req *r = x->r;
    if (x->too_long)
        return r->ranged ? fail(x, VF_EIO, "the server sent more than the %llu bytes asked for",
                                (unsigned long long)(r->last - r->first + 1))
                         : fail(x, VF_EFORMAT, "file is over the %zu-byte limit", r->cap);
    if (res == CURLE_OPERATION_TIMEDOUT)
        return fail(x, VF_EIO, "no answer within %ld s (--hub-timeout)", x->h->total_s);
    if (res == CURLE_PARTIAL_FILE)
        return fail(x, VF_EIO, "the answer is truncated (fewer bytes than announced)");
    if (res == CURLE_COULDNT_RESOLVE_HOST || res == CURLE_COULDNT_CONNECT)
        return fail(x, VF_EIO, "cannot reach %s: %s", x->h->endpoint, curl_easy_strerror(res));
    return fail(x, VF_EIO, "transfer failed: %s", curl_easy_strerror(res));
}

static vf_status http_error(xfer *x, long code)
{
    if (code == 401 || code == 403) {
        if (!x->h->auth)
            return fail(x, VF_EIO, "gated or private repository (HTTP %ld%s%s): set HF_TOKEN to a token with access",
                        code, x->error_code[0] ? ", " : "", x->error_code);
        return fail(x, VF_EIO, "the token (HF_TOKEN) has no access to this repository (HTTP %ld%s%s)", code,
                    x->error_code[0] ? ", " : "", x->error_code);
    }
    if (code == 404)
        return fail(x, VF_ENOENT, "not found on the Hub (HTTP 404%s%s)", x->error_code[0] ? ", " : "",
                    x->error_code);
    if (code == 416)
        return fail(x, VF_EIO, "the server refused the byte range (HTTP 416)");
    return fail(x, VF_EIO, "the server answered HTTP %ld", code);
}

/* A 2xx answer: are these the bytes asked for? */
static vf_status check_body(xfer *x, long code)
{
    vf__http_req *r = x->r;
    if (strncasecmp(x->content_type, "text/html", 9) == 0)
        return fail(x, VF_EIO, "the server sent an html page where %s were expected",
                    r->ranged ? "file bytes" : "the file");
    if (!r->ranged) {
        if (code != 200)
            return fail(x, VF_EIO, "the server answered HTTP %ld to a plain request", code);
        r->total = r->len;
        return VF_OK;
    }
    if (code == 200) { /* range ignored: acceptable only for a whole file that fits the range */
        if (r->first != 0)
            return fail(x, VF_EIO, "the server ignored the byte range (HTTP 200)");
        r->total = r->len;
        return VF_OK;
    }
    uint64_t a, b, total;
    if (code != 206 || !x->content_range[0])
        return fail(x, VF_EIO, "the server answered HTTP %ld without a content-range", code);
    if (!vf__http_content_range(x->content_range, r->first, r->last, &a, &b, &total))
        return fail(x, VF_EIO, "content-range '%s' does not answer the range asked for (bytes %llu-%llu)",
                    x->content_range, (unsigned long long)r->first, (unsigned long long)r->last);
    if (r->len != b - a + 1)
        return fail(x, VF_EIO, "the answer has %zu bytes, its content-range says %llu", r->len,
                    (unsigned long long)(b - a + 1));
    r->total = total;
    return VF_OK;
}

/* A hop ended: true when it was a redirect and the next hop started. */
static bool end_hop(xfer *x, CURLcode res)
{
    vf__http_req *r = x->r;
    long code = status_of(x->e);
    r->http_status = code;
    if (res != CURLE_OK) {
        transport_error(x, res);
        return false;
    }
    if (code == 301 || code == 302 || code == 303 || code == 307 || code == 308) {
        char *loc = NULL;
        curl_easy_getinfo(x->e, CURLINFO_REDIRECT_URL, &loc);
        if (!loc) {
            fail(x, VF_EIO, "a redirect (HTTP %ld) without a location", code);
            return false;
        }
        if (++x->hops > VF_HUB_MAX_REDIRECTS) {
            fail(x, VF_EIO, "more than %d redirects (a redirect loop?)", VF_HUB_MAX_REDIRECTS);
            return false;
        }
        if (!vf__http_redirect_ok(x->url, loc)) {
            fail(x, VF_EIO, "refused a redirect to '%.200s' (not http(s), or https to http)", loc);
            return false;
        }
        char *next = strdup(loc);
        if (!next) {
            fail(x, VF_ENOMEM, "out of memory");
            return false;
        }
        free(x->url);
        x->url = next;
        return start_hop(x) == VF_OK;
    }
    if (code == 416 && x->r->ranged && x->r->first == 0 && strcmp(x->content_range, "bytes */0") == 0) {
        x->r->total = 0; /* an empty file: no byte range exists in it */
        x->r->st = VF_OK;
    } else if (code < 200 || code > 299)
        http_error(x, code);
    else if (check_body(x, code) == VF_OK)
        r->st = VF_OK;
    return false;
}

static void end_xfer(xfer *x)
{
    vf__http_req *r = x->r;
    if (r->st == VF_OK) {
        if (r->body)
            r->body[r->len] = '\0';
        else if (!(r->body = calloc(1, 1)))
            r->st = vf__err(&r->err, VF_ENOMEM, r->label, "out of memory");
        r->final_url = x->url;
        x->url = NULL;
    } else {
        free(r->body);
        r->body = NULL;
        r->len = 0;
    }
    if (x->e)
        curl_easy_cleanup(x->e);
    curl_slist_free_all(x->hdrs);
    free(x->url);
    x->e = NULL;
    x->hdrs = NULL;
    x->url = NULL;
}

static bool begin_xfer(vf__http *h, xfer *x, vf__http_req *r)
{
    memset(x, 0, sizeof *x);
    x->h = h;
    x->r = r;
    r->st = VF_EIO;
    r->body = NULL;
    r->len = 0;
    r->total = 0;
    r->final_url = NULL;
    if (r->ranged && (r->last < r->first || r->last - r->first >= SIZE_MAX))
        return fail(x, VF_EINVAL, "bad byte range"), false;
    if (r->ranged)
        r->cap = (size_t)(r->last - r->first + 1);
    if (!(x->url = strdup(r->url)))
        return fail(x, VF_ENOMEM, "out of memory"), false;
    return start_hop(x) == VF_OK;
}

/* A request ended for good, or was armed again by the caller's then hook
 * (true: it runs again, on the same slot). */
static bool again(vf__http *h, xfer *x, size_t i, const vf__http_hooks *hooks)
{
    while (hooks && hooks->then && hooks->then(hooks->ctx, i, x->r)) {
        if (begin_xfer(h, x, x->r))
            return true;
        end_xfer(x); /* could not start: its st/err say why, the hook hears it */
    }
    return false;
}

struct vf__http_batch {
    vf__http *h;
    vf__http_req *reqs;
    size_t n, next, active, done;
    vf__http_hooks hooks;
    xfer *xs;
};

vf__http_batch *vf__http_begin(vf__http *h, vf__http_req *reqs, size_t n, const vf__http_hooks *hooks)
{
    vf__http_batch *b = calloc(1, sizeof *b);
    xfer *xs = b ? calloc(n ? n : 1, sizeof *xs) : NULL;
    if (!xs) {
        free(b);
        for (size_t i = 0; i < n; i++)
            reqs[i].st = vf__err(&reqs[i].err, VF_ENOMEM, reqs[i].label, "out of memory");
        return NULL;
    }
    *b = (vf__http_batch){.h = h, .reqs = reqs, .n = n, .xs = xs};
    if (hooks)
        b->hooks = *hooks;
    return b;
}

/* Starts requests while the pool has room. */
static void fill(vf__http_batch *b)
{
    while (b->active < VF_HUB_POOL && b->next < b->n) {
        xfer *x = &b->xs[b->next];
        if (begin_xfer(b->h, x, &b->reqs[b->next]))
            b->active++;
        else {
            end_xfer(x);
            if (again(b->h, x, b->next, &b->hooks))
                b->active++;
            else
                b->done++;
        }
        b->next++;
    }
}

bool vf__http_step(vf__http_batch *b, int wait_ms)
{
    vf__http *h = b->h;
    fill(b);
    int running = 0;
    curl_multi_perform(h->multi, &running);
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(h->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        xfer *x = NULL;
        CURL *e = msg->easy_handle;
        CURLcode res = msg->data.result;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&x);
        curl_multi_remove_handle(h->multi, e);
        if (end_hop(x, res))
            continue;
        end_xfer(x);
        if (again(h, x, (size_t)(x - b->xs), &b->hooks))
            continue; /* the follow-up holds the slot */
        b->active--;
        b->done++;
        if (b->hooks.progress)
            b->hooks.progress(b->hooks.ctx, b->done, b->n);
    }
    fill(b); /* the slots just freed, at once */
    if (b->done < b->n && b->active > 0 && wait_ms > 0)
        curl_multi_poll(h->multi, NULL, 0, wait_ms, NULL);
    return b->done < b->n;
}

void vf__http_end(vf__http_batch *b, bool cancel)
{
    if (!b)
        return;
    while (!cancel && vf__http_step(b, 100))
        ;
    for (size_t i = 0; i < b->next; i++) /* cancelled: what still runs ends, its hook not called */
        if (b->xs[i].e) {
            curl_multi_remove_handle(b->h->multi, b->xs[i].e);
            fail(&b->xs[i], VF_EIO, "cancelled");
            end_xfer(&b->xs[i]);
        }
    free(b->xs);
    free(b);
}

void vf__http_run(vf__http *h, vf__http_req *reqs, size_t n, const vf__http_hooks *hooks)
{
    vf__http_end(vf__http_begin(h, reqs, n, hooks), false);
}

void vf__http_req_clear(vf__http_req *r)
{
    free(r->body);
    free(r->final_url);
    r->body = NULL;
    r->final_url = NULL;
    r->len = 0;
}

vf__http *vf__http_new(const char *endpoint, const char *token, long connect_s, long total_s, vf_error *err)
{
    static bool inited;
    if (!vf__curl())
        return vf__err(err, VF_EIO, endpoint, "the Hub needs libcurl (libcurl.so.4, Debian: libcurl4), which cannot be loaded"), NULL;
    if (!inited) { /* not thread-safe, as curl_global_init itself (documented in vramfit.h) */
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            return vf__err(err, VF_EIO, endpoint, "cannot initialise libcurl"), NULL;
        inited = true;
    }
    vf__http *h = calloc(1, sizeof *h);
    if (!h || !(h->endpoint = strdup(endpoint)) || !(h->multi = curl_multi_init())) {
        vf__http_free(h);
        return vf__err(err, VF_ENOMEM, endpoint, "out of memory"), NULL;
    }
    if (token && *token) {
        size_t n = strlen(token) + 32;
        if (!(h->auth = malloc(n))) {
            vf__http_free(h);
            return vf__err(err, VF_ENOMEM, endpoint, "out of memory"), NULL;
        }
        snprintf(h->auth, n, "Authorization: Bearer %s", token);
    }
    h->connect_s = connect_s;
    h->total_s = total_s;
    curl_multi_setopt(h->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)VF_HUB_POOL);
    curl_multi_setopt(h->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, 2L * VF_HUB_POOL);
    curl_multi_setopt(h->multi, CURLMOPT_MAXCONNECTS, 2L * VF_HUB_POOL);
    return h;
}

void vf__http_free(vf__http *h)
{
    if (!h)
        return;
    if (h->multi)
        curl_multi_cleanup(h->multi);
    if (h->auth) {
        memset(h->auth, 0, strlen(h->auth)); /* the token does not outlive its use */
        free(h->auth);
    }
    free(h->endpoint);
    free(h);
}
