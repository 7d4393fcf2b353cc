/* vllm_mxfp4.c — how vLLM lays out an MXFP4 checkpoint's experts
 * (gpt-oss) in device memory, which is more than the checkpoint stores:
 * vllm/model_executor/layers/quantization/mxfp4.py Mxfp4MoEMethod
 * (get_mxfp4_backend, create_weights, process_weights_after_loading) and
 * the layouts its backends convert to (docs/memory-model.md, "vLLM",
 * MXFP4 experts). */
#include "memory/infer.h"

#include <string.h>

static uint64_t round_up(uint64_t x, uint64_t m) { return m ? (x + m - 1) / m * m : x; }

/* The backend vLLM picks (get_mxfp4_backend, default environment, CUDA):
 *  - Blackwell data-centre parts (SM100 family) with FlashInfer, which
 *    vLLM's wheels carry: SM100_FI_MXFP4_BF16;
 *  - Hopper (SM90) and SM100 without FlashInfer: TRITON (triton_kernels'
 *    matmul_ogs, bundled as vllm/third_party/triton_kernels) — it needs
 *    (9, 0) <= capability < (11, 0);
 *  - everything else (Ampere, Ada, SM120 workstation Blackwell): MARLIN. */
vf__mxfp4_backend vf__vllm_mxfp4_backend(const char *gpu_name)
{
    vf__gen g = vf__gpu_generation(gpu_name);
    bool sm120 = vf__name_has(gpu_name, "rtx 50") || vf__name_has(gpu_name, "rtx pro");
    if (g == VF_GEN_BLACKWELL && !sm120)
        return VF__MXFP4_FLASHINFER;
    if (g == VF_GEN_HOPPER)
        return VF__MXFP4_TRITON;
    return VF__MXFP4_MARLIN;
}

/* One rank's expert bytes of one layer: E experts, hidden h, intermediate
 * ip per rank, each projection as MXFP4 bytes (2 weights a byte), one E8M0
 * scale per 32 weights, and its bias. */
typedef struct lay {
    uint64_t w13, s13, w2, s2, bias;
} lay;

static uint64_t lay_sum(const lay *l) { return l->w13 + l->s13 + l->w2 + l->s2 + l->bias; }

/* As create_weights allocates them, with the backend's padding:
 *  MARLIN: intermediate to 128, hidden to 256 ("n % 256 == 0 and k % 128 ==
 *    0" for the Marlin MoE kernel), biases bf16; the Marlin repack keeps the
 *    bytes;
 *  FlashInfer SM100: both to 256, biases converted to float32;
 *  TRITON: intermediate to 64, biases to float32 (process_weights_after_
 *    loading), then _swizzle_mxfp4 converts to triton_kernels' Hopper
 *    layouts, which pad again (tensor_details/layout_details):
 *    HopperMXValueLayout stores (E, K/2 bytes, N) padded to 64 x 256,
 *    HopperMXScaleLayout stores (E, N, K/32) with N padded to 2 x num_warps
 *    (8) x 2 x 8 = 256 and K/32 to 2. */
static lay vllm_layout(uint64_t E, uint64_t h, uint64_t ip, vf__mxfp4_backend b)
{
    lay l;
    if (b == VF__MXFP4_TRITON) {
        uint64_t i = round_up(ip, 64);
        l.w13 = E * round_up(h / 2, 64) * round_up(2 * i, 256);
        l.s13 = E * round_up(2 * i, 256) * round_up(h / 32, 2);
        l.w2 = E * round_up(i / 2, 64) * round_up(h, 256);
        l.s2 = E * round_up(h, 256) * round_up(i / 32, 2);
        l.bias = E * (2 * i + h) * 4;
        return l;
    }
    uint64_t i = round_up(ip, b == VF__MXFP4_MARLIN ? 128 : 256), hp = round_up(h, 256);
    l.w13 = E * 2 * i * (hp / 2);
    l.s13 = E * 2 * i * (hp / 32);
    l.w2 = E * hp * (i / 2);
    l.s2 = E * hp * (i / 32);
    l.bias = E * (2 * i + hp) * (b == VF__MXFP4_MARLIN ? 2 : 4);
    return l;
}

/* As the checkpoint stores one rank's share: no padding, bf16 biases. */
static lay stored_layout(uint64_t E, uint64_t h, uint64_t ip)
{
    lay l = {E * 2 * ip * (h / 2), E * 2 * ip * (h / 32), E * h * (ip / 2), E * h * (ip / 32), E * (2 * ip + h) * 2};
    return l;
}

/* The bytes vLLM holds beyond the stored ones, per MoE layer and rank; 0
 * unless the experts are MXFP4 as stored. The intermediate size is split
 * over tp (FusedMoE, intermediate_size_per_partition). */
uint64_t vf__vllm_mxfp4_extra(const vf_hparams *hp, uint32_t tp, vf__mxfp4_backend b)
{
    if (strcmp(hp->quant_method, "mxfp4") != 0 || hp->n_experts < 1)
        return 0;
    uint64_t E = hp->n_experts, h = hp->hidden_size;
    uint64_t ip = (hp->moe_intermediate_size ? hp->moe_intermediate_size : vf__hp_ff(hp)) / (tp ? tp : 1);
    if (!h || !ip || h > (1u << 20) || ip > (1u << 20) || E > 4096)
        return 0; /* beyond any real checkpoint; the caps keep the products in range */
    lay v = vllm_layout(E, h, ip, b), s = stored_layout(E, h, ip);
    uint64_t vs = lay_sum(&v), ss = lay_sum(&s);
    return vs > ss ? vs - ss : 0;
}

const char *vf__mxfp4_backend_name(vf__mxfp4_backend b)
{
    return b == VF__MXFP4_TRITON ? "TRITON (triton_kernels, Hopper layouts)"
           : b == VF__MXFP4_FLASHINFER ? "FlashInfer SM100 (padded to 256)"
                                       : "Marlin (intermediate to 128, hidden to 256)";
}
