/* models_fits.h — vramfit models --fits: the reverse question, what of the
 * catalog runs on these GPUs (models_fits.c); cmd_models.c parses for it. */
#ifndef VF_MODELS_FITS_H
#define VF_MODELS_FITS_H

#include "cli.h"

typedef struct vf_cli_models_query {
    vf_cli_fit_args a;     /* the knobs as fit takes them; a.gpu / a.local the devices */
    bool weights_set;      /* --weights given: that format only, no ladder */
    uint64_t host_bytes;   /* --host-memory: llama.cpp layers on the CPU up to this; 0 = none */
    const char *family;    /* --family F (NULL: all) */
    uint64_t max_params;   /* --max-params N (0: no bound) */
    const char *task;      /* --task chat|embed|vision (NULL: all) */
} vf_cli_models_query;

/* models' --family rule: F itself or F_variant (qwen3 → qwen3_moe, not qwen3_5). */
bool vf_cli_family_matches(const char *family, const char *want);
/* --task: chat lists every model that generates text (vision models too). */
bool vf_cli_task_matches(const char *task, const char *want);
/* Prints the answer (a table or JSON); the exit status: 0 when any model fits, 1 when none. */
int vf_cli_models_fits(vf_cli_models_query *q);

#endif
