/* hub_curl.c — libcurl opened on first use (see hub_curl.h for why). */
#define VF_CURL_TABLE_IMPL
#include "read/hub/hub_curl.h"

#include "base/dl_open.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

static vf__curl_fns fns;
static const vf__curl_fns *loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
    /* the soname of Debian's libcurl4 (OpenSSL), then its GnuTLS and NSS
     * builds, then the development link */
    static const char *const names[] = {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl-nss.so.4", "libcurl.so"};
    void *lib = vf_dl_open_first(names, sizeof names / sizeof *names);
    if (!lib)
        return;
    bool ok = true;
#define VF_CURL_SYM_(name) ok = vf_dl_fn(lib, "curl_", #name, &fns.name) && ok;
    VF_CURL_FNS(VF_CURL_SYM_)
#undef VF_CURL_SYM_
    if (!ok) {
        dlclose(lib);
        return;
    }
    loaded = &fns; /* kept open for the process's life */
}

const vf__curl_fns *vf__curl(void)
{
    pthread_once(&once, load);
    return loaded;
}
