/* serve_http.c — the request handler of 'vramfit serve': the page, and the
 * API that runs inspect / estimate / fit / models / gpus with --json.
 *
 * Requests are bounded: GET only, no body, known parameters only, each value
 * at most VF_SERVE_MAX_VALUE bytes of printable text, passed to the command
 * as "--name=value" (never as a separate word an option parser could take
 * for an option) and the model after "--". When bound to loopback, the Host
 * header must name loopback too, so a web page elsewhere cannot reach the
 * API through DNS rebinding. */
#include "serve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define VF_SERVE_MAX_VALUE 1024
#define VF_SERVE_MAX_ARGS 48
#define VF_SERVE_TIMEOUT_S 60
#define VF_SERVE_MAX_OUT ((size_t)8 << 20)

/* What each endpoint may pass on: query parameter = the command's option. */
typedef struct endpoint {
    const char *path;
    const char *command;
    bool needs_model;
    const char *const *params; /* NULL-terminated */
} endpoint;

static const char *const inspect_params[] = {NULL};
static const char *const knob_params[] = {
    "context", "batch", "weights", "kv", "runtime", "gpu", "tp", "pp", "ep", "gpus", "attn", "gpu-util",
    "max-model-len", "max-num-seqs", "ubatch", "parallel", "n-gpu-layers", "optimizer", "precision",
    "grad-checkpoint", "grad-accum", "lora-rank", "lora-targets", "qlora", "zero", "fsdp", "offload", NULL};
static const char *const none_params[] = {NULL};

static const endpoint endpoints[] = {
    {"/api/inspect", "inspect", true, inspect_params},
    {"/api/estimate", "estimate", true, knob_params},
    {"/api/fit", "fit", true, knob_params},
    {"/api/models", "models", false, none_params},
    {"/api/gpus", "gpus", false, none_params},
};

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

static bool printable(const char *s)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++, n++)
        if (*p < 0x20 || *p == 0x7f || n >= VF_SERVE_MAX_VALUE)
            return false;
    return true;
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

typedef struct arg_check {
    const endpoint *ep;
    const char *bad; /* first unknown or unprintable parameter */
} arg_check;

static enum MHD_Result check_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    arg_check *a = cls;
    bool known = strcmp(key, "model") == 0 || strcmp(key, "mode") == 0;
    for (const char *const *p = a->ep->params; !known && *p; p++)
        known = strcmp(key, *p) == 0;
    if (!known || (value && !printable(value))) {
        a->bad = key;
        return MHD_NO;
    }
    return MHD_YES;
}

static enum MHD_Result api(struct MHD_Connection *c, const vf_serve_ctx *ctx, const endpoint *ep)
{
    arg_check chk = {ep, NULL};
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, check_arg, &chk);
    if (chk.bad) {
        char msg[128];
        snprintf(msg, sizeof msg, "parameter '%.40s' is unknown here or its value is not plain text", chk.bad);
        return reply_error(c, MHD_HTTP_BAD_REQUEST, 2, msg);
    }
    const char *model = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "model");
    if (ep->needs_model && (!model || !*model))
        return reply_error(c, MHD_HTTP_BAD_REQUEST, 2, "no model given");
    char *argv[VF_SERVE_MAX_ARGS + 1];
    char *owned[VF_SERVE_MAX_ARGS];
    size_t n = 0, n_owned = 0;
    argv[n++] = (char *)ctx->exe;
    argv[n++] = (char *)ep->command;
    argv[n++] = "--json";
    const char *mode = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "mode");
    if (mode && *mode) {
        if (strcmp(mode, "training") == 0 || strcmp(mode, "train") == 0) {
            if (ep->params == knob_params)
                argv[n++] = "--train";
        } else if (strcmp(mode, "inference") != 0) {
            return reply_error(c, MHD_HTTP_BAD_REQUEST, 2, "mode must be inference or training");
        }
    }
    for (const char *const *p = ep->params; *p && n < VF_SERVE_MAX_ARGS - 3; p++) {
        const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, *p);
        if (!v || !*v)
            continue;
        size_t len = strlen(*p) + strlen(v) + 4;
        char *a = malloc(len);
        if (!a)
            break;
        snprintf(a, len, "--%s=%s", *p, v);
        argv[n++] = owned[n_owned++] = a;
    }
    if (ep->needs_model) {
        argv[n++] = "--";
        argv[n++] = (char *)model;
    }
    argv[n] = NULL;
    char *out = NULL, errline[600];
    size_t out_len = 0;
    int rc = vf_serve_run(argv, VF_SERVE_TIMEOUT_S, VF_SERVE_MAX_OUT, &out, &out_len, errline, sizeof errline);
    for (size_t i = 0; i < n_owned; i++)
        free(owned[i]);
    enum MHD_Result ret;
    /* exit 0, and fit's 1 ("does not fit"), are answers; the rest errors */
    if ((rc == 0 || (rc == 1 && strcmp(ep->command, "fit") == 0)) && out_len > 0)
        ret = reply(c, MHD_HTTP_OK, "application/json", out, out_len);
    else if (rc < 0)
        ret = reply_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, 4, errline);
    else
        ret = reply_error(c,
                          rc == 2   ? MHD_HTTP_BAD_REQUEST
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
    const vf_serve_ctx *ctx = cls;
    if (!host_ok(ctx, MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST)))
        return reply_error(c, MHD_HTTP_FORBIDDEN, 2, "host not allowed");
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return reply_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, 2, "only GET");
    if (*upload_size != 0)
        return reply_error(c, MHD_HTTP_BAD_REQUEST, 2, "no request body expected");
    if (strcmp(url, "/") == 0 || strcmp(url, "/index.html") == 0)
        return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", vf_serve_page, strlen(vf_serve_page));
    for (size_t i = 0; i < sizeof endpoints / sizeof endpoints[0]; i++)
        if (strcmp(url, endpoints[i].path) == 0)
            return api(c, ctx, &endpoints[i]);
    return reply_error(c, MHD_HTTP_NOT_FOUND, 2, "no such page");
}
