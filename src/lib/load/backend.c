/* backend.c — vf__backend_open: a device name to its backend (host, null,
 * cuda:N). The one file that knows every backend. */
#include "load/backend.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

vf_status vf__backend_open(const char *device, vf__backend **out, vf_error *err)
{
    *out = NULL;
    if (!device || !*device || strcmp(device, "host") == 0 || strcmp(device, "cpu") == 0)
        return vf__backend_host_open(out, err);
    if (strcmp(device, "null") == 0)
        return vf__backend_null_open(out, err);
    if (strncmp(device, "cuda:", 5) == 0 || strcmp(device, "cuda") == 0) {
        const char *s = device[4] ? device + 5 : "0";
        char *end = NULL;
        errno = 0;
        long n = strtol(s, &end, 10);
        if (!*s || *end || errno || n < 0 || n > 1023)
            return vf__err(err, VF_EINVAL, device, "not a device (host, null or cuda:N)");
        return vf__backend_cuda_open((int)n, out, err);
    }
    return vf__err(err, VF_EINVAL, device, "not a device (host, null or cuda:N)");
}
