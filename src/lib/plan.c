/* plan.c — launch configurations for existing engines from the knobs fit
 * settled on. Flags are spelled as each engine documents them (the lists the
 * tests check against are in tests/data/plan/, with their sources). */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

typedef struct sbuf {
    char *p;
    size_t cap, len;
    bool overflow;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) VF_PRINTF(2, 3);
static void put(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->len < b->cap ? b->cap - b->len : 0;
    int n = vsnprintf(b->p + (b->len < b->cap ? b->len : b->cap - 1), room, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= room)
        b->overflow = true;
    else
        b->len += (size_t)n;
}

vf_status vf_engine_parse(const char *s, vf_engine *out)
{
    if (!s)
        return VF_EINVAL;
    if (!strcasecmp(s, "vllm"))
        *out = VF_ENGINE_VLLM;
    else if (!strcasecmp(s, "llamacpp") || !strcasecmp(s, "llama.cpp") || !strcasecmp(s, "llama-cpp"))
        *out = VF_ENGINE_LLAMACPP;
    else if (!strcasecmp(s, "deepspeed"))
        *out = VF_ENGINE_DEEPSPEED;
    else if (!strcasecmp(s, "accelerate") || !strcasecmp(s, "transformers"))
        *out = VF_ENGINE_ACCELERATE;
    else
        return VF_EINVAL;
    return VF_OK;
}

/* Shell-safe enough for model names and paths: quote unless plain. */
static void put_arg(sbuf *b, const char *s)
{
    bool plain = *s != '\0';
    for (const char *c = s; *c; c++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:+=@%,", *c))
            plain = false;
    if (plain) {
        put(b, "%s", s);
        return;
    }
    put(b, "'");
    for (const char *c = s; *c; c++) {
        if (*c == '\'')
            put(b, "'\\''");
        else
            put(b, "%c", *c);
    }
    put(b, "'");
}

static const char *vllm_quant(const char *w)
{
    if (!w[0] || !strcasecmp(w, "bf16") || !strcasecmp(w, "f16") || !strcasecmp(w, "fp16"))
        return NULL;
    if (!strncasecmp(w, "fp8", 3) || !strncasecmp(w, "f8", 2))
        return "fp8";
    if (!strncasecmp(w, "awq", 3))
        return "awq";
    if (!strncasecmp(w, "gptq", 4))
        return "gptq";
    if (!strcasecmp(w, "int8") || !strcasecmp(w, "int4") || !strncasecmp(w, "nf4", 3) || !strcasecmp(w, "fp4"))
        return "bitsandbytes";
    return NULL;
}

static const char *vllm_kv(const char *k)
{
    if (!k[0] || !strcasecmp(k, "auto") || !strcasecmp(k, "f16") || !strcasecmp(k, "bf16") || !strcasecmp(k, "fp16"))
        return "auto";
    if (!strcasecmp(k, "fp8") || !strcasecmp(k, "f8_e4m3") || !strcasecmp(k, "fp8_e4m3"))
        return !strcasecmp(k, "fp8") ? "fp8" : "fp8_e4m3";
    if (!strcasecmp(k, "fp8_e5m2") || !strcasecmp(k, "f8_e5m2"))
        return "fp8_e5m2";
    return NULL;
}

static void emit_vllm(sbuf *b, const char *ref, const vf_estimate_opts *o, const vf_estimate *e, uint32_t gpus)
{
    uint32_t tp = o->tp ? o->tp : 1, pp = o->pp ? o->pp : 1;
    if (!o->tp && !o->pp && gpus > 1)
        tp = gpus;
    uint64_t len = e->context ? e->context : o->infer.max_model_len ? o->infer.max_model_len : o->infer.context;
    uint64_t seqs = o->infer.max_num_seqs ? o->infer.max_num_seqs : e->batch ? e->batch : 1;
    double util = o->infer.gpu_util > 0 ? o->infer.gpu_util : 0.9;
    put(b, "vllm serve ");
    put_arg(b, ref);
    put(b, " --tensor-parallel-size %u", tp);
    if (pp > 1)
        put(b, " --pipeline-parallel-size %u", pp);
    if (len)
        put(b, " --max-model-len %llu", (unsigned long long)len);
    put(b, " --gpu-memory-utilization %.2f", util);
    const char *kv = vllm_kv(o->infer.kv_dtype);
    put(b, " --kv-cache-dtype %s", kv ? kv : "auto");
    put(b, " --max-num-seqs %llu", (unsigned long long)seqs);
    const char *q = vllm_quant(o->weights);
    if (q)
        put(b, " --quantization %s", q);
    if (o->infer.enforce_eager)
        put(b, " --enforce-eager");
    put(b, "\n");
}

static void kv_pair(const char *k, char *kk, char *vv, size_t n)
{
    if (!k[0] || !strcasecmp(k, "auto")) {
        snprintf(kk, n, "f16");
        snprintf(vv, n, "f16");
        return;
    }
    const char *comma = strchr(k, ',');
    if (comma) {
        snprintf(kk, n, "%.*s", (int)(comma - k), k);
        snprintf(vv, n, "%s", comma + 1);
    } else {
        snprintf(kk, n, "%s", k);
        snprintf(vv, n, "%s", k);
    }
    for (char *c = kk; *c; c++)
        *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
    for (char *c = vv; *c; c++)
        *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
}

static void emit_llamacpp(sbuf *b, const vf_model *m, const char *ref, const vf_estimate_opts *o,
                          const vf_estimate *e, uint32_t gpus)
{
    const vf_hparams *hp = vf_model_hparams(m);
    const vf_infer_opts *in = &o->infer;
    uint32_t np = in->parallel ? in->parallel : 1;
    /* -c is llama.cpp's n_ctx, shared by the -np slots (as the knob is) */
    uint64_t ctx = in->context ? in->context : e->context;
    int32_t ngl = in->n_gpu_layers >= 0 ? in->n_gpu_layers : (int32_t)(hp && hp->n_layers ? hp->n_layers + 1 : 999);
    put(b, "llama-server -m ");
    put_arg(b, ref);
    put(b, " -ngl %d", ngl);
    if (ctx)
        put(b, " -c %llu", (unsigned long long)ctx);
    put(b, " -b %llu -ub %llu", (unsigned long long)(in->lc_batch ? in->lc_batch : 2048),
        (unsigned long long)(in->ubatch ? in->ubatch : 512));
    /* explicit: llama-server's own default is -1 (auto slots) */
    put(b, " -np %u", np);
    uint32_t ns = in->n_split ? in->n_split : gpus;
    if (ns > 1) {
        put(b, " --tensor-split ");
        for (uint32_t i = 0; i < ns; i++) {
            double v = in->n_split ? in->tensor_split[i] : 1.0;
            put(b, i ? ",%g" : "%g", v);
        }
    }
    char kk[32], vv[32];
    kv_pair(in->kv_dtype, kk, vv, sizeof kk);
    put(b, " -ctk %s -ctv %s", kk, vv);
    put(b, " -fa %s\n", in->flash_attn == 1 ? "on" : in->flash_attn == 0 ? "off" : "auto");
}

static void emit_deepspeed(sbuf *b, const vf_estimate_opts *o, uint32_t gpus)
{
    const vf_train_opts *t = &o->train;
    uint64_t mb = t->micro_batch ? t->micro_batch : 1, ga = t->grad_accum ? t->grad_accum : 1;
    int stage = t->zero;
    if (t->fsdp == 1)
        stage = 3;
    else if (t->fsdp == 2 && stage < 2)
        stage = 2;
    put(b, "{\n  \"train_micro_batch_size_per_gpu\": %llu,\n", (unsigned long long)mb);
    put(b, "  \"gradient_accumulation_steps\": %llu,\n", (unsigned long long)ga);
    put(b, "  \"train_batch_size\": %llu,\n", (unsigned long long)(mb * ga * (gpus ? gpus : 1)));
    bool bf16 = t->precision == VF_PREC_BF16_MIXED || t->precision == VF_PREC_BF16;
    bool fp16 = t->precision == VF_PREC_FP16_MIXED;
    put(b, "  \"bf16\": {\"enabled\": %s},\n", bf16 ? "true" : "false");
    put(b, "  \"fp16\": {\"enabled\": %s},\n", fp16 ? "true" : "false");
    put(b, "  \"zero_optimization\": {\n    \"stage\": %d", stage);
    const char *dev = t->offload_nvme ? "nvme" : "cpu";
    if (t->offload == VF_OFFLOAD_OPTIMIZER || t->offload == VF_OFFLOAD_BOTH)
        put(b, ",\n    \"offload_optimizer\": {\"device\": \"%s\", \"pin_memory\": true}", dev);
    if ((t->offload == VF_OFFLOAD_PARAMS || t->offload == VF_OFFLOAD_BOTH) && stage == 3)
        put(b, ",\n    \"offload_param\": {\"device\": \"%s\", \"pin_memory\": true}", dev);
    put(b, "\n  }");
    if (t->recompute != VF_RECOMPUTE_NONE)
        put(b, ",\n  \"activation_checkpointing\": {\"partition_activations\": %s, \"cpu_checkpointing\": false, "
               "\"contiguous_memory_optimization\": false}",
            stage >= 1 && gpus > 1 ? "true" : "false");
    put(b, "\n}\n");
}

static void emit_accelerate(sbuf *b, const char *ref, const vf_estimate_opts *o, const vf_estimate *e,
                            uint64_t gpu_bytes, uint32_t gpus)
{
    /* max_memory bounds what device_map="auto" places per device: the weights'
     * share, i.e. the device less what the rest of the run needs there */
    uint64_t rest = e->per_gpu_bytes > e->weights ? e->per_gpu_bytes - e->weights : 0;
    uint64_t budget = gpu_bytes > rest ? gpu_bytes - rest : 0;
    uint64_t n = gpus ? gpus : 1;
    uint64_t weights_total = e->weights * (e->gpus ? e->gpus : 1);
    uint64_t on_gpus = budget * n;
    uint64_t cpu = weights_total > on_gpus ? weights_total - on_gpus : 0;
    const char *w = o->weights;
    bool q8 = !strcasecmp(w, "int8");
    bool q4 = !strncasecmp(w, "nf4", 3) || !strcasecmp(w, "int4") || !strcasecmp(w, "fp4");
    put(b, "from transformers import AutoModelForCausalLM%s\n\nmodel = AutoModelForCausalLM.from_pretrained(\n    \"",
        q8 || q4 ? ", BitsAndBytesConfig" : "");
    for (const char *c = ref; *c; c++)
        put(b, *c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
    put(b, "\",\n    device_map=\"auto\",\n    max_memory={");
    for (uint64_t i = 0; i < n; i++)
        put(b, "%s%llu: \"%lluMiB\"", i ? ", " : "", (unsigned long long)i, (unsigned long long)(budget >> 20));
    if (cpu)
        put(b, ", \"cpu\": \"%lluMiB\"", (unsigned long long)(((cpu * 11) / 10 >> 20) + 1));
    put(b, "},\n");
    if (q8)
        put(b, "    quantization_config=BitsAndBytesConfig(load_in_8bit=True),\n");
    else if (q4)
        put(b, "    quantization_config=BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"%s\"%s),\n",
            !strcasecmp(w, "fp4") ? "fp4" : "nf4", !strcasecmp(w, "nf4-dq") ? ", bnb_4bit_use_double_quant=True" : "");
    /* transformers 4.56 renamed torch_dtype to dtype */
    put(b, "    dtype=\"auto\",  # transformers before 4.56: torch_dtype=\"auto\"\n)\n");
}

vf_status vf_plan_emit(vf_engine engine, const vf_model *m, const char *model_ref, const vf_estimate_opts *o,
                       const vf_estimate *e, uint64_t gpu_bytes, uint32_t gpus, char *buf, size_t cap, vf_error *err)
{
    if (!m || !o || !e || !buf || !cap)
        return vf__err(err, VF_EINVAL, "", "plan needs a model, options, an estimate and a buffer");
    sbuf b = {.p = buf, .cap = cap};
    buf[0] = '\0';
    const char *ref = model_ref && *model_ref ? model_ref : vf_model_source(m);
    switch (engine) {
    case VF_ENGINE_VLLM:
        emit_vllm(&b, ref, o, e, gpus);
        break;
    case VF_ENGINE_LLAMACPP:
        emit_llamacpp(&b, m, ref, o, e, gpus);
        break;
    case VF_ENGINE_DEEPSPEED:
        emit_deepspeed(&b, o, gpus);
        break;
    case VF_ENGINE_ACCELERATE:
        emit_accelerate(&b, ref, o, e, gpu_bytes, gpus);
        break;
    default:
        return vf__err(err, VF_EINVAL, "", "unknown engine");
    }
    if (b.overflow)
        return vf__err(err, VF_ERANGE, "", "plan does not fit the buffer");
    return VF_OK;
}
