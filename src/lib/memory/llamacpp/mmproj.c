/* mmproj.c — llama.cpp's multimodal projector (--mmproj): the clip
 * context's own compute buffer, from the graph clip builds for one image
 * (ggml-org/llama.cpp 0024aa7, tools/mtmd/clip.cpp build_vit / build_attn /
 * build_ffn, models/qwen2vl.cpp) and the image it is sized for.
 *
 * clip_model_loader::warmup reserves the buffer (ggml_backend_sched_reserve)
 * with a dummy image of warmup_image_size: image_size for fixed-size towers,
 * 46 x 46 merged tokens for Qwen-VL, 256 for Pixtral ("avoid OOM on
 * warmup"). The first larger image re-reserves it (ggml_gallocr grows a
 * buffer that is too small), so the buffer ends at the largest image served:
 * that is what is priced — the largest the projector accepts
 * (set_limit_image_tokens' maximum, clip.vision.image_max_pixels) or
 * --image-size, never the smaller warmup. docs/memory-model.md "Serving
 * extras" gives the formula. */
#include "memory/infer.h"

#include <string.h>

static uint64_t kv_u64(const json_t *kv, const char *k)
{
    uint64_t v = 0;
    if (!vf__json_u64(json_object_get(kv, k), &v))
        return 0;
    return v;
}

static bool has_tensor(const vf_model *p, const char *name)
{
    for (size_t i = 0; i < p->n_tensors; i++)
        if (p->tensors[i].name && strcmp(p->tensors[i].name, name) == 0)
            return true;
    return false;
}

static uint64_t cdiv(uint64_t a, uint64_t b) { return b ? (a + b - 1) / b : 0; }

/* The largest image's merged-token cap for the towers clip resizes by
 * pixels (load_hparams: set_limit_image_tokens(min, max)); 0 = fixed size. */
static uint64_t max_tokens(const char *proj)
{
    static const struct {
        const char *name;
        uint64_t tokens;
    } dyn[] = {{"qwen2vl_merger", 4096}, {"qwen2.5vl_merger", 4096}, {"qwen3vl_merger", 4096}, {"glm4v", 4096},
               {"pixtral", 1024},        {"kimivl", 1024}};
    for (size_t i = 0; proj && i < sizeof dyn / sizeof dyn[0]; i++)
        if (strcmp(dyn[i].name, proj) == 0)
            return dyn[i].tokens;
    return 0;
}

/* Flash attention in clip: -fa on, or auto where ggml-cuda has a kernel for
 * the head size (fattn.cu ggml_cuda_get_best_fattn_kernel: K = V head of
 * 40, 64, 72, 80, 96, 112, 128 or 256); clip's warmup tries it and falls
 * back when the backend refuses the op. */
static bool clip_flash(int fa, uint64_t d_head)
{
    static const uint64_t heads[] = {40, 64, 72, 80, 96, 112, 128, 256};
    if (fa >= 0)
        return fa == 1;
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++)
        if (heads[i] == d_head)
            return true;
    return false;
}

/* The image clip encodes: side lengths in pixels and its patch count. */
static void priced_image(const json_t *kv, const char *proj, uint32_t w0, uint32_t h0, vf__clip *c)
{
    uint64_t p = c->patch, m = c->merge, cell = p * m, T = max_tokens(proj);
    uint64_t maxpx = kv_u64(kv, "clip.vision.image_max_pixels");
    if (maxpx && cell)
        T = maxpx / (cell * cell);
    if (T && cell) { /* resized by pixels, in cells of patch x merge, at most T cells */
        uint64_t side = 1;
        while ((side + 1) * (side + 1) <= T)
            side++;
        uint64_t cw = w0 ? cdiv(w0, cell) : side, ch = h0 ? cdiv(h0, cell) : side;
        while (cw * ch > T) { /* shrink the longer side, as the resize keeps the pixels under the cap */
            if (cw >= ch)
                cw--;
            else
                ch--;
        }
        c->w = cw * cell;
        c->h = ch * cell;
        c->dynamic = true;
        c->warmup = 0;
        if (strncmp(proj, "qwen", 4) == 0 || strcmp(proj, "glm4v") == 0)
            c->warmup = 46 * cell; /* set_warmup_n_tokens(46*46) */
        else
            c->warmup = 16 * cell; /* set_warmup_n_tokens(256) */
    } else { /* every image (or slice, or tile) resized to image_size */
        c->w = c->h = c->image_size;
        c->warmup = c->image_size;
    }
    c->patches = p ? (c->w / p) * (c->h / p) : 0;
}

/* The peak of the graph's live tensors, f32 activations (clip computes in
 * f32): inputs held through every layer, then the largest of the patch
 * embedding, a layer's attention and its MLP, as ggml_gallocr frees each
 * tensor after its last consumer and runs norms, adds, rope and softmax in
 * place. */
static void graph_peak(vf__clip *c)
{
    const uint64_t f = 4, N = c->patches, E = c->n_embd, F = c->n_ff, H = c->n_head;
    uint64_t NE = vf__smul(N, E), NF = vf__smul(N, F), NN = vf__smul(N, N);
    /* inputs: positions (M-RoPE 4 per patch, 2-D RoPE 2, learned 1) and
     * Qwen2.5-VL's window mask [N, N] f32 (+ its f16 cast under flash attention) */
    c->inputs = vf__smul(N, c->qwen ? 16 : 8);
    if (c->window)
        c->inputs = vf__sadd(c->inputs, vf__smul(NN, c->flash ? 6 : 4));
    /* patch embedding: the raw image, im2col's [3 p p, N] rows, two conv outputs */
    uint64_t raw = vf__smul(vf__smul(3, vf__smul(c->w, c->h)), f);
    c->embed = vf__sadd(vf__sadd(raw, vf__smul(vf__smul(N, 3 * c->patch * c->patch), f)), vf__smul(2 * f, NE));
    /* attention: residual + normed input + Q, K, V while V is projected (5 N E);
     * without flash attention the scores [N, N, heads] beside residual, Q, K and V */
    c->attn = vf__smul(5 * f, NE);
    c->scores = c->flash ? 0 : vf__smul(vf__smul(NN, H), f);
    if (!c->flash && vf__sadd(vf__smul(4 * f, NE), c->scores) > c->attn)
        c->attn = vf__sadd(vf__smul(4 * f, NE), c->scores);
    /* MLP: residual + normed + up (+ gate); gated: then up, gate and their product */
    if (c->gated) {
        uint64_t a = vf__sadd(vf__smul(2 * f, NE), vf__smul(2 * f, NF)), b = vf__sadd(vf__smul(f, NE), vf__smul(3 * f, NF));
        c->ffn = a > b ? a : b;
    } else {
        c->ffn = vf__sadd(vf__smul(2 * f, NE), vf__smul(f, NF));
    }
    uint64_t peak = c->embed > c->attn ? c->embed : c->attn;
    if (c->ffn > peak)
        peak = c->ffn;
    /* Qwen3-VL's deepstack mergers: each one's output kept to the end, then concatenated */
    uint64_t m2 = c->merge * c->merge; /* merge is 1..16 */
    uint64_t ds = vf__smul(vf__smul(2 * c->deepstack, N / m2), vf__smul(c->proj_dim, f));
    c->total = vf__sadd(vf__sadd(c->inputs, peak), ds);
}

vf_status vf__mmproj_cost(const vf_model *p, const vf_estimate_opts *o, vf__clip *c, vf_error *err)
{
    memset(c, 0, sizeof *c);
    const json_t *kv = p->gguf_kv;
    const char *arch = vf__cfg_str(kv, "general.architecture");
    if (p->format != VF_FORMAT_GGUF || !arch || strcmp(arch, "clip") != 0)
        return vf__err(err, VF_EUNSUPPORTED, "--mmproj", "%.200s: not a clip projector GGUF (general.architecture "
                       "'clip')", p->source);
    const char *proj = vf__cfg_str(kv, "clip.projector_type");
    if (!proj)
        proj = vf__cfg_str(kv, "clip.vision.projector_type");
    snprintf(c->proj, sizeof c->proj, "%s", proj ? proj : "mlp");
    c->n_embd = kv_u64(kv, "clip.vision.embedding_length");
    c->n_ff = kv_u64(kv, "clip.vision.feed_forward_length");
    c->n_head = kv_u64(kv, "clip.vision.attention.head_count");
    c->image_size = kv_u64(kv, "clip.vision.image_size");
    c->patch = kv_u64(kv, "clip.vision.patch_size");
    c->proj_dim = kv_u64(kv, "clip.vision.projection_dim");
    /* clip_model_loader requires these keys; beyond these bounds no tower exists */
    if (!c->n_embd || !c->n_head || !c->patch || c->n_embd > 65536 || c->n_ff > (1u << 20) || c->n_head > 1024 ||
        c->patch > 1024 || c->image_size > 65536 || c->proj_dim > (1u << 20) || c->n_embd % c->n_head)
        return vf__err(err, VF_EFORMAT, "--mmproj", "%.200s: clip.vision embedding_length, attention.head_count and "
                       "patch_size missing or implausible", p->source);
    c->merge = kv_u64(kv, "clip.vision.spatial_merge_size");
    if (!c->merge || c->merge > 16)
        c->merge = strncmp(c->proj, "qwen", 4) == 0 || strcmp(c->proj, "glm4v") == 0 ? 2 : 1;
    c->qwen = strncmp(c->proj, "qwen", 4) == 0;
    c->window = kv_u64(kv, "clip.vision.n_wa_pattern") > 0;
    c->gated = has_tensor(p, "v.blk.0.ffn_gate.weight");
    for (uint32_t i = 0; i < 64; i++) {
        char n[64];
        snprintf(n, sizeof n, "v.deepstack.%u.fc1.weight", i);
        c->deepstack += has_tensor(p, n);
    }
    c->flash = clip_flash(o->infer.flash_attn, c->n_embd / c->n_head);
    priced_image(kv, c->proj, o->image_w, o->image_h, c);
    if (c->patches > ((uint64_t)1 << 22))
        return vf__err(err, VF_ERANGE, "--image-size", "more than 2^22 patches");
    graph_peak(c);
    return VF_OK;
}
