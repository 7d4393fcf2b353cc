/* catalog_counts.h — each catalog model's counts, computed at build time:
 * tools/catalog_counts.c, linked against a first library built with an empty
 * table (tools/catalog_counts_empty.c), opens every entry and writes
 * build/gen/catalog_counts.c, sorted by id case-insensitively; the final
 * library holds that table, so listing the catalog builds no tensors. */
#ifndef VF_READ_CATALOG_COUNTS_H
#define VF_READ_CATALOG_COUNTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct vf__catalog_counts {
    const char *id;  /* the catalog id counted */
    uint64_t params, active_params, bytes, context, host_side_params;
} vf__catalog_counts;

extern const vf__catalog_counts vf__catalog_counts_rows[];
extern const size_t vf__catalog_counts_n;

#endif
