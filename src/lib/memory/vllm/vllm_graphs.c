/* vllm_graphs.c — the memory vLLM's CUDA graphs hold (captured after
 * the KV pool is sized, outside gpu_memory_utilization's budget before
 * 0.21): which graphs vLLM captures, the shared pool the largest one fills,
 * and what every captured size keeps in the driver (docs/memory-model.md,
 * "vLLM", CUDA graphs; figures from vLLM's own logs, below). */
#include "memory/infer.h"

#include <string.h>

#define MIB ((uint64_t)1 << 20)
#define KIB ((uint64_t)1 << 10)

/* The forward's transients over `tokens` tokens at the MLP's down projection
 * (model_executor/models/llama.py LlamaMLP): residual and normed hidden (2h),
 * gate_up (2 ff/tp), SiluAndMul's output (ff/tp), the down projection's
 * output (h), x a bytes; MoE: fused_moe's caches tokens x top_k x
 * (3 moe_ff/tp + h), the larger of the two. The profile run prices this at
 * max_num_batched_tokens, the graph pool at the largest capture size. */
uint64_t vf__vllm_fwd_bytes(const vf_hparams *hp, uint64_t tokens, uint32_t tp, uint32_t moe_tp, uint64_t a)
{
    uint64_t t = tp ? tp : 1, mt = moe_tp ? moe_tp : 1, h = hp->hidden_size, ff = vf__hp_ff(hp) / t;
    uint64_t fwd = vf__smul(vf__smul(tokens, a), vf__sadd(3 * h, 3 * ff));
    if (hp->n_experts && hp->moe_intermediate_size) {
        uint64_t k = hp->n_experts_active ? hp->n_experts_active : 1;
        uint64_t moe = vf__smul(vf__smul(tokens, k), vf__smul(a, vf__sadd(3 * (hp->moe_intermediate_size / mt), h)));
        if (moe > fwd)
            fwd = moe;
    }
    return fwd;
}

/* What one layer adds to every captured size in the driver: dense 192 KiB,
 * MoE 320 KiB, MoE with shared experts 384 KiB (see below). */
uint64_t vf__vllm_graph_layer_bytes(const vf_hparams *hp)
{
    if (hp->n_experts < 2)
        return 192 * KIB;
    return hp->n_shared_experts || hp->shared_expert_intermediate_size ? 384 * KIB : 320 * KIB;
}

/* Capture sizes up to max: V1 (config/vllm.py _set_cudagraph_sizes) [1, 2,
 * 4] + range(8, 256, 8) + range(256, max + 1, 16); V0 (worker/model_runner.py
 * _BATCH_SIZES_TO_CAPTURE, config.py) [1, 2, 4] + range(8, max + 1, 8). */
static uint32_t count_sizes(uint64_t max, bool v0, uint64_t *largest)
{
    uint32_t n = 0;
    *largest = 0;
    for (uint64_t s = 1; s <= max; s = s < 4 ? s * 2 : s == 4 ? 8 : (v0 || s < 256) ? s + 8 : s + 16) {
        n++;
        *largest = s;
    }
    return n;
}

/*
 * Which graphs:
 *  - V1 PIECEWISE (0.8-0.10): one graph per piece between the attention ops
 *    per size, sizes up to min(2 x max_num_seqs, 512) (gpt-oss: 1024, vLLM
 *    models/config.py "Overriding max cuda graph capture size to 1024"), none
 *    above max_num_batched_tokens;
 *  - V1 FULL_AND_PIECEWISE (0.11+): the same plus one full decode graph per
 *    size up to max_num_seqs (uniform decode batches; vLLM 0.19's log:
 *    "PIECEWISE=51 (largest=512), FULL=35 (largest=256)" at 256 sequences);
 *  - V0: one full decode graph per batch size up to max_num_seqs, at most
 *    256 (0.6.x) or 512 (0.7+).
 * Memory (gpu_model_runner.py capture_model, profile_cudagraph_memory: the
 * first capture fills the shared pool, every further size adds its own):
 *  - the pool, captured largest first and shared by every graph (FULL and
 *    PIECEWISE overlay it, vLLM takes the max): piecewise twice the largest
 *    size's forward transients; full, largest x (h / tp) x 128 B (x 4 with
 *    MLA) — vLLM 0.19's own "first-capture" figures on H100 (llm-d-planner
 *    accuracy logs): Llama-3.1-8B 138 and 260 MiB, Llama-3.3-70B TP 2 268,
 *    TP 4 142, Qwen2.5-7B 228, phi-4 328, DeepSeek-V2-Lite (MLA) 522 MiB;
 *  - per captured size and mode: 2 MiB + 192 KiB per dense layer, 320 KiB
 *    per MoE layer, 384 KiB with shared experts. vLLM 0.19's "per-graph"
 *    figures and its totals ("took") over 59 H100 runs
 *    (tests/reference/vllm-graphs-0.19.tsv) give 1.5 MiB + 147..189 KiB per
 *    dense layer (Llama-3.1-8B at PP 1/2/4: 6.7, 4.1, 2.7 MiB per size;
 *    Llama-3.3-70B TP 2: 16.3 MiB), 214..308 KiB per MoE layer (Mixtral 214,
 *    Qwen3-30B-A3B 220, gpt-oss-20b 308) and 348..375 KiB with shared experts
 *    (DeepSeek-V2-Lite 348, Qwen1.5-MoE 358, Kimi-VL 375); the highest of
 *    each, rounded up (ERR HIGH). The driver memory follows the kernels a
 *    graph holds, so a full graph costs what its pieces do (vLLM 0.19
 *    gpt-oss-20b: 6 MiB per size in both modes).
 * V0's pool is its largest batch x (h / tp) x 128 B, the full-graph rule.
 */
void vf__vllm_graph_bytes(const vf_hparams *hp, const vf__vllm_graph_cfg *c, vf__vllm_graphs *g)
{
    memset(g, 0, sizeof *g);
    uint64_t mns = c->mns, tp = c->tp ? c->tp : 1;
    uint64_t cap = c->mode == VF__VG_V0 ? c->v0_max : c->max_capture ? c->max_capture : 512;
    uint64_t max = c->mode == VF__VG_V0 ? mns : vf__smul(2, mns);
    if (max > cap)
        max = cap;
    if (max > c->mnbt)
        max = c->mnbt;
    g->sizes = count_sizes(max, c->mode == VF__VG_V0, &g->largest);
    uint64_t full_largest = 0;
    if (c->mode == VF__VG_FULL_AND_PIECEWISE)
        g->full_sizes = count_sizes(mns < max ? mns : max, false, &full_largest);
    g->layers = c->layers;
    g->pieces = c->layers < UINT32_MAX ? c->layers + 1 : UINT32_MAX;
    uint64_t graphs = c->mode == VF__VG_V0 ? g->sizes : (uint64_t)g->sizes * g->pieces + g->full_sizes;
    g->graphs = graphs > UINT32_MAX ? UINT32_MAX : (uint32_t)graphs;
    g->mode = c->mode;
    uint64_t hr = hp->hidden_size / tp, full_b = vf__is_mla(hp) ? 512 : 128;
    if (c->mode == VF__VG_V0) {
        g->pool = vf__smul(vf__smul(g->largest, hr), full_b);
    } else {
        g->pool = vf__smul(2, vf__vllm_fwd_bytes(hp, g->largest, c->tp, c->moe_tp, c->a));
        uint64_t fp = vf__smul(vf__smul(full_largest, hr), full_b);
        if (fp > g->pool)
            g->pool = fp;
    }
    uint64_t per_layer = vf__vllm_graph_layer_bytes(hp);
    g->per_size = vf__sadd(2 * MIB, vf__smul(c->layers, per_layer));
    g->bytes = vf__sadd(g->pool, vf__smul(g->sizes + g->full_sizes, g->per_size));
}
