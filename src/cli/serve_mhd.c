/* serve_mhd.c — libmicrohttpd opened on first use (see serve_mhd.h for why). */
#define VF_MHD_TABLE_IMPL
#include "serve_mhd.h"

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
    void *lib = NULL;
    for (size_t i = 0; i < sizeof names / sizeof *names && !lib; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return;
    bool ok = true;
#define VF_MHD_SYM_(name)                                                                                             \
    {                                                                                                                 \
        void *p = dlsym(lib, "MHD_" #name);                                                                           \
        ok = ok && p;                                                                                                 \
        memcpy(&fns.name, &p, sizeof p); /* object to function pointer, as POSIX dlsym allows */                      \
    }
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
