/* status.c — status codes and their messages (one table, VF_STATUS_MAP). */
#include "base/base.h"

#include <stdio.h>
#include <string.h>

static const char *const status_msg[] = {
#define VF_X_(name, msg) [VF_##name] = msg,
    VF_STATUS_MAP(VF_X_)
#undef VF_X_
};

const char *vf_version(void) { return VF_VERSION_STRING; }

const char *vf_strerror(vf_status st)
{
    if ((unsigned)st >= VF_STATUS_COUNT_)
        return "unknown error";
    return status_msg[st];
}

vf_status vf__err(vf_error *err, vf_status st, const char *path, const char *fmt, ...)
{
    if (!err)
        return st;
    err->status = st;
    int n = 0;
    if (path && *path)
        n = snprintf(err->msg, sizeof err->msg, "%s: ", path);
    if (n < 0 || (size_t)n >= sizeof err->msg)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + n, sizeof err->msg - (size_t)n, fmt, ap);
    va_end(ap);
    /* names quoted from a file may hold control characters: keep the one line */
    for (char *c = err->msg; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    return st;
}
