/* plan_internal.h — what plan.c (serving) and plan_train.c (training
 * launches) share: a bounded text buffer and the layout being launched. */
#ifndef VF_PLAN_INTERNAL_H
#define VF_PLAN_INTERNAL_H

#include "memory/memory.h"

typedef struct vf__sbuf {
    char *p;
    size_t cap, len;
    bool overflow;
} vf__sbuf;

/* Appends to b; past its capacity only marks it overflowed. */
VF_HIDDEN void vf__put(vf__sbuf *b, const char *fmt, ...) VF_PRINTF(2, 3);
/* A shell word: as is when plain, else single-quoted. */
VF_HIDDEN void vf__put_arg(vf__sbuf *b, const char *s);

/* Where the launch runs: gpus over nodes of per_node each. */
typedef struct vf__layout {
    uint32_t gpus, per_node, nodes;
} vf__layout;

/* DeepSpeed: config JSON, hostfile, Trainer arguments and the launchers. */
VF_HIDDEN void vf__emit_deepspeed(vf__sbuf *b, const vf_estimate_opts *o, const vf__layout *l);
/* accelerate config (FSDP / DeepSpeed / multi-GPU) and accelerate launch. */
VF_HIDDEN void vf__emit_accelerate_train(vf__sbuf *b, const vf_estimate_opts *o, const vf__layout *l);

#endif
