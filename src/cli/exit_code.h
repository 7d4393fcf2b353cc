/* exit_code.h — the exit status each library status gives on the command line
 * (DESIGN.md: 0 ok, 2 usage, 3 bad or unsupported model input, 4 I/O, 5 device).
 * CLI policy, so it lives here and not in the library. */
#ifndef VF_CLI_EXIT_CODE_H
#define VF_CLI_EXIT_CODE_H

#include "vramfit.h"

static inline int vf_status_exit_code(vf_status st)
{
    switch (st) {
    case VF_OK:
        return 0;
    case VF_EINVAL:
        return 2;
    case VF_ENOMEM:
        return 4;
    case VF_EIO:
        return 4;
    case VF_ENOENT:
        return 3;
    case VF_EFORMAT:
        return 3;
    case VF_EUNSUPPORTED:
        return 3;
    case VF_ERANGE:
        return 3;
    case VF_EDEVICE:
        return 5;
    case VF_EDEVMEM:
        return 5;
    case VF_EINTR:
        return 4;
    case VF_STATUS_COUNT_:
        break;
    }
    return 1;
}

#endif
