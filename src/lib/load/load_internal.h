/* load_internal.h — what the loader's files share (and the tests reach). */
#ifndef VF_LOAD_INTERNAL_H
#define VF_LOAD_INTERNAL_H

#include "load/backend.h"

#include <sys/types.h>

#define VF_LOAD_MAX_DEVICES 16

/* A load's report (vramfit.h hands it out opaque, with accessors). */
struct vf_load_result {
    uint64_t tensors;
    uint64_t bytes;               /* bytes streamed (the files' data sections, or the mapped tensors) */
    uint64_t tensor_bytes;        /* the model's tensor bytes: the estimate's weights figure */
    double seconds;
    double gib_per_s;
    uint64_t peak_host_rss_bytes; /* getrusage peak of this process */
    uint64_t staging_bytes;       /* the ring actually allocated (0 when reads land in place) */
    uint32_t buffers, threads;
    bool direct;                  /* O_DIRECT was in effect */
    char device[32];              /* opts.device, or "map" with a device map */
    uint64_t device_bytes_used;   /* Σ (used after − used ready): what the load took */
    uint64_t device_context_bytes; /* Σ (used ready − used before): the context's own cost */
    bool verified;
    size_t n_devices;
    vf_load_device devices[VF_LOAD_MAX_DEVICES];
};

/* Every read of tensor data goes through this; tests swap it to inject short
 * reads and I/O errors. */
VF_HIDDEN extern ssize_t (*vf__load_pread)(int fd, void *buf, size_t n, off_t off);

/* Which device every tensor goes to. */
typedef struct vf__placement {
    size_t n_devices;
    char devices[VF_LOAD_MAX_DEVICES][32]; /* "cuda:0", "host", "null" */
    uint32_t *tensor_dev;                  /* per tensor, index into devices; malloc'd */
} vf__placement;

/* Tensors in layer order filled into devices while each one's budget lasts;
 * the last device takes the rest (budget ignored). */
VF_HIDDEN vf_status vf__device_map_auto(const vf_model *m, size_t n_devices, char names[][32],
                                        const uint64_t *budget, vf__placement *p, vf_error *err);
/* A JSON device map file (docs/loader.md). */
VF_HIDDEN vf_status vf__device_map_file(const vf_model *m, const char *path, vf__placement *p, vf_error *err);
VF_HIDDEN void vf__placement_free(vf__placement *p);

/* Where tensors start inside a device allocation shared by several tensors. */
#define VF_LOAD_TENSOR_ALIGN 256u

#endif
