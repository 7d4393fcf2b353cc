/* serving_opts.c — the serving extras' knobs: a draft model and its tokens,
 * llama.cpp's multimodal projector, the images of a request, vLLM's LoRA slots. */
#include "args/estimate_opts.h"

#include <stdlib.h>
#include <string.h>

void vf_cli_serving_opts_help(FILE *f)
{
    fputs("  serving:   --draft MODEL  a speculative-decoding draft on the same GPUs (llama.cpp -md, vLLM\n"
          "             draft-model); --draft-tokens N  tokens it proposes per step (with no --draft, a model's\n"
          "             own MTP layers draft them)\n"
          "             --max-images N  images per request (vLLM profiles its encoder on that many of the\n"
          "             largest size)  --image-size WxH  their size in pixels (default: the processor's largest)\n"
          "             --mmproj FILE  llama.cpp's multimodal projector GGUF (its weights and compute buffer)\n"
          "             --enable-lora [--max-loras N (1)] [--max-lora-rank R (16)]  vLLM's pre-allocated\n"
          "             LoRA adapter slots\n",
          f);
}

/* "WxH" with each side 1..65536 pixels. */
static int image_size(const char *arg, vf_estimate_opts *o)
{
    char *x;
    unsigned long w = strtoul(arg, &x, 10), h = 0;
    if (x != arg && (*x == 'x' || *x == 'X') && x[1] >= '0' && x[1] <= '9') {
        char *end;
        h = strtoul(x + 1, &end, 10);
        if (*end)
            h = 0;
    }
    if (w < 1 || w > 65536 || h < 1 || h > 65536 || arg[0] == '-')
        return vf_cli_opt_bad("image-size", arg, "takes WxH in pixels, each 1 to 65536");
    o->image_w = (uint32_t)w;
    o->image_h = (uint32_t)h;
    return 1;
}

int vf_cli_parse_serving_opt(int c, const char *arg, vf_estimate_opts *o)
{
    uint64_t v;
    int r;
    switch (c) {
    case VF_OPT_DRAFT:
        o->draft = arg;
        return 1;
    case VF_OPT_MMPROJ:
        o->mmproj = arg;
        return 1;
    case VF_OPT_DRAFT_TOKENS:
        if ((r = vf_cli_opt_number("draft-tokens", arg, 1, 64, NULL, &v)) == 1)
            o->draft_tokens = (uint32_t)v;
        return r;
    case VF_OPT_MAX_IMAGES:
        if ((r = vf_cli_opt_number("max-images", arg, 0, 256, NULL, &v)) == 1)
            o->max_images = (uint32_t)v;
        return r;
    case VF_OPT_IMAGE_SIZE:
        return image_size(arg, o);
    case VF_OPT_ENABLE_LORA:
        if (!o->max_loras)
            o->max_loras = 1; /* vLLM's --max-loras default */
        return 1;
    case VF_OPT_MAX_LORAS:
        if ((r = vf_cli_opt_number("max-loras", arg, 1, 1024, NULL, &v)) == 1)
            o->max_loras = (uint32_t)v;
        return r;
    case VF_OPT_MAX_LORA_RANK:
        if ((r = vf_cli_opt_number("max-lora-rank", arg, 1, 4096, NULL, &v)) == 1) {
            o->max_lora_rank = (uint32_t)v;
            if (!o->max_loras)
                o->max_loras = 1;
        }
        return r;
    default:
        return 0;
    }
}
