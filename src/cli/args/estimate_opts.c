/* estimate_opts.c — the inference knobs: one table, one parser, one help
 * text, reused by every command that runs the memory model. */
#include "args/estimate_opts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const struct option vf_cli_estimate_options[] = {
    {"runtime", required_argument, 0, VF_OPT_RUNTIME},
    {"weights", required_argument, 0, VF_OPT_WEIGHTS},
    {"kv", required_argument, 0, VF_OPT_KV},
    {"attn", required_argument, 0, VF_OPT_ATTN},
    {"batch", required_argument, 0, VF_OPT_BATCH},
    {"context", required_argument, 0, VF_OPT_CONTEXT},
    {"prompt", required_argument, 0, VF_OPT_PROMPT},
    {"gpu", required_argument, 0, VF_OPT_GPU},
    {"gpu-util", required_argument, 0, VF_OPT_GPU_UTIL},
    {"max-model-len", required_argument, 0, VF_OPT_MAX_MODEL_LEN},
    {"max-num-seqs", required_argument, 0, VF_OPT_MAX_NUM_SEQS},
    {"max-num-batched-tokens", required_argument, 0, VF_OPT_MAX_BATCHED},
    {"tp", required_argument, 0, VF_OPT_TP},
    {"pp", required_argument, 0, VF_OPT_PP},
    {"gpus", required_argument, 0, VF_OPT_GPUS},
    {"vllm-version", required_argument, 0, VF_OPT_VLLM_VERSION},
    {"enforce-eager", no_argument, 0, VF_OPT_ENFORCE_EAGER},
    {"ubatch", required_argument, 0, VF_OPT_UBATCH},
    {"lc-batch", required_argument, 0, VF_OPT_LC_BATCH},
    {"parallel", required_argument, 0, VF_OPT_PARALLEL},
    {"flash-attn", required_argument, 0, VF_OPT_FLASH_ATTN},
    {"swa-full", no_argument, 0, VF_OPT_SWA_FULL},
    {"n-gpu-layers", required_argument, 0, VF_OPT_NGL},
    {"tensor-split", required_argument, 0, VF_OPT_TENSOR_SPLIT},
    {"keep-dtype", required_argument, 0, VF_OPT_KEEP_DTYPE},
    {"kv-unified", no_argument, 0, VF_OPT_KV_UNIFIED},
    {"logits", required_argument, 0, VF_OPT_LOGITS},
    {"alloc-conf", required_argument, 0, VF_OPT_ALLOC_CONF},
    {"cuda-context", required_argument, 0, VF_OPT_CUDA_CONTEXT},
    {"cuda-version", required_argument, 0, VF_OPT_CUDA_VERSION},
    {"draft", required_argument, 0, VF_OPT_DRAFT},
    {"draft-tokens", required_argument, 0, VF_OPT_DRAFT_TOKENS},
    {"mmproj", required_argument, 0, VF_OPT_MMPROJ},
    {"max-images", required_argument, 0, VF_OPT_MAX_IMAGES},
    {"image-size", required_argument, 0, VF_OPT_IMAGE_SIZE},
    {"enable-lora", no_argument, 0, VF_OPT_ENABLE_LORA},
    {"max-loras", required_argument, 0, VF_OPT_MAX_LORAS},
    {"max-lora-rank", required_argument, 0, VF_OPT_MAX_LORA_RANK},
    {"input", required_argument, 0, VF_OPT_INPUT},
    {"margin", required_argument, 0, VF_OPT_MARGIN},
    {"override-tensor", required_argument, 0, VF_OPT_OVERRIDE_TENSOR},
    {"cpu-moe", no_argument, 0, VF_OPT_CPU_MOE},
    {"n-cpu-moe", required_argument, 0, VF_OPT_N_CPU_MOE},
    {"llamacpp-build", required_argument, 0, VF_OPT_LLAMACPP_BUILD},
    {0, 0, 0, 0},
};

void vf_cli_infer_opts_help(FILE *f)
{
    fputs("  --runtime R            transformers | vllm | llamacpp | litgpt | generic (the plain sum);\n"
          "                         pytorch: the transformers runtime's PyTorch process, as a graph (.onnx) runs\n"
          "  --weights W            re-price the weights: a dtype (bf16, fp32, q8_0, ...), a llama.cpp file\n"
          "                         type (q4_k_m, q5_k_s, q3_k_l, iq4_xs, ...) or a load scheme (int8, int4,\n"
          "                         nf4, nf4-dq, fp8, gptq[-intB][-gN], awq[-gN])\n"
          "  --keep-dtype D         dtype a quantizing load keeps the other tensors in (f32, bf16, f16);\n"
          "                         litgpt: the --precision with bitsandbytes (4-bit: bf16, int8: f16)\n"
          "  --kv T | K,V           KV cache type: f16, bf16, fp8, q8_0, q4_0; llama.cpp K,V apart\n"
          "  --context N            tokens per sequence (prompt + generated); default: the model's;\n"
          "                         vLLM: --max-model-len; llama.cpp: -c, 4096 by default, shared by --parallel\n"
          "  --batch N              sequences at once (default 1)\n"
          "  --prompt N             tokens of the prefill step (transformers, litgpt; default: --context)\n"
          "  --attn A               eager | sdpa | flash (transformers; default sdpa)\n"
          "  --logits all|last      transformers: logits for every prompt position or the last (default)\n"
          "  --input NAME=DIMS      graphs (.onnx): bind an input's dims, e.g. input=8x3x224x224 (repeatable;\n"
          "                         without it --batch binds axis 0 and other symbolic dims are refused)\n"
          "  --tp N, --pp N         tensor / pipeline parallel sizes; --gpus N total devices\n"
          "  --gpu G                device memory: a size (80GB, 79.2GiB) or a catalog name (speed bounds\n"
          "                         need one); GxN: N devices; without --tp/--pp vLLM and transformers\n"
          "                         run tensor parallel N, llama.cpp splits the layers over N, training\n"
          "                         runs N data-parallel ranks\n"
          "  vLLM:      --gpu-util F (0.9)  --max-model-len N  --max-num-seqs N\n"
          "             --max-num-batched-tokens N  --vllm-version X.Y[.Z][/v0|/v1]  --enforce-eager\n"
          "  llama.cpp: --ubatch N (512)  --lc-batch N (2048)  --parallel N (1)  --flash-attn on|off|auto\n"
          "             --swa-full  --kv-unified  --n-gpu-layers N (all)  --tensor-split A,B,...\n"
          "             --override-tensor PATTERN=BUFT[,...] (-ot; repeatable, first match wins; BUFT\n"
          "             CPU, CUDA_Host or CUDA0...)  --cpu-moe (experts in host memory)\n"
          "             --n-cpu-moe N (the experts of the first N layers in host memory)\n"
          "             --llamacpp-build N (the bNNNN release priced: its cache layout; default current)\n"
          "  PyTorch:   --alloc-conf S  PYTORCH_CUDA_ALLOC_CONF as the process sets it (default: that\n"
          "             variable): expandable_segments:True, max_split_size_mb:N, garbage_collection_threshold:F\n"
          "             --cuda-context SIZE  a measured CUDA context (e.g. 1343MiB) instead of the model\n"
          "             --cuda-version V  the CUDA PyTorch was built with (default 12.x: lazy loading;\n"
          "             below 11.7 every kernel loads at start)\n"
          "  --margin SIZE          what fit keeps free on each GPU beside what the device holds (e.g.\n"
          "                         1GiB for a desktop or a second process; 0 for none); default: the\n"
          "                         runtime's own (llama.cpp 1024 MiB, vLLM none beyond --gpu-util,\n"
          "                         PyTorch one allocator segment for the largest request)\n",
          f);
    vf_cli_serving_opts_help(f);
}

static int count(const char *opt, const char *arg, uint64_t *out, bool zero_ok)
{
    return vf_cli_opt_number(opt, arg, zero_ok ? 0 : 1, (uint64_t)1 << 32, "expected a positive count", out);
}

static int copy(const char *opt, const char *arg, char *dst, size_t cap)
{
    if (strlen(arg) >= cap)
        return vf_cli_opt_bad(opt, arg, "too long");
    memcpy(dst, arg, strlen(arg) + 1);
    return 1;
}

static int parse_split(const char *arg, vf_infer_opts *io)
{
    uint32_t n = 0;
    const char *p = arg;
    while (*p) {
        if (n >= VF_MAX_SPLIT)
            return vf_cli_opt_bad("tensor-split", arg, "at most 16 devices");
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || v < 0 || v > 1e12)
            return vf_cli_opt_bad("tensor-split", arg, "expected non-negative numbers separated by commas");
        io->tensor_split[n++] = v;
        p = end;
        if (*p == ',')
            p++;
        else if (*p)
            return vf_cli_opt_bad("tensor-split", arg, "expected non-negative numbers separated by commas");
    }
    if (n == 0)
        return vf_cli_opt_bad("tensor-split", arg, "empty");
    io->n_split = n;
    return 1;
}

/* llama.cpp's tensor buffer overrides, in command-line order, one
 * PATTERN=BUFT a line (vf_estimate_opts.tensor_overrides): -ot's
 * comma-separated list split, --cpu-moe and --n-cpu-moe as the patterns
 * common/arg.cpp gives them. One command line per process. */
static char overrides[32768];

static int add_override(const char *opt, const char *entry, size_t len, vf_estimate_opts *o)
{
    size_t used = strlen(overrides);
    if (memchr(entry, '\n', len) || used + len + 2 > sizeof overrides)
        return vf_cli_opt_bad(opt, entry, "too many or too long overrides");
    if (used)
        overrides[used++] = '\n';
    memcpy(overrides + used, entry, len);
    overrides[used + len] = '\0';
    o->tensor_overrides = overrides;
    return 1;
}

static int parse_override_opt(int c, const char *arg, vf_estimate_opts *o)
{
    char e[64];
    uint64_t v;
    switch (c) {
    case VF_OPT_OVERRIDE_TENSOR:
        for (const char *p = arg;;) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            if (!len || !memchr(p, '=', len))
                return vf_cli_opt_bad("override-tensor", arg, "expected PATTERN=BUFFER_TYPE[,...]");
            if (add_override("override-tensor", p, len, o) < 0)
                return -1;
            if (!comma)
                return 1;
            p = comma + 1;
        }
    case VF_OPT_CPU_MOE:
        return add_override("cpu-moe", VF_LLAMACPP_EXPERTS_PATTERN "=CPU", strlen(VF_LLAMACPP_EXPERTS_PATTERN "=CPU"), o);
    case VF_OPT_N_CPU_MOE:
        if (vf_cli_opt_number("n-cpu-moe", arg, 0, 512, "expected a layer count up to 512", &v) < 0)
            return -1;
        for (uint64_t i = 0; i < v; i++) {
            int n = snprintf(e, sizeof e, "blk\\.%llu" VF_LLAMACPP_EXPERTS_PATTERN "=CPU", (unsigned long long)i);
            if (add_override("n-cpu-moe", e, (size_t)n, o) < 0)
                return -1;
        }
        return 1;
    case VF_OPT_LLAMACPP_BUILD:
        if (vf_cli_opt_number("llamacpp-build", arg[0] == 'b' || arg[0] == 'B' ? arg + 1 : arg, 1, 1000000,
                              "expected a llama.cpp build number (b5000 or 5000)", &v) < 0)
            return -1;
        o->llamacpp_build = (uint32_t)v;
        return 1;
    default:
        return vf_cli_parse_serving_opt(c, arg, o);
    }
}

/* llama.cpp's knobs (-ub, -b, -np, -fa, -ngl, --tensor-split, ...). */
static int parse_llamacpp_opt(int c, const char *arg, vf_estimate_opts *o)
{
    vf_infer_opts *io = &o->infer;
    uint64_t v;
    switch (c) {
    case VF_OPT_UBATCH:
        return count("ubatch", arg, &io->ubatch, false);
    case VF_OPT_LC_BATCH:
        return count("lc-batch", arg, &io->lc_batch, false);
    case VF_OPT_PARALLEL:
        if (count("parallel", arg, &v, false) < 0)
            return -1;
        if (v > 65536)
            return vf_cli_opt_bad("parallel", arg, "at most 65536");
        io->parallel = (uint32_t)v;
        return 1;
    case VF_OPT_FLASH_ATTN:
        if (strcasecmp(arg, "on") == 0 || strcmp(arg, "1") == 0)
            io->flash_attn = 1;
        else if (strcasecmp(arg, "off") == 0 || strcmp(arg, "0") == 0)
            io->flash_attn = 0;
        else if (strcasecmp(arg, "auto") == 0)
            io->flash_attn = -1;
        else
            return vf_cli_opt_bad("flash-attn", arg, "expected on, off or auto");
        return 1;
    case VF_OPT_SWA_FULL:
        io->swa_full = true;
        return 1;
    case VF_OPT_KV_UNIFIED:
        io->kv_unified = true;
        return 1;
    case VF_OPT_NGL:
        if (strcasecmp(arg, "all") == 0 || strcasecmp(arg, "auto") == 0) {
            io->n_gpu_layers = -1;
            return 1;
        }
        if (count("n-gpu-layers", arg, &v, true) < 0)
            return -1;
        io->n_gpu_layers = v > 100000 ? 100000 : (int32_t)v;
        return 1;
    case VF_OPT_TENSOR_SPLIT:
        return parse_split(arg, io);
    default:
        return parse_override_opt(c, arg, o);
    }
}

/* vLLM's knobs (--gpu-memory-utilization, --max-model-len, ...). */
static int parse_vllm_opt(int c, const char *arg, vf_estimate_opts *o)
{
    vf_infer_opts *io = &o->infer;
    switch (c) {
    case VF_OPT_GPU_UTIL: {
        char *end;
        errno = 0;
        double d = strtod(arg, &end);
        if (end == arg || *end || errno || !(d > 0 && d <= 1))
            return vf_cli_opt_bad("gpu-util", arg, "expected a fraction in (0, 1]");
        io->gpu_util = d;
        return 1;
    }
    case VF_OPT_MAX_MODEL_LEN:
        return count("max-model-len", arg, &io->max_model_len, false);
    case VF_OPT_MAX_NUM_SEQS:
        return count("max-num-seqs", arg, &io->max_num_seqs, false);
    case VF_OPT_MAX_BATCHED:
        return count("max-num-batched-tokens", arg, &io->max_num_batched_tokens, false);
    case VF_OPT_VLLM_VERSION:
        if (!((arg[0] >= '0' && arg[0] <= '9')))
            return vf_cli_opt_bad("vllm-version", arg, "expected a version such as 0.11.0");
        return copy("vllm-version", arg, io->vllm_version, sizeof io->vllm_version);
    case VF_OPT_ENFORCE_EAGER:
        io->enforce_eager = true;
        return 1;
    default:
        return parse_llamacpp_opt(c, arg, o);
    }
}

/* "expected generic, transformers, vllm, llamacpp or litgpt": the library's list. */
static const char *runtime_names(char *buf, size_t cap)
{
    size_t n = vf_runtime_count(), len = (size_t)snprintf(buf, cap, "expected ");
    for (size_t i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ",
                                vf_runtime_name((vf_runtime)i));
    return buf;
}

int vf_cli_parse_infer_opt(int c, const char *arg, vf_estimate_opts *o)
{
    vf_infer_opts *io = &o->infer;
    uint64_t v;
    switch (c) {
    case VF_OPT_RUNTIME:
        if (vf_runtime_parse(arg, &o->runtime) != VF_OK) {
            char names[160];
            return vf_cli_opt_bad("runtime", arg, runtime_names(names, sizeof names));
        }
        return 1;
    case VF_OPT_WEIGHTS:
        if (!vf_weights_format_valid(arg))
            return vf_cli_opt_bad("weights", arg, "unknown weight format (see vramfit dtypes)");
        return copy("weights", arg, o->weights, sizeof o->weights);
    case VF_OPT_KEEP_DTYPE:
        return copy("keep-dtype", arg, io->keep_dtype, sizeof io->keep_dtype);
    case VF_OPT_KV:
        return copy("kv", arg, io->kv_dtype, sizeof io->kv_dtype);
    case VF_OPT_ATTN:
        if (strcasecmp(arg, "eager") == 0)
            io->attn = VF_ATTN_EAGER;
        else if (strcasecmp(arg, "sdpa") == 0)
            io->attn = VF_ATTN_SDPA;
        else if (strcasecmp(arg, "flash") == 0 || strcasecmp(arg, "flash_attention_2") == 0)
            io->attn = VF_ATTN_FLASH;
        else
            return vf_cli_opt_bad("attn", arg, "expected eager, sdpa or flash");
        return 1;
    case VF_OPT_BATCH:
        return count("batch", arg, &io->batch, false);
    case VF_OPT_CONTEXT:
        return count("context", arg, &io->context, false);
    case VF_OPT_PROMPT:
        return count("prompt", arg, &io->prompt_tokens, false);
    case VF_OPT_GPU: {
        /* a catalog name ("H100", "rtx-4090", "A100-80GBx4") or a size ("80GB") */
        if (vf_parse_bytes(arg, &o->gpu_bytes) && o->gpu_bytes > 0)
            return 1; /* a plain size needs no catalog */
        vf_gpu_choice g;
        vf_error err = {0};
        if (vf_gpu_lookup(arg, &g, &err) != VF_OK || g.gpu.memory_bytes == 0) {
            fprintf(stderr, "vramfit: --gpu %s: %s\n", arg, err.msg[0] ? err.msg : "unknown gpu");
            return -1;
        }
        o->gpu_bytes = g.gpu.memory_bytes;
        const char *gn = g.gpu.name ? g.gpu.name : g.name;
        size_t gl = strlen(gn) < sizeof io->gpu_name ? strlen(gn) : sizeof io->gpu_name - 1;
        memcpy(io->gpu_name, gn, gl);
        io->gpu_name[gl] = '\0';
        if (g.count > 1)
            o->gpus = g.count;
        return 1;
    }
    case VF_OPT_TP:
    case VF_OPT_PP:
    case VF_OPT_GPUS: {
        const char *name = c == VF_OPT_TP ? "tp" : c == VF_OPT_PP ? "pp" : "gpus";
        if (count(name, arg, &v, false) < 0)
            return -1;
        if (v > 4096)
            return vf_cli_opt_bad(name, arg, "at most 4096");
        if (c == VF_OPT_TP)
            o->tp = (uint32_t)v;
        else if (c == VF_OPT_PP)
            o->pp = (uint32_t)v;
        else
            o->gpus = (uint32_t)v;
        return 1;
    }
    case VF_OPT_INPUT: {
        /* joined as "A=DIMS;B=DIMS" for vf_estimate_opts.graph_inputs; lives as long as the process */
        static char joined[4096];
        size_t have = strlen(joined);
        if (!strchr(arg, '=') || strchr(arg, ';') || have + strlen(arg) + 2 > sizeof joined)
            return vf_cli_opt_bad("input", arg, "expected NAME=DIMS (e.g. input=1x3x224x224)");
        snprintf(joined + have, sizeof joined - have, "%s%s", have ? ";" : "", arg);
        o->graph_inputs = joined;
        return 1;
    }
    case VF_OPT_LOGITS:
        if (strcasecmp(arg, "all") == 0)
            io->logits_all = true;
        else if (strcasecmp(arg, "last") == 0)
            io->logits_all = false;
        else
            return vf_cli_opt_bad("logits", arg, "expected all or last");
        return 1;
    case VF_OPT_ALLOC_CONF: /* checked by the memory model, as PyTorch checks it */
        return copy("alloc-conf", arg, o->alloc_conf, sizeof o->alloc_conf);
    case VF_OPT_CUDA_CONTEXT:
        if (!vf_parse_bytes(arg, &o->cuda_context) || !o->cuda_context || o->cuda_context > ((uint64_t)1 << 40))
            return vf_cli_opt_bad("cuda-context", arg, "expected a size such as 1343MiB");
        return 1;
    case VF_OPT_CUDA_VERSION:
        return copy("cuda-version", arg, o->cuda_version, sizeof o->cuda_version);
    case VF_OPT_MARGIN:
        if (!vf_parse_bytes(arg, &o->margin) || o->margin > ((uint64_t)1 << 44))
            return vf_cli_opt_bad("margin", arg, "expected a size such as 1GiB (or 0)");
        o->margin_set = true;
        return 1;
    default:
        return parse_vllm_opt(c, arg, o);
    }
}

void vf_cli_env_defaults(vf_estimate_opts *o)
{
    const char *conf = getenv("PYTORCH_CUDA_ALLOC_CONF");
    if (conf && strlen(conf) < sizeof o->alloc_conf)
        memcpy(o->alloc_conf, conf, strlen(conf) + 1);
}

bool vf_cli_options_merge(struct option *out, size_t cap, const struct option *const *tables, size_t n)
{
    size_t k = 0;
    for (size_t t = 0; t < n; t++)
        for (const struct option *p = tables[t]; p->name; p++) {
            if (k + 1 >= cap)
                return false;
            out[k++] = *p;
        }
    if (k >= cap)
        return false;
    memset(&out[k], 0, sizeof out[k]);
    return true;
}

/* A graph (.onnx) runs in a plain PyTorch process: the transformers runtime's
 * costs (the CUDA context, cuBLAS's workspace) without transformers. */
const char *vf_cli_runtime_label(vf_runtime r, bool graph)
{
    if (r == VF_RUNTIME_TRANSFORMERS && graph)
        return "pytorch";
    return vf_runtime_name(r);
}

void vf_cli_default_runtime(vf_estimate_opts *o, const vf_model *m)
{
    bool gguf = vf_model_format(m) == VF_FORMAT_GGUF || vf_model_priced_as(m); /* a GGUF repository's name */
    o->runtime = o->mode == VF_MODE_INFERENCE && gguf ? VF_RUNTIME_LLAMACPP : VF_RUNTIME_TRANSFORMERS;
}

/* estimate's own options, before the shared knob tables. */
const struct option vf_cli_estimate_cmd_options[] = {
    {"train", no_argument, 0, OPT_TRAIN},     {"json", no_argument, 0, OPT_JSON},
    {"explain", no_argument, 0, OPT_EXPLAIN}, {"units", required_argument, 0, OPT_UNITS},
    {"help", no_argument, 0, OPT_HELP},       {0, 0, 0, 0},
};
