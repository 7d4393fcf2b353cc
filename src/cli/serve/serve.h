/* serve.h — what the files of 'vramfit serve' share. */
#ifndef VF_SERVE_H
#define VF_SERVE_H

#include "cli.h"

#include <limits.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "serve/serve_mhd.h" /* libmicrohttpd through its table: MHD_* calls go there */

#define VF_SERVE_MAX_VALUE 1024 /* bytes of one query value */
#define VF_SERVE_MAX_ARGS 64    /* words of one command line */
#define VF_SERVE_TIMEOUT_S 30   /* one command's run */
#define VF_SERVE_QUEUE_S 20     /* the longest a request waits for a free slot */
#define VF_SERVE_MAX_OUT ((size_t)8 << 20)
#define VF_SERVE_MAX_CONN 512 /* connections open at once */
#define VF_SERVE_HUB_TIMEOUT_S 10 /* one Hub request (--hub-timeout), well inside the command's own */

typedef struct vf_serve_ctx {
    char exe[4096];             /* this program, run once per API request */
    bool loopback;              /* bound to a loopback address: Host must name it too */
    uint16_t port;              /* the bound port, for the Host check */
    char models_dir[PATH_MAX];  /* --models-dir, its real path; "" = catalog only */
    bool hub;                   /* --hub: Hugging Face Hub ids too (caches, then the Hub) */
    sem_t jobs;                 /* commands running at once */
    unsigned n_jobs;
} vf_serve_ctx;

/* An API endpoint: the command it runs and the option tables its parser reads. */
typedef struct vf_serve_endpoint {
    const char *path;
    const char *command;
    bool needs_model;
    const struct option *const *tables; /* NULL-terminated */
} vf_serve_endpoint;

/* Every endpoint, ended by a zero entry (serve_args.c). */
extern const vf_serve_endpoint vf_serve_endpoints[];

/* A request's command line. */
typedef struct vf_serve_argv {
    char *argv[VF_SERVE_MAX_ARGS + 1];
    size_t argc;
    char *owned[VF_SERVE_MAX_ARGS];
    size_t n_owned;
    unsigned status;            /* HTTP status when it could not be built */
    bool hub_used;              /* a Hub id is among its words (--hub) */
    char why[320];              /* and why, as one line */
} vf_serve_argv;

/* Builds the command line of ep from the request's query; false with
 * a->status and a->why when a parameter is not one of the command's options
 * or the model is not one it may open. Free with vf_serve_argv_free. */
bool vf_serve_build_argv(struct MHD_Connection *c, const vf_serve_ctx *ctx, const vf_serve_endpoint *ep,
                         vf_serve_argv *a);
void vf_serve_argv_free(vf_serve_argv *a);
/* The option of ep's tables a parameter names (NULL: none, or one the page may not use). */
const struct option *vf_serve_find_option(const vf_serve_endpoint *ep, const char *name);
/* {"estimate": [{"name", "flag"}, ...], "fit": ..., "server": {"hub": bool,
 * "files": bool}}: what each endpoint takes, and which models besides the
 * catalog's this server opens (malloc'd). */
char *vf_serve_params_json(const vf_serve_ctx *ctx);

/* The libmicrohttpd access handler (MHD_AccessHandlerCallback); cls is a vf_serve_ctx. */
enum MHD_Result vf_serve_handle(void *cls, struct MHD_Connection *c, const char *url, const char *method, const char *version,
                                 const char *upload, size_t *upload_size, void **con_cls);

/* The page at GET / (src/cli/serve/page/index.html, embedded at build time). */
extern const char vf_serve_page[];
extern const unsigned long vf_serve_page_size;

/* Runs argv (argv[0] = the program) with stdout and stderr captured, for at
 * most timeout_s seconds and out_cap bytes of stdout. Returns the exit
 * status, or -1 when it could not run, was killed or overflowed;
 * *out (malloc'd, NUL-terminated) and errline (first stderr line) are set. */
int vf_serve_run(char *const argv[], int timeout_s, size_t out_cap, char **out, size_t *out_len, char *errline,
                 size_t errline_cap);

#endif
