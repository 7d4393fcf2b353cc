/* catalog_index.h — the model catalog's index, generated at build time by
 * tools/catalog_index.c from data/models/catalog.tsv (one row per model id,
 * sorted by id case-insensitively). */
#ifndef VF_READ_CATALOG_INDEX_H
#define VF_READ_CATALOG_INDEX_H

#include <stddef.h>
#include <stdint.h>

typedef struct vf__catalog_row {
    const char *id;         /* "Qwen/Qwen3-8B" */
    const char *file;       /* the embedded config answering it: "models/Qwen__Qwen3-8B.json" */
    const char *family;     /* the config's model_type, "" if absent */
    const char *provenance; /* catalog.tsv's: published, variant, assembled, ... */
    uint64_t context;       /* the context the config states, 0 if none */
    const char *task;       /* "chat", "vision" (a vision tower) or "embed" (encoders, embedding models) */
} vf__catalog_row;

extern const vf__catalog_row vf__catalog_rows[];
extern const size_t vf__catalog_nrows;

#endif
