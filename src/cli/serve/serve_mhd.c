/* serve_mhd.c — libmicrohttpd opened on first use (see serve_mhd.h for why). */
#define VF_MHD_TABLE_IMPL
#include "serve/serve_mhd.h"

#include "base/dl_open.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

static vf_mhd_fns fns;
static const vf_mhd_fns *loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
    /* Debian libmicrohttpd12's soname, then the development link */
    static const char *const names[] = {"libmicrohttpd.so.12", "libmicrohttpd.so"};
    void *lib = vf_dl_open_first(names, sizeof names / sizeof *names);
    if (!lib)
        return;
    bool ok = true;
#define VF_MHD_SYM_(name) ok = vf_dl_fn(lib, "MHD_", #name, &fns.name) && ok;
    VF_MHD_FNS(VF_MHD_SYM_)
#undef VF_MHD_SYM_
    if (!ok) {
        dlclose(lib);
        return;
    }
    loaded = &fns; /* kept open for the process's life */
}

const vf_mhd_fns *vf_mhd(void)
{
    pthread_once(&once, load);
    return loaded;
}
