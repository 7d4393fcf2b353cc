/* device.h — what the library knows of a device beyond the catalog row
 * (hidden): its generation and SM count by name (gpu_gen.c). */
#ifndef VF_DEVICE_H
#define VF_DEVICE_H

#include "base/base.h"

typedef enum vf__gen {
    VF_GEN_UNKNOWN, VF_GEN_VOLTA, VF_GEN_TURING, VF_GEN_AMPERE, VF_GEN_ADA, VF_GEN_HOPPER, VF_GEN_BLACKWELL
} vf__gen;
VF_HIDDEN bool vf__name_has(const char *s, const char *needle); /* case-insensitive substring */
VF_HIDDEN vf__gen vf__gpu_generation(const char *name);
/* The GPU's streaming multiprocessors (data sheets); 0 for a GPU not listed. */
VF_HIDDEN uint32_t vf__gpu_sm_count(const char *name);

#endif
