/* extras.c — memory beyond the model itself that serving adds: a
 * speculative-decoding draft (a second model, or the model's own MTP layers),
 * vLLM's pre-allocated LoRA slots, llama.cpp's multimodal projector, and the
 * images a request carries (their context tokens and the tower's transient).
 * docs/memory-model.md "Serving extras" gives each formula and its source. */
#include "memory/infer.h"

#include <string.h>

/* A second model's weights and KV per token on each of tp devices. */
static vf_status draft_model(const vf_model *d, const char *src, const vf_estimate_opts *o, uint32_t tp, vf__extras *x,
                             vf_estimate *e, vf_error *err)
{
    vf__wprice w;
    vf_status st = vf__weights_price(d, o->weights, VF_DTYPE_UNKNOWN, &w, NULL, err);
    if (st == VF_OK) {
        uint64_t kv = vf__kv_bytes_per_token(&d->hp, o->runtime == VF_RUNTIME_VLLM, w.act_dtype, w.act_dtype);
        x->weights = vf__sadd(x->weights, vf__weights_per_gpu(&w, tp));
        x->kv_token = vf__sadd(x->kv_token, kv / tp);
        vf__assume(e, "draft model %.120s: %llu B of weights and %llu B of KV per token per GPU beside the target",
                   src, (unsigned long long)vf__weights_per_gpu(&w, tp), (unsigned long long)(kv / tp));
    }
    return st;
}

/* The model's own multi-token-prediction layers as the draft (vLLM's
 * "mtp"/"deepseek_mtp" methods load them; plain inference skips them). */
static void mtp_draft(const vf_model *m, uint32_t tp, vf__extras *x, vf_estimate *e)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < m->n_tensors; i++)
        if (m->tensors[i].flags & VF_TENSOR_MTP)
            bytes = vf__sadd(bytes, m->tensors[i].n_bytes);
    uint64_t k, v;
    vf__kv_layer_elems(&m->hp, 0, true, &k, &v); /* each MTP block attends like a full layer */
    uint64_t kv = vf__smul(m->hp.n_mtp_layers, vf__sadd(k, v) * 2);
    x->weights = vf__sadd(x->weights, bytes / tp);
    x->kv_token = vf__sadd(x->kv_token, kv / tp);
    vf__assume(e, "MTP draft: the %u multi-token-prediction layers loaded (%llu B per GPU) with their KV", m->hp.n_mtp_layers,
               (unsigned long long)(bytes / tp));
}

/* llama.cpp --mmproj: the projector's tensors, and the clip context's own
 * compute buffer (mmproj.c), both on the first GPU beside llama's. */
static vf_status mmproj(const vf_model *p, const char *src, const vf_estimate_opts *o, vf__extras *x, vf_estimate *e,
                        vf_error *err)
{
    vf__clip c;
    vf_status st = vf__mmproj_cost(p, o, &c, err);
    uint64_t bytes = 0;
    for (size_t i = 0; i < p->n_tensors; i++)
        bytes = vf__sadd(bytes, p->tensors[i].n_bytes);
    if (st != VF_OK)
        return st;
    x->weights = vf__sadd(x->weights, bytes);
    x->buffers = vf__sadd(x->buffers, c.total);
    vf__assume(e, "mmproj %.120s: %llu B of projector weights on the first GPU, its compute buffer %llu B (%s, %llu x "
               "%llu px, %llu patches, flash attention %s)", src, (unsigned long long)bytes,
               (unsigned long long)c.total, c.proj, (unsigned long long)c.w, (unsigned long long)c.h,
               (unsigned long long)c.patches, c.flash ? "on" : "off");
    vf__assume(e, "mmproj compute buffer = %s image (clip reserves at its %llu px warmup image; a larger one grows "
               "the buffer): inputs %llu + max(embedding %llu, attention %llu, MLP %llu) B%s",
               c.dynamic ? (o->image_w ? "the --image-size" : "the largest accepted") : "every image resized to the",
               (unsigned long long)c.warmup, (unsigned long long)c.inputs, (unsigned long long)c.embed,
               (unsigned long long)c.attn, (unsigned long long)c.ffn,
               c.scores ? " (attention scores heads x patches^2 in f32, no flash attention)" : "");
    return VF_OK;
}

/* The images of one request: context tokens, and the tower's transient on
 * the profile's images (our own bound: patches x (5 x hidden + ffn) values
 * in the model dtype), which vLLM's tensor parallelism splits. */
static void images(const vf_model *m, const vf_estimate_opts *o, uint32_t tp, uint64_t dt, vf__extras *x, vf_estimate *e)
{
    vf__image im;
    if (!vf__image_cost(m, o->image_w, o->image_h, &im)) {
        vf__assume(e, "images: %s has no vision tower vramfit knows; --max-images ignored", m->hp.architecture);
        return;
    }
    uint64_t n = o->max_images;
    x->tokens = vf__smul(n, im.tokens);
    uint64_t act = vf__smul(vf__smul(n, im.patches), (5 * im.vision_hidden + im.vision_ff) * dt) / tp;
    if (act > x->act)
        x->act = act;
    x->embeds = vf__smul(vf__smul(x->tokens, m->hp.hidden_size), dt); /* the tower's outputs, kept for the decoder */
    if (im.cross_tokens) { /* Mllama: every cross-attention layer caches K and V of the tiles */
        uint64_t layers = json_array_size(json_object_get(json_object_get(m->config, "text_config"), "cross_attention_layers"));
        x->kv_seq = vf__smul(vf__smul(n * im.cross_tokens, layers), 2 * (uint64_t)m->hp.n_kv_heads * m->hp.head_dim * dt) / tp;
    }
    if (o->runtime == VF_RUNTIME_VLLM) /* its profile's images decide the transient (vf__extras_vllm_images) */
        vf__assume(e, "images: %u per request, %llu context tokens and %llu tower patches each%s", o->max_images,
                   (unsigned long long)im.tokens, (unsigned long long)im.patches,
                   o->image_w ? "" : " (the processor's largest image)");
    else
        vf__assume(e, "images: %u per request, %llu context tokens and %llu tower patches each%s; tower transient %llu B "
                      "per GPU (our own bound)",
                   o->max_images, (unsigned long long)im.tokens, (unsigned long long)im.patches,
                   o->image_w ? "" : " (the processor's largest image)", (unsigned long long)act);
}

/* vLLM's profile_run feeds the tower its dummy images whether or not
 * requests carry any (v1/worker/gpu_model_runner.py profile_run,
 * v1/worker/utils.py MultiModalBudget.get_max_items,
 * v1/core/encoder_cache_manager.py compute_mm_encoder_budget): T tokens for
 * an image of the largest size (or --image-size), an encoder budget of
 * max(max_num_batched_tokens, T) tokens, max(1, min(limit, max_model_len / T))
 * images a prompt (limit: --limit-mm-per-prompt, 999 when unset), and
 * max(1, min(budget / T, max_num_seqs x per prompt)) images in the profile.
 * Their outputs stay in the encoder cache through the decoder's dummy pass. */
void vf__extras_vllm_images(const vf_model *m, const vf_estimate_opts *o, uint32_t tp, uint64_t mnbt, uint64_t mns,
                            uint64_t mml, vf__extras *x, vf_estimate *e)
{
    vf__image im;
    if (!vf__image_cost(m, o->image_w, o->image_h, &im) || !im.tokens)
        return; /* no tower vramfit knows, or none that feeds the context (Mllama) */
    uint64_t T = im.tokens, limit = o->max_images ? o->max_images : 999;
    uint64_t budget = mnbt > T ? mnbt : T;
    uint64_t per_prompt = mml / T < limit ? mml / T : limit;
    if (per_prompt < 1)
        per_prompt = 1;
    uint64_t items = budget / T, dec = vf__smul(mns ? mns : 1, per_prompt);
    if (items > dec)
        items = dec;
    if (items < 1)
        items = 1;
    if (!tp)
        tp = 1;
    uint64_t dt = m->hp.torch_dtype == VF_DTYPE_F32 ? 4 : 2;
    x->act = vf__smul(vf__smul(items, im.patches), (5 * im.vision_hidden + im.vision_ff) * dt) / tp;
    x->embeds = vf__smul(vf__smul(items, T), vf__smul(m->hp.hidden_size, dt));
    vf__assume(e, "vLLM profile: the tower on %llu dummy images of %llu tokens (%llu patches) each (encoder budget %llu "
                  "tokens), transient %llu B per GPU (our own bound), outputs %llu B held into the decoder's pass",
               (unsigned long long)items, (unsigned long long)T, (unsigned long long)im.patches,
               (unsigned long long)budget, (unsigned long long)x->act, (unsigned long long)x->embeds);
}

/* vLLM V0's profile of Mllama (worker/enc_dec_model_runner.py profile_run,
 * 0.6 to 0.10): each of the max_num_seqs dummy sequences carries its images
 * at the most tiles (dummy_encoder_data_for_mllama; --max-images, else the
 * default limit of 1), and the tower (model_executor/models/mllama.py
 * MllamaVisionModel) runs on all of them in one batch: N = images x tiles x
 * patches padded to a multiple of 8 (num_padding_patches) rows of the
 * vision hidden size h_v. Live at the peak, the last local layer's MLP (and
 * again in the global layers, once the five stored states are stacked):
 * the five intermediate_layers_indices states, the layer's input and
 * residual (7 N h_v), fc1's output and the activation's (2 N ff_v / tp),
 * beside the aspect-ratio attention mask the whole tower shares,
 * [images, 1, L, L] with L = tiles x padded patches, in the model dtype.
 * The projector's cross-attention states (images x tiles x patches x h)
 * stay into the decoder's pass. */
void vf__extras_vllm_mllama_v0(const vf_model *m, const vf_estimate_opts *o, uint32_t tp, uint64_t mns, vf__extras *x,
                               vf_estimate *e)
{
    vf__image im;
    if (strcmp(m->hp.architecture, "mllama") != 0 || !vf__image_cost(m, 0, 0, &im) || !im.cross_tokens)
        return;
    const json_t *v = json_object_get(m->config, "vision_config");
    uint64_t tiles = 4;
    const json_t *t = json_object_get(v, "max_num_tiles");
    if (json_is_integer(t) && json_integer_value(t) > 0 && json_integer_value(t) <= 64)
        tiles = (uint64_t)json_integer_value(t);
    uint64_t per_tile = im.cross_tokens / tiles, padded = (per_tile + 7) / 8 * 8;
    uint64_t images = vf__smul(mns ? mns : 1, o->max_images ? o->max_images : 1);
    uint64_t dt = m->hp.torch_dtype == VF_DTYPE_F32 ? 4 : 2, L = tiles * padded;
    uint64_t n = vf__smul(images, L);
    uint64_t tower = vf__smul(vf__smul(n, dt), 7 * im.vision_hidden + 2 * im.vision_ff / (tp ? tp : 1));
    uint64_t mask = vf__smul(vf__smul(images, vf__smul(L, L)), dt);
    x->act = vf__sadd(tower, mask);
    x->embeds = vf__smul(vf__smul(images, im.cross_tokens), vf__smul(m->hp.hidden_size, dt));
    vf__assume(e, "vLLM V0 profile (enc_dec_model_runner): the Mllama tower on %llu dummy images of %llu tiles x %llu "
                  "patches (padded), %llu B per GPU (7 x h_v + 2 x ff_v per row) + the aspect-ratio mask %llu B; the "
                  "cross-attention states %llu B held into the decoder's pass",
               (unsigned long long)images, (unsigned long long)tiles, (unsigned long long)padded,
               (unsigned long long)tower, (unsigned long long)mask, (unsigned long long)x->embeds);
}

vf_status vf__extras_get(const vf_model *m, const vf_estimate_opts *o, uint32_t tp, vf__extras *x, vf_estimate *e,
                         vf_error *err)
{
    memset(x, 0, sizeof *x);
    if (!tp)
        tp = 1;
    uint64_t dt = m->hp.torch_dtype == VF_DTYPE_F32 ? 4 : 2;
    vf_status st = VF_OK;
    if (o->max_images)
        images(m, o, tp, dt, x, e);
    if (o->draft_model)
        st = draft_model(o->draft_model, o->draft && o->draft[0] ? o->draft : "(opened)", o, tp, x, e, err);
    else if (o->draft_tokens && m->hp.n_mtp_layers)
        mtp_draft(m, tp, x, e);
    if (st == VF_OK && o->draft_tokens && o->runtime == VF_RUNTIME_LLAMACPP) {
        /* llama.cpp's KV buffer is n_ctx cells, fixed when the context is made
         * (llama-kv-cache.cpp); the draft's tokens take cells of it */
        vf__assume(e, "speculative decoding: %u draft tokens per step, in the context's own KV cells", o->draft_tokens);
    } else if (st == VF_OK && o->draft_tokens) {
        x->lookahead = o->draft_tokens;
        vf__assume(e, "speculative decoding: %u draft tokens per step, their KV slots reserved per sequence", o->draft_tokens);
    }
    if (st == VF_OK && o->max_loras) {
        if (o->runtime == VF_RUNTIME_VLLM) {
            vf__lora l;
            if (vf__vllm_lora_bytes(m, o, tp, dt, &l) != VF_OK)
                return vf__err(err, VF_ENOMEM, "", "out of memory");
            x->weights = vf__sadd(x->weights, l.bytes);
            vf__assume(e, "LoRA: %u slots of rank %u pre-allocated, %llu B per GPU (vLLM lora_a/lora_b_stacked): "
                          "layers %llu (routed experts %s), embedding and head %llu%s%s",
                       o->max_loras, o->max_lora_rank ? o->max_lora_rank : 16, (unsigned long long)l.bytes,
                       (unsigned long long)l.layers,
                       !l.expert_layers ? "none" : l.moe ? "in FusedMoEWithLoRA" : "none: MoE LoRA from vLLM 0.11.2",
                       (unsigned long long)l.vocab, l.extra_vocab ? ", with 256 added tokens (lora_extra_vocab_size)" : "",
                       l.base ? " and the model's embedding/head rows for them" : "");
        } else {
            vf__assume(e, "LoRA slots: only vLLM pre-allocates them; --max-loras ignored for this runtime");
        }
    }
    if (st == VF_OK && (o->mmproj_model || (o->mmproj && o->mmproj[0]))) {
        if (o->runtime == VF_RUNTIME_LLAMACPP && o->mmproj_model)
            st = mmproj(o->mmproj_model, o->mmproj && o->mmproj[0] ? o->mmproj : "(opened)", o, x, e, err);
        else
            vf__assume(e, "mmproj: a llama.cpp projector file; --mmproj ignored for this runtime");
    }
    return st;
}

void vf__extras_apply(vf_estimate *e, const vf__extras *x, bool shared_context)
{
    uint64_t seqs = shared_context ? 1 : (e->batch ? e->batch : 1);
    uint64_t per_seq_tokens = shared_context ? 0 : e->context;
    uint64_t kv = vf__smul(vf__sadd(x->tokens, x->lookahead), e->kv_bytes_per_token);
    kv = vf__sadd(kv, vf__smul(x->kv_token, vf__sadd(per_seq_tokens ? per_seq_tokens : e->context, x->lookahead)));
    kv = vf__sadd(vf__smul(kv, seqs), vf__smul(x->kv_seq, e->batch ? e->batch : 1));
    uint64_t act = x->act > e->activations ? x->act - e->activations : 0;
    act = vf__sadd(vf__sadd(act, x->embeds), x->buffers);
    uint64_t add = vf__sadd(vf__sadd(x->weights, kv), act);
    if (!add)
        return;
    e->weights = vf__sadd(e->weights, x->weights);
    e->kv_cache = vf__sadd(e->kv_cache, kv);
    e->activations = vf__sadd(e->activations, act);
    e->per_gpu_bytes = vf__sadd(e->per_gpu_bytes, add);
    e->total_bytes = vf__smul(e->per_gpu_bytes, e->gpus ? e->gpus : 1);
    e->allocated_bytes = vf__sadd(e->allocated_bytes, add);
    e->reserved_bytes = vf__sadd(e->reserved_bytes, add);
    e->device_bytes = vf__sadd(e->device_bytes, add);
}
