/* dl_open.h — opening an optional shared library by its first soname that
 * loads and filling a table of its functions: what the Hub's libcurl and
 * serve's libmicrohttpd share (header-only, so the CLI uses it without
 * calling into the library's internals). */
#ifndef VF_DL_OPEN_H
#define VF_DL_OPEN_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The first of names that dlopen loads, NULL when none does. */
static inline void *vf_dl_open_first(const char *const *names, size_t n)
{
    void *lib = NULL;
    for (size_t i = 0; i < n && !lib; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    return lib;
}

/* Stores prefix##name's address in the function pointer at slot; false when
 * the library lacks it (or the name is too long). */
static inline bool vf_dl_fn(void *lib, const char *prefix, const char *name, void *slot)
{
    char sym[96];
    if ((size_t)snprintf(sym, sizeof sym, "%s%s", prefix, name) >= sizeof sym)
        return false;
    void *p = dlsym(lib, sym);
    memcpy(slot, &p, sizeof p); /* object to function pointer, as POSIX dlsym allows */
    return p != NULL;
}

#endif
