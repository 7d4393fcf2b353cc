/* serve.h — what the files of 'vramfit serve' share. */
#ifndef VF_SERVE_H
#define VF_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

typedef struct vf_serve_ctx {
    char exe[4096];  /* this program, run once per API request */
    bool loopback;   /* bound to a loopback address: Host must name it too */
    uint16_t port;   /* the bound port, for the Host check */
} vf_serve_ctx;

/* The libmicrohttpd access handler (MHD_AccessHandlerCallback); cls is a vf_serve_ctx. */
enum MHD_Result vf_serve_handle(void *cls, struct MHD_Connection *c, const char *url, const char *method, const char *version,
                                 const char *upload, size_t *upload_size, void **con_cls);

/* The page at GET /: one self-contained HTML document. */
extern const char vf_serve_page[];

/* Runs argv (argv[0] = the program) with stdout and stderr captured, for at
 * most timeout_s seconds and out_cap bytes of stdout. Returns the exit
 * status, or -1 when it could not run, was killed or overflowed;
 * *out (malloc'd, NUL-terminated) and errline (first stderr line) are set. */
int vf_serve_run(char *const argv[], int timeout_s, size_t out_cap, char **out, size_t *out_len, char *errline,
                 size_t errline_cap);

#endif
