/* overhead.c — the fixed costs of a CUDA process, each by what
 * determines it: the CUDA context by the device's generation and the CUDA
 * version (eager or lazy module loading), the cuBLAS/cuBLASLt workspaces by
 * the device's architecture; and what the device holds at the peak
 * (docs/memory-model.md, "What the device holds"). */
#include "memory/infer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MIB ((uint64_t)1 << 20)

static int cuda_version(const char *v)
{
    if (!v || !*v)
        return 0;
    char *end;
    long ma = strtol(v, &end, 10);
    long mi = 0;
    if (end == v || ma < 7 || ma > 30)
        return -1;
    if (*end == '.') {
        const char *p = end + 1;
        mi = strtol(p, &end, 10);
        if (end == p || mi < 0 || mi > 99)
            return -1;
        if (*end == '.') { /* a patch level is allowed and ignored */
            p = end + 1;
            (void)strtol(p, &end, 10);
            if (end == p)
                return -1;
        }
    }
    return *end ? -1 : (int)(ma * 100 + mi);
}

vf_status vf__cuda_version_check(const char *v, vf_error *err)
{
    if (cuda_version(v) < 0)
        return vf__err(err, VF_EINVAL, "--cuda-version", "expected a CUDA version such as 12.4");
    return VF_OK;
}

/*
 * The CUDA context of a process, as nvidia-smi counts it.
 *  - Eager module loading loads every kernel image of the libraries at
 *    start: 1343 MiB after the first torch.ones() on a V100 (transformers
 *    model_memory_anatomy.md; measured.csv D20a). Lazy loading is CUDA's own
 *    default since 12.2; PyTorch sets CUDA_MODULE_LOADING=LAZY itself from
 *    1.13 when CUDA >= 11.7 (pytorch PR #86509): eager below 11.7 for
 *    PyTorch, below 12.2 for a process that leaves it to CUDA (llama.cpp:
 *    ggml_cuda_init sets no loading mode). A ggml process's eager images are
 *    ggml-cuda's and cuBLAS's, not PyTorch's: 1343 MiB errs high for it.
 *  - Lazy loading: the context, then each kernel as it is first used.
 *    Context alone: 426 MiB on an RTX 6000 Ada with torch 2.10+cu130
 *    (unsloth-zoo PR #1053, nvidia-smi), taken for Volta to Ada (erring
 *    high against PR #86509's 266 MiB and gguf-parser's 250 MiB platform
 *    footprint); ~616 MiB on a data-center process (LMCache issue #4019),
 *    taken for Hopper, Blackwell and an unknown device. Kernels and library
 *    handles loaded by a transformer's forward: 0.13 GiB, vLLM's "non-torch
 *    memory" on an H100 (measured.csv A1), which vLLM counts apart
 *    (with_kernels false); a ggml forward loads ggml-cuda's and cuBLAS's
 *    kernels in their place, taken at the same figure.
 * A measured value (--cuda-context) replaces all of it.
 */
static uint64_t context_bytes(const vf_estimate_opts *o, int lazy_from, bool with_kernels, char *why, size_t n)
{
    if (o->cuda_context) {
        snprintf(why, n, "CUDA context %.0f MiB as measured (--cuda-context)", (double)o->cuda_context / MIB);
        return o->cuda_context;
    }
    int ver = cuda_version(o->cuda_version);
    if (ver > 0 && ver < lazy_from) {
        snprintf(why, n, "CUDA context 1343 MiB: CUDA %s loads every kernel eagerly (V100, nvidia-smi, measured.csv D20a)",
                 o->cuda_version);
        return 1343 * MIB;
    }
    vf__gen g = vf__gpu_generation(o->infer.gpu_name);
    bool newest = g == VF_GEN_HOPPER || g == VF_GEN_BLACKWELL || g == VF_GEN_UNKNOWN;
    uint64_t base = (newest ? 616 : 426) * MIB;
    uint64_t kernels = with_kernels ? (uint64_t)(0.13 * (double)(1u << 30)) : 0;
    snprintf(why, n, "CUDA context %llu MiB (lazy loading, %s%s)%s", (unsigned long long)(base / MIB),
             g == VF_GEN_UNKNOWN ? "device unknown: the largest measured" : newest ? "Hopper or newer" : "Volta to Ada",
             o->cuda_version[0] ? "" : ", CUDA 12.x assumed", with_kernels ? " + 133 MiB of kernels loaded on use" : "");
    return base + kernels;
}

uint64_t vf__torch_context_bytes(const vf_estimate_opts *o, bool with_kernels, char *why, size_t n)
{
    return context_bytes(o, 1107, with_kernels, why, n);
}

uint64_t vf__native_context_bytes(const vf_estimate_opts *o, char *why, size_t n)
{
    return context_bytes(o, 1202, true, why, n);
}

/*
 * PyTorch's cuBLAS workspace, allocated through its caching allocator on the
 * first matmul (aten/src/ATen/cuda/CublasHandlePool.cpp getNewWorkspace,
 * parseChosenWorkspaceSize): ":4096:8" = 32 MiB on sm90 (Hopper; taken for
 * Blackwell too), ":4096:2:16:8" = 2 x 4096 KiB + 8 x 16 KiB = 8,519,680 B
 * otherwise. The cuBLASLt workspace (CUBLASLT_WORKSPACE_SIZE, 1024 KiB by
 * default, parseCUDABlasLtWorkspaceSize) is carved out of the cuBLAS one
 * since TORCH_CUBLASLT_UNIFIED_WORKSPACE became the default: nothing more.
 * Without a GPU name, 70 GiB and more stands in for Hopper. One stream,
 * one handle: one workspace. Every PyTorch runtime prices it here.
 */
uint64_t vf__cublas_workspace_bytes(const char *gpu_name, uint64_t gpu_bytes)
{
    vf__gen g = vf__gpu_generation(gpu_name);
    bool sm90 = g == VF_GEN_HOPPER || g == VF_GEN_BLACKWELL;
    if (g == VF_GEN_UNKNOWN && !(gpu_name && *gpu_name))
        sm90 = gpu_bytes >= ((uint64_t)70 << 30);
    uint64_t cublas = sm90 ? (uint64_t)4096 * 1024 * 8 : (uint64_t)4096 * 1024 * 2 + 16 * 1024 * 8;
    return cublas;
}

/* What the device holds: the allocator's reserved peak (never below what it
 * allocated), the context, and what lives outside the allocator. */
void vf__device_set(vf_estimate *e, uint64_t allocated, uint64_t reserved, uint64_t context, uint64_t outside)
{
    e->allocated_bytes = allocated;
    e->reserved_bytes = reserved > allocated ? reserved : allocated;
    e->context_bytes = context;
    e->outside_bytes = outside;
    e->device_bytes = vf__sadd(vf__sadd(e->reserved_bytes, context), outside);
}
