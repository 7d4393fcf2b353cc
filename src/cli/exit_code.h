/* exit_code.h — the command's exit statuses (docs/design.md §2), the one
 * table of them, and the status each library error gives. CLI policy, so it
 * lives here and not in the library. */
#ifndef VF_CLI_EXIT_CODE_H
#define VF_CLI_EXIT_CODE_H

#include "vramfit.h"

enum {
    VF_EXIT_OK = 0,     /* success; fit: it fits */
    VF_EXIT_NOFIT = 1,  /* fit: it does not fit */
    VF_EXIT_USAGE = 2,  /* a usage error */
    VF_EXIT_INPUT = 3,  /* bad or unsupported model input */
    VF_EXIT_IO = 4,     /* an I/O error (out of memory, interrupted) */
    VF_EXIT_DEVICE = 5  /* a device or driver error */
};

static inline int vf_status_exit_code(vf_status st)
{
    switch (st) {
    case VF_OK:
        return VF_EXIT_OK;
    case VF_EINVAL:
        return VF_EXIT_USAGE;
    case VF_ENOMEM:
        return VF_EXIT_IO;
    case VF_EIO:
        return VF_EXIT_IO;
    case VF_ENOENT:
        return VF_EXIT_INPUT;
    case VF_EFORMAT:
        return VF_EXIT_INPUT;
    case VF_EUNSUPPORTED:
        return VF_EXIT_INPUT;
    case VF_ERANGE:
        return VF_EXIT_INPUT;
    case VF_EDEVICE:
        return VF_EXIT_DEVICE;
    case VF_EDEVMEM:
        return VF_EXIT_DEVICE;
    case VF_EINTR:
        return VF_EXIT_IO;
    case VF_STATUS_COUNT_:
        break;
    }
    return VF_EXIT_NOFIT;
}

#endif
