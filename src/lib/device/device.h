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

/* The catalog row a device name denotes (a catalog name first, then any
 * spelling vf_gpu_lookup takes); NULL for none. */
VF_HIDDEN const vf_gpu *vf__gpu_row(const char *name);
/* Memory shared with the CPU: the row names its engines' rules. */
VF_HIDDEN bool vf__gpu_unified(const vf_gpu *g);

#endif
