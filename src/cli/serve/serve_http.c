/* serve_http.c — the request handler of 'vramfit serve': the page, and the
 * API that runs estimate / fit / plan / sweep / inspect / models / gpus with
 * --json and answers with what the command prints.
 *
 * Requests are bounded: GET only, no body, the URL and headers within the
 * daemon's per-connection memory, parameters only the command's own long
 * options (serve_args.c builds the command line from its tables), each value
 * at most VF_SERVE_MAX_VALUE bytes of printable text; at most n_jobs commands
 * run at once (the rest wait for a slot, VF_SERVE_QUEUE_S at most), each
 * killed after VF_SERVE_TIMEOUT_S. When bound to loopback, the Host header
 * must name loopback too, so a web page elsewhere cannot reach the API
 * through DNS rebinding. */
#include "serve/serve.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *type, const char *body, size_t n)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(n, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                            "connect-src 'self'; form-action 'none'; frame-ancestors 'none'");
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

/* {"error": msg, "exit": code}, msg escaped as a JSON string. */
static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned http, int exit_code, const char *msg)
{
    char body[1400];
    size_t o = (size_t)snprintf(body, sizeof body, "{\"error\": \"");
    for (const unsigned char *p = (const unsigned char *)msg; *p && o < sizeof body - 40; p++) {
        if (*p == '"' || *p == '\\')
            o += (size_t)snprintf(body + o, sizeof body - o, "\\%c", *p);
        else if (*p < 0x20)
            o += (size_t)snprintf(body + o, sizeof body - o, "\\u%04x", *p);
        else
            body[o++] = (char)*p;
    }
    o += (size_t)snprintf(body + o, sizeof body - o, "\", \"exit\": %d}\n", exit_code);
    return reply(c, http, "application/json", body, o);
}

/* Host header check for a loopback server. */
static bool host_ok(const vf_serve_ctx *ctx, const char *host)
{
    if (!ctx->loopback)
        return true;
    if (!host)
        return false;
    static const char *const names[] = {"127.0.0.1", "localhost", "[::1]"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t k = strlen(names[i]);
        if (strncasecmp(host, names[i], k) != 0)
            continue;
        if (host[k] == '\0')
            return true;
        char want[16];
        snprintf(want, sizeof want, ":%u", (unsigned)ctx->port);
        if (strcmp(host + k, want) == 0)
            return true;
    }
    return false;
}

/* Waits for one of the n_jobs slots, at most VF_SERVE_QUEUE_S seconds: a
 * burst of requests queues instead of running a process each at once. */
static bool take_slot(vf_serve_ctx *ctx)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += VF_SERVE_QUEUE_S;
    while (sem_timedwait(&ctx->jobs, &until) != 0)
        if (errno != EINTR)
            return false;
    return true;
}

static enum MHD_Result api(struct MHD_Connection *c, vf_serve_ctx *ctx, const vf_serve_endpoint *ep)
{
    vf_serve_argv a;
    if (!vf_serve_build_argv(c, ctx, ep, &a)) {
        vf_serve_argv_free(&a);
        return reply_error(c, a.status, 2, a.why);
    }
    if (!take_slot(ctx)) {
        vf_serve_argv_free(&a);
        return reply_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, 4, "the server is busy; try again");
    }
    char *out = NULL, errline[600];
    size_t out_len = 0;
    int rc = vf_serve_run(a.argv, VF_SERVE_TIMEOUT_S, VF_SERVE_MAX_OUT, &out, &out_len, errline, sizeof errline);
    sem_post(&ctx->jobs);
    vf_serve_argv_free(&a);
    enum MHD_Result ret;
    /* exit 0, and fit's and plan's 1 ("does not fit"), are answers; the rest errors */
    bool answer = rc == 0 || (rc == 1 && (!strcmp(ep->command, "fit") || !strcmp(ep->command, "plan")));
    if (answer && out_len > 0)
        ret = reply(c, MHD_HTTP_OK, "application/json", out, out_len);
    else if (rc < 0)
        ret = reply_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, 4, errline);
    else
        ret = reply_error(c,
                          rc == 1   ? 422
                          : rc == 2 ? MHD_HTTP_BAD_REQUEST
                          : rc == 3 ? 422 /* unprocessable content */
                                    : MHD_HTTP_INTERNAL_SERVER_ERROR,
                          rc, errline[0] ? errline : "the command printed nothing");
    free(out);
    return ret;
}

enum MHD_Result vf_serve_handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)version, (void)upload, (void)con_cls;
    vf_serve_ctx *ctx = cls;
    if (!host_ok(ctx, MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST)))
        return reply_error(c, MHD_HTTP_FORBIDDEN, 2, "host not allowed");
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return reply_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, 2, "only GET");
    if (*upload_size != 0)
        return reply_error(c, MHD_HTTP_BAD_REQUEST, 2, "no request body expected");
    if (strcmp(url, "/") == 0 || strcmp(url, "/index.html") == 0)
        return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", vf_serve_page, vf_serve_page_size);
    if (strcmp(url, "/api/params") == 0) {
        char *j = vf_serve_params_json(ctx);
        enum MHD_Result r = j ? reply(c, MHD_HTTP_OK, "application/json", j, strlen(j))
                              : reply_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, 4, "out of memory");
        free(j);
        return r;
    }
    for (const vf_serve_endpoint *ep = vf_serve_endpoints; ep->path; ep++)
        if (strcmp(url, ep->path) == 0)
            return api(c, ctx, ep);
    return reply_error(c, MHD_HTTP_NOT_FOUND, 2, "no such page");
}
