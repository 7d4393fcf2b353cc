/* oom.h — what the out-of-memory scanner's files share (vramfit oom).
 *
 * The scanner (oom_scan.c) reads the log through a sliding window and finds
 * anchors, fixed strings that start a message or hint at where it happened;
 * the forms (oom_forms.c) read one message from its anchor within a bounded
 * span; the advice (oom_advice.c) turns a report into words. */
#ifndef VF_OOM_H
#define VF_OOM_H

#include "model/model.h"

/* The most bytes a form reads past its anchor (the longest PyTorch message
 * with a few "Process N has" sentences is under 1 KiB). */
#define OOM_SPAN 4096
/* Bytes kept before the scan position when the window slides (a form looks
 * back at most this far: "CUDA " before "out of memory", a line's start). */
#define OOM_BACK 256

typedef enum oom_engine { E_NONE, E_PYTORCH, E_VLLM, E_LLAMACPP, E_DEEPSPEED, E_ACCELERATE } oom_engine;

typedef enum oom_phase {
    P_NONE, P_FORWARD, P_LOADING, P_BACKWARD, P_OPTIMIZER, P_KV, P_COMPUTE, P_PROFILE, P_STARTUP
} oom_phase;

/* One message as a form read it. */
typedef struct oom_rec {
    oom_engine engine;
    const char *kind;
    oom_phase phase;         /* what the message itself says, P_NONE when not */
    int32_t gpu;
    uint64_t v[VF_OOM_N_FIGURES];
    uint32_t stated, derived;
    uint32_t processes;
    double utilization;
    char buffer[24];
    bool companion;          /* a llama.cpp line that belongs to the error before it */
    bool cpu_buffer;         /* llama.cpp: a host buffer, not the GPU's */
} oom_rec;

/* The text a form may read: [p, end), and how far back it may look. */
typedef struct oom_text {
    const char *start;       /* the earliest byte a form may look back to */
    const char *p, *end;
} oom_text;

/* ---- oom_forms.c: each returns true when the text at t.p is its message ---- */
VF_HIDDEN bool vf__oom_torch(oom_text t, oom_rec *r);       /* at "out of memory. Tried to allocate" */
VF_HIDDEN bool vf__oom_cuda_error(oom_text t, oom_rec *r);  /* at "CUDA error" */
VF_HIDDEN bool vf__oom_vllm_len(oom_text t, oom_rec *r);    /* at "max seq len (" */
VF_HIDDEN bool vf__oom_vllm_startup(oom_text t, oom_rec *r); /* at "Free memory on device" */
VF_HIDDEN bool vf__oom_ggml_alloc(oom_text t, oom_rec *r);  /* at "_alloc_buffer: allocating " */
VF_HIDDEN bool vf__oom_ggml_failed(oom_text t, oom_rec *r); /* at "failed to allocate " */
/* "gpu_memory_utilization=0.9", "--gpu-memory-utilization 0.95": the value, or 0. */
VF_HIDDEN double vf__oom_utilization(oom_text t);

/* ---- oom_advice.c ---- */
VF_HIDDEN void vf__oom_advise(vf_oom_report *r, uint64_t device_bytes);

/* bit of a figure in stated/derived */
#define OOM_BIT(f) (1u << (f))

#endif
