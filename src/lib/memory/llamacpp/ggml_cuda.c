/* ggml_cuda.c — what llama.cpp's CUDA backend (ggml-cuda) holds on a
 * device beside llama.cpp's own buffers: the CUDA context, one cuBLAS
 * workspace per stream, and what its memory pool keeps (docs/memory-model.md,
 * "llama.cpp: the CUDA backend"). From ggml/src/ggml-cuda/ggml-cuda.cu and
 * common.cuh (ggml-org/llama.cpp, read at 0010882). */
#include "memory/infer.h"

#include <stdio.h>

#define MIB ((uint64_t)1 << 20)
#define VMM_GRANULARITY (2 * MIB) /* cuMemGetAllocationGranularity, RECOMMENDED: 2 MiB on NVIDIA GPUs */
#define FIXUP_SMS 170u            /* the most SMs of a catalog GPU (RTX 5090): bounds the stream-k fixup */

static uint64_t pad_to(uint64_t x, uint64_t n) { return x % n ? vf__sadd(x, n - x % n) : x; }

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* Turing's int8 tensor cores are what MMQ needs for every batch size
 * (ggml_cuda_should_use_mmq: turing_mma_available); before them a prompt's
 * batch (>= MMQ_DP4A_MAX_BATCH_SIZE 64 tokens on Volta) goes to cuBLAS with
 * the weight dequantized to f16. An unknown device is taken as Turing or
 * newer (said in the assumptions). */
static bool pre_turing(const char *gpu)
{
    return vf__gpu_generation(gpu) == VF_GEN_VOLTA || vf__name_has(gpu, "p100") || vf__name_has(gpu, "p40") ||
           vf__name_has(gpu, "gtx 10");
}

/*
 * The pool's high-water mark on one device. ggml_cuda_pool_vmm maps physical
 * memory at the end of one reserved range in multiples of the granularity and
 * never unmaps it while the context lives; each op's temporaries are freed in
 * reverse order when the op ends, so what stays mapped is the largest set of
 * temporaries one op asked for, over the prompt's graph (n_ubatch tokens):
 *  - MMQ (quantized weights): src1 quantized to q8_1 (36 B per 32 values)
 *    for the widest quantized matrix's input, x the experts used for a MoE
 *    matrix, plus the stream-k fixup (SMs x mmq_x 128 x mmq_y 128 x 4 B);
 *  - cuBLAS (16/32-bit weights; quantized ones before Turing, dequantized to
 *    f16 first): src1 and dst in f16, (N + K) x n_ubatch x 2 B for the
 *    largest matrix, the output head where this device holds it;
 *  - attention without flash attention: the softmaxed KQ converted to f16
 *    for the KQV product, n_head x n_kv x n_ubatch x 2 B;
 *  - flash attention over a quantized cache: K and V of one layer converted
 *    to f16 (launch_fattn), n_kv x (K row + V row) x 2 B.
 */
static uint64_t pool_bytes(const vf__ggml_dev *d, const vf__ggml_shape *s, bool old_gpu, const char **why)
{
    uint64_t ub = s->n_ubatch;
    uint64_t mmq = 0, cublas = 0, attn = 0;
    if (d->q_in && !old_gpu)
        mmq = vf__sadd(vf__smul(vf__smul(ub, d->q_in), 36) / 32, (uint64_t)FIXUP_SMS * 128 * 128 * 4);
    cublas = vf__smul(vf__smul(d->f_nk, ub), 2);
    if (d->q_in && old_gpu)
        cublas = max_u64(cublas, vf__sadd(vf__smul(d->q_elems, 2), vf__smul(vf__smul(d->q_nk, ub), 2)));
    if (d->layers && !s->fa)
        attn = vf__smul(vf__smul(vf__smul(s->n_head, s->n_kv), ub), 2);
    if (d->layers && s->fa && s->kv_quantized)
        attn = vf__smul(vf__smul(s->n_kv, s->kv_row_elems), 2);
    uint64_t top = max_u64(mmq, max_u64(cublas, attn));
    *why = top == 0 ? "none" : top == mmq ? "MMQ's q8_1 input" : top == cublas ? "cuBLAS's f16 operands"
         : s->fa ? "one layer's K and V in f16" : "KQ in f16";
    return pad_to(top, VMM_GRANULARITY);
}

void vf__ggml_cuda_overhead(const vf_estimate_opts *o, const vf__ggml_dev *d, const vf__ggml_shape *s,
                            vf__ggml_cost *c)
{
    const char *gpu = o->infer.gpu_name;
    c->context = vf__native_context_bytes(o, c->context_why, sizeof c->context_why);
    /* ggml_backend_cuda_context::cublas_handle: cudaMalloc'd workspace per
     * (device, stream), 32 MiB from Hopper (cc >= 900), else 4 MiB; a layer
     * split runs one stream per device. Without a GPU name, 70 GiB and more
     * stands in for Hopper (as for PyTorch's workspace). */
    vf__gen g = vf__gpu_generation(gpu);
    bool hopper = g == VF_GEN_HOPPER || g == VF_GEN_BLACKWELL ||
                  (g == VF_GEN_UNKNOWN && !(gpu && *gpu) && o->gpu_bytes >= ((uint64_t)70 << 30));
    c->cublas = (hopper ? 32 : 4) * MIB;
    c->old_gpu = pre_turing(gpu);
    c->pool = pool_bytes(d, s, c->old_gpu, &c->pool_why);
    c->total = vf__sadd(vf__sadd(c->context, c->cublas), c->pool);
}
