/* infer_overhead.c — fixed costs of a CUDA process, each from a measurement
 * or an engine's source (docs/memory-model.md, "Overhead"). */
#include "infer.h"

/* CUDA context plus PyTorch's kernels: nvidia-smi showed 1343 MiB used after
 * the first torch.ones() on a V100 (transformers docs,
 * model_memory_anatomy.md; ../shared/reference/measured.csv row D20a). */
uint64_t vf__cuda_context_bytes(void) { return (uint64_t)1343 << 20; }

/* A CUDA context without PyTorch's kernel images (llama.cpp / ggml): 250
 * MiB, gguf-parser's --platform-footprint default for VRAM ("cudaMemGetInfo
 * or cudaSetDevice would occupy some RAM and VRAM", cmd/gguf-parser/main.go;
 * ../shared/reference/prior-art/peers-estimators.md §3.3). */
uint64_t vf__cuda_context_native_bytes(void) { return (uint64_t)250 << 20; }

/* cuBLAS workspace PyTorch allocates per handle on the first matmul:
 * CUBLAS_WORKSPACE_CONFIG default ":4096:2:16:8" = 2 x 4096 KiB + 8 x 16 KiB
 * = 8,519,680 B (pytorch PR #83461), plus the cuBLASLt workspace: 1 MiB, 4
 * MiB on Ampere cards of 24 GB and more, 32 MiB on Hopper (pytorch PR
 * #120925). Without the architecture, the size class stands in for it. */
uint64_t vf__cublas_workspace_bytes(uint64_t gpu_bytes)
{
    uint64_t lt = gpu_bytes >= ((uint64_t)70 << 30) ? (32u << 20) : gpu_bytes >= ((uint64_t)24 << 30) ? (4u << 20) : (1u << 20);
    return 8519680u + lt;
}
