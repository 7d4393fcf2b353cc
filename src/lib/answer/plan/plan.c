/* plan.c — launch configurations for existing engines from the knobs fit
 * settled on. Flags are spelled as each engine documents them (the lists the
 * tests check against are in tests/data/plan/, with their sources). */
#include "answer/plan/plan_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

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

/* vLLM past one node (docs/serving/parallelism_scaling.md): a Ray cluster,
 * its head on the first node and the others joined to it, then one `vllm
 * serve` on the head with the Ray executor; every node needs the model at
 * the same path (or the same Hugging Face cache). */
static void vllm_ray_cluster(vf__sbuf *b, const vf__layout *l, uint32_t tp, uint32_t pp)
{
    vf__put(b, "# vLLM on %u nodes of %u GPUs: tensor parallel %u inside a node, pipeline parallel %u across, over "
               "Ray.\n", l->nodes, l->per_node, tp, pp);
    vf__put(b, "# On the head node (HEAD_IP below is its address):\n");
    vf__put(b, "ray start --head --port=6379\n");
    if (l->nodes > 2)
        vf__put(b, "# On each of the other %u nodes:\n", l->nodes - 1);
    else
        vf__put(b, "# On the other node:\n");
    vf__put(b, "ray start --address=HEAD_IP:6379\n");
    vf__put(b, "# Then on the head node, once 'ray status' counts %u GPUs (the model at the same path on every "
               "node):\n", l->gpus);
}

static void emit_vllm(vf__sbuf *b, const char *ref, const vf_estimate_opts *o, const vf_estimate *e,
                      const vf__layout *l)
{
    uint32_t gpus = l->gpus;
    uint32_t tp = o->tp ? o->tp : 1, pp = o->pp ? o->pp : 1;
    if (!o->tp && !o->pp && gpus > 1)
        tp = gpus;
    bool ray = l->nodes > 1 || tp * pp > l->per_node;
    if (ray)
        vllm_ray_cluster(b, l, tp, pp);
    uint64_t len = e->context ? e->context : o->infer.max_model_len ? o->infer.max_model_len : o->infer.context;
    uint64_t seqs = o->infer.max_num_seqs ? o->infer.max_num_seqs : e->batch ? e->batch : 1;
    double util = o->infer.gpu_util > 0 ? o->infer.gpu_util : 0.9;
    vf__put(b, "vllm serve ");
    vf__put_arg(b, ref);
    vf__put(b, " --tensor-parallel-size %u", tp);
    if (pp > 1)
        vf__put(b, " --pipeline-parallel-size %u", pp);
    if (o->ep > 1) { /* the expert group is tp x dp (vllm_layout.c, vllm.c expert_parallel) */
        if (o->ep / tp > 1)
            vf__put(b, " --data-parallel-size %u", o->ep / tp);
        vf__put(b, " --enable-expert-parallel");
    }
    if (len)
        vf__put(b, " --max-model-len %llu", (unsigned long long)len);
    vf__put(b, " --gpu-memory-utilization %.2f", util);
    const char *kv = vllm_kv(o->infer.kv_dtype);
    vf__put(b, " --kv-cache-dtype %s", kv ? kv : "auto");
    vf__put(b, " --max-num-seqs %llu", (unsigned long long)seqs);
    const char *q = vllm_quant(o->weights);
    if (q)
        vf__put(b, " --quantization %s", q);
    if (o->infer.enforce_eager)
        vf__put(b, " --enforce-eager");
    if (ray)
        vf__put(b, " --distributed-executor-backend ray");
    vf__put(b, "\n");
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

/* llama.cpp past one host (tools/rpc/README.md): rpc-server on each other
 * host exposes its GPUs; the main host's llama-server reaches them with
 * --rpc and splits the layers over its own devices and theirs. */
static void llamacpp_rpc_hosts(vf__sbuf *b, const vf__layout *l)
{
    vf__put(b, "# llama.cpp over %u hosts: rpc-server on each other host serves its GPUs to the main host\n",
            l->nodes);
    vf__put(b, "# (built with -DGGML_RPC=ON; the RPC port is unauthenticated: keep it on a private network).\n");
    if (l->nodes > 2)
        vf__put(b, "# On each of the other %u hosts (HOST1, HOST2, ... below):\n", l->nodes - 1);
    else
        vf__put(b, "# On the other host (HOST1 below):\n");
    vf__put(b, "rpc-server -H 0.0.0.0 -p 50052\n");
    vf__put(b, "# On the main host:\n");
}

/* llama.cpp's tensor placement flags, as common/arg.cpp takes them: the
 * overrides in their order (-ot, one each; --cpu-moe and --n-cpu-moe
 * recognised by the patterns they add), then the --n-cpu-moe fit chose. */
#define LC_EXPS VF_LLAMACPP_EXPERTS_PATTERN "=CPU"

static void llamacpp_placement(vf__sbuf *b, const vf_estimate_opts *o)
{
    for (const char *p = o->tensor_overrides; p && *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char line[600], want[96];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
        uint32_t n = 0;
        for (const char *q = p; q;) { /* blk\.0.., blk\.1.., ...: --n-cpu-moe n */
            const char *qe = strchr(q, '\n');
            size_t ql = qe ? (size_t)(qe - q) : strlen(q);
            int w = snprintf(want, sizeof want, "blk\\.%u" LC_EXPS, n);
            if ((size_t)w != ql || memcmp(q, want, ql) != 0)
                break;
            n++;
            q = qe ? qe + 1 : NULL;
        }
        if (!strcmp(line, LC_EXPS)) {
            vf__put(b, " --cpu-moe");
        } else if (n > 0) {
            vf__put(b, " --n-cpu-moe %u", n);
            for (uint32_t i = 1; i < n; i++)
                p = strchr(p, '\n') + 1;
            end = strchr(p, '\n');
            len = end ? (size_t)(end - p) : strlen(p);
        } else {
            vf__put(b, " -ot ");
            vf__put_arg(b, line);
        }
        p += len;
        if (*p == '\n')
            p++;
    }
    if (o->n_cpu_moe < 0)
        vf__put(b, " --cpu-moe");
    else if (o->n_cpu_moe > 0)
        vf__put(b, " --n-cpu-moe %d", o->n_cpu_moe);
}

static void emit_llamacpp(vf__sbuf *b, const vf_model *m, const char *ref, const vf_estimate_opts *o,
                          const vf_estimate *e, const vf__layout *l)
{
    uint32_t gpus = l->gpus;
    if (l->nodes > 1)
        llamacpp_rpc_hosts(b, l);
    const vf_hparams *hp = vf_model_hparams(m);
    const vf_infer_opts *in = &o->infer;
    uint32_t np = in->parallel ? in->parallel : 1;
    /* -c is llama.cpp's n_ctx, shared by the -np slots (as the knob is) */
    uint64_t ctx = in->context ? in->context : e->context;
    int32_t ngl = in->n_gpu_layers >= 0 ? in->n_gpu_layers : (int32_t)(hp && hp->n_layers ? hp->n_layers + 1 : 999);
    vf__put(b, "llama-server -m ");
    vf__put_arg(b, ref);
    vf__put(b, " -ngl %d", ngl);
    if (ctx)
        vf__put(b, " -c %llu", (unsigned long long)ctx);
    vf__put(b, " -b %llu -ub %llu", (unsigned long long)(in->lc_batch ? in->lc_batch : 2048),
        (unsigned long long)(in->ubatch ? in->ubatch : 512));
    /* explicit: llama-server's own default is -1 (auto slots) */
    vf__put(b, " -np %u", np);
    uint32_t ns = in->n_split ? in->n_split : gpus;
    if (ns > 1) {
        vf__put(b, " --tensor-split ");
        for (uint32_t i = 0; i < ns; i++) {
            double v = in->n_split ? in->tensor_split[i] : 1.0;
            vf__put(b, i ? ",%g" : "%g", v);
        }
    }
    char kk[32], vv[32];
    kv_pair(in->kv_dtype, kk, vv, sizeof kk);
    vf__put(b, " -ctk %s -ctv %s", kk, vv);
    vf__put(b, " -fa %s", in->flash_attn == 1 ? "on" : in->flash_attn == 0 ? "off" : "auto");
    llamacpp_placement(b, o);
    if (o->mmproj && o->mmproj[0]) { /* the projector the estimate priced (weights and clip's buffer) */
        vf__put(b, " --mmproj ");
        vf__put_arg(b, o->mmproj);
    }
    if (l->nodes > 1) {
        vf__put(b, " --rpc ");
        for (uint32_t i = 1; i < l->nodes; i++)
            vf__put(b, i > 1 ? ",HOST%u:50052" : "HOST%u:50052", i);
    }
    vf__put(b, "\n");
}

static void emit_accelerate(vf__sbuf *b, const char *ref, const vf_estimate_opts *o, const vf_estimate *e,
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
    vf__put(b, "from transformers import AutoModelForCausalLM%s\n\nmodel = AutoModelForCausalLM.from_pretrained(\n    \"",
        q8 || q4 ? ", BitsAndBytesConfig" : "");
    for (const char *c = ref; *c; c++)
        vf__put(b, *c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
    vf__put(b, "\",\n    device_map=\"auto\",\n    max_memory={");
    for (uint64_t i = 0; i < n; i++)
        vf__put(b, "%s%llu: \"%lluMiB\"", i ? ", " : "", (unsigned long long)i, (unsigned long long)(budget >> 20));
    if (cpu)
        vf__put(b, ", \"cpu\": \"%lluMiB\"", (unsigned long long)(((cpu * 11) / 10 >> 20) + 1));
    vf__put(b, "},\n");
    if (q8)
        vf__put(b, "    quantization_config=BitsAndBytesConfig(load_in_8bit=True),\n");
    else if (q4)
        vf__put(b, "    quantization_config=BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"%s\"%s),\n",
            !strcasecmp(w, "fp4") ? "fp4" : "nf4", !strcasecmp(w, "nf4-dq") ? ", bnb_4bit_use_double_quant=True" : "");
    /* a flash-attention choice is the loader's (transformers attn_implementation) */
    if (o->infer.attn == VF_ATTN_FLASH)
        vf__put(b, "    attn_implementation=\"flash_attention_2\",\n");
    else if (o->infer.attn == VF_ATTN_SDPA)
        vf__put(b, "    attn_implementation=\"sdpa\",\n");
    else if (o->infer.attn == VF_ATTN_EAGER)
        vf__put(b, "    attn_implementation=\"eager\",\n");
    /* transformers 4.56 renamed torch_dtype to dtype */
    vf__put(b, "    dtype=\"auto\",  # transformers before 4.56: torch_dtype=\"auto\"\n)\n");
}

vf_status vf_plan_emit_nodes(vf_engine engine, const vf_model *m, const char *model_ref, const vf_estimate_opts *o,
                             const vf_estimate *e, uint64_t gpu_bytes, uint32_t gpus, uint32_t gpus_per_node, char *buf,
                             size_t cap, vf_error *err)
{
    if (!m || !o || !e || !buf || !cap)
        return vf__err(err, VF_EINVAL, "", "plan needs a model, options, an estimate and a buffer");
    vf__sbuf b = {.p = buf, .cap = cap};
    buf[0] = '\0';
    const char *ref = model_ref && *model_ref ? model_ref : vf_model_source(m);
    vf__layout l = {.gpus = gpus ? gpus : 1, .per_node = gpus_per_node ? gpus_per_node : 8};
    l.nodes = l.gpus / l.per_node + (l.gpus % l.per_node != 0);
    if (l.nodes == 1)
        l.per_node = l.gpus;
    else if (o->mode == VF_MODE_TRAINING)
        l.gpus = l.nodes * l.per_node; /* the launchers start the same ranks on every node */
    switch (engine) {
    case VF_ENGINE_VLLM:
        emit_vllm(&b, ref, o, e, &l);
        break;
    case VF_ENGINE_LLAMACPP:
        emit_llamacpp(&b, m, ref, o, e, &l);
        break;
    case VF_ENGINE_DEEPSPEED:
        vf__emit_deepspeed(&b, o, &l);
        break;
    case VF_ENGINE_ACCELERATE:
        if (o->mode == VF_MODE_TRAINING)
            vf__emit_accelerate_train(&b, o, &l);
        else
            emit_accelerate(&b, ref, o, e, gpu_bytes, l.gpus);
        break;
    default:
        return vf__err(err, VF_EINVAL, "", "unknown engine");
    }
    if (b.overflow)
        return vf__err(err, VF_ERANGE, "", "plan does not fit the buffer");
    return VF_OK;
}

vf_status vf_plan_emit(vf_engine engine, const vf_model *m, const char *model_ref, const vf_estimate_opts *o,
                       const vf_estimate *e, uint64_t gpu_bytes, uint32_t gpus, char *buf, size_t cap, vf_error *err)
{
    return vf_plan_emit_nodes(engine, m, model_ref, o, e, gpu_bytes, gpus, 8, buf, cap, err);
}
