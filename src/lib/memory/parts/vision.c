/* vision.c — what one image costs a vision-language model: the tokens
 * it adds to the context and the patches its tower runs over, per family, at
 * a given size or (0 x 0) at the largest size the family's processor makes,
 * which is what vLLM's profiling run feeds its dummy images with. Sizes as
 * each family's image processor resizes and tiles (transformers
 * image_processing_<family>.py defaults; docs/memory-model.md "Images"). */
#include "memory/infer.h"

#include <string.h>

static bool is(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

static uint64_t key(const json_t *o, const char *k, uint64_t dflt)
{
    uint64_t v = dflt;
    const json_t *x = json_object_get(o, k);
    if (json_is_array(x))
        x = json_array_get(x, 0);
    if (!x || !vf__json_u64(x, &v) || v == 0 || v > 65536)
        v = dflt;
    return v;
}

static uint64_t cdiv(uint64_t a, uint64_t b) { return b ? (a + b - 1) / b : 0; }

/* Tiles of side t covering w x h, at most cap, plus a global view when more than one. */
static uint64_t tiles(uint64_t w, uint64_t h, uint64_t t, uint64_t cap, bool global)
{
    uint64_t n = cdiv(w, t) * cdiv(h, t);
    if (n > cap)
        n = cap;
    return n > 1 && global ? n + 1 : n;
}

bool vf__image_cost(const vf_model *m, uint32_t w0, uint32_t h0, vf__image *out)
{
    memset(out, 0, sizeof *out);
    const json_t *root = m->config, *v = json_object_get(root, "vision_config");
    const char *t = m->hp.architecture;
    uint64_t w = w0, h = h0, p, mg;
    if (!root) /* a weight file without its config.json: the tower's processor is unknown */
        return false;
    out->vision_hidden = key(v, is(t, "qwen2_vl") ? "embed_dim" : "hidden_size", 1024);
    out->vision_ff = key(v, "intermediate_size", 4 * out->vision_hidden);
    if (is(t, "qwen2_vl"))
        out->vision_ff = out->vision_hidden * key(v, "mlp_ratio", 4);
    if (is(t, "qwen2_vl") || is(t, "qwen2_5_vl") || is(t, "qwen3_vl") || is(t, "qwen3_vl_moe") || is(t, "qwen3_5") ||
        is(t, "qwen3_5_moe")) {
        /* smart_resize: sides to multiples of patch x merge within max_pixels
         * (Qwen2-VL 12,845,056 = 3584 x 3584; Qwen3-VL 16,777,216 = 4096 x 4096) */
        p = key(v, "patch_size", 14);
        mg = key(v, "spatial_merge_size", 2);
        uint64_t side = p == 16 ? 4096 : 3584;
        if (!w || !h)
            w = h = side;
        out->patches = cdiv(w, p * mg) * cdiv(h, p * mg) * mg * mg;
        out->tokens = out->patches / (mg * mg);
    } else if (is(t, "llava")) { /* CLIP at image_size, the class token dropped */
        p = key(v, "patch_size", 14);
        uint64_t s = key(v, "image_size", 336);
        out->patches = (s / p) * (s / p);
        out->tokens = out->patches;
    } else if (is(t, "idefics3") || is(t, "smolvlm")) {
        /* tiles of max_image_size (the tower's image_size) over the image resized to
         * size.longest_edge (4 x that tile), plus the global view; pixel shuffle by scale_factor */
        p = key(v, "patch_size", 32);
        uint64_t s = key(v, "image_size", 224), sf = key(root, "scale_factor", 2);
        if (!w || !h)
            w = h = 4 * s;
        uint64_t n = tiles(w, h, s, 64, true), pt = (s / p) * (s / p);
        out->patches = n * pt;
        out->tokens = n * pt / (sf * sf);
    } else if (is(t, "internvl")) { /* 448 tiles, at most 12 + a thumbnail, 256 tokens each */
        uint64_t s = key(v, "image_size", 448);
        p = key(v, "patch_size", 14);
        if (!w || !h)
            w = 4 * s, h = 3 * s;
        uint64_t n = tiles(w, h, s, 12, true), pt = (s / p) * (s / p);
        out->patches = n * pt;
        out->tokens = n * key(root, "image_seq_length", pt / 4);
    } else if (is(t, "lfm2_vl")) { /* tile_size tiles, at most max_tiles, max_image_tokens each */
        uint64_t s = key(root, "tile_size", 512), cap = key(root, "max_tiles", 10), df = key(root, "downsample_factor", 2);
        p = key(v, "patch_size", 16);
        if (!w || !h)
            w = 5 * s, h = 2 * s;
        uint64_t n = tiles(w, h, s, cap, vf__cfg_bool(root, "use_thumbnail", false)), pt = (s / p) * (s / p);
        out->patches = n * pt;
        out->tokens = n * pt / (df * df);
    } else if (is(t, "mistral3")) { /* Pixtral: patch_size x merge cells, one break token per row */
        p = key(v, "patch_size", 14);
        mg = key(root, "spatial_merge_size", 2);
        uint64_t s = key(v, "image_size", 1540);
        if (!w || !h)
            w = h = s;
        uint64_t cols = cdiv(w, p * mg), rows = cdiv(h, p * mg);
        out->patches = cols * rows * mg * mg;
        out->tokens = cols * rows + rows;
    } else if (is(t, "llama4")) { /* 336 chunks, at most 16 + a global one, 144 tokens each */
        uint64_t s = key(v, "image_size", 336);
        p = key(v, "patch_size", 14);
        if (!w || !h)
            w = h = 4 * s;
        uint64_t n = tiles(w, h, s, 16, true), pt = (s / p) * (s / p);
        out->patches = n * (pt + 1);
        out->tokens = n * pt / 4;
    } else if (is(t, "mllama")) { /* cross-attention: no context tokens; the tiles' states are cached */
        uint64_t s = key(v, "image_size", 560);
        p = key(v, "patch_size", 14);
        uint64_t T = key(v, "max_num_tiles", 4);
        out->patches = T * ((s / p) * (s / p) + 1);
        out->cross_tokens = out->patches;
    } else if (is(t, "gemma3")) { /* SigLIP at 896, pooled to mm_tokens_per_image */
        p = key(v, "patch_size", 14);
        uint64_t s = key(v, "image_size", 896);
        out->patches = (s / p) * (s / p);
        out->tokens = key(root, "mm_tokens_per_image", 256);
    } else {
        return false;
    }
    return true;
}
