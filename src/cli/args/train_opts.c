/* train_opts.c — the training knobs of 'vramfit estimate --train' (and of
 * any command that runs the training model): one table, one parser, one help
 * text. --batch, --context, --tp, --pp, --gpus and --attn are the shared
 * knobs of the inference table; the training model reads them too. */
#include "args/estimate_opts.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum {
    T_OPTIMIZER = VF_OPT_TRAIN_FIRST, T_PRECISION, T_CKPT, T_GRAD_ACCUM, T_MICRO_BATCH, T_SEQ_LEN, T_LORA_RANK,
    T_LORA_TARGETS, T_QLORA, T_ZERO, T_FSDP, T_EP, T_OFFLOAD, T_OFFLOAD_DEVICE, T_STATES_ONLY, T_PER_NODE,
    T_OPTIM_IMPL, T_LORA_DROPOUT, T_BNB_VERSION, T_GRADS_KEPT, T_TORCH_VERSION, T_LOSS, T_FREEZE, T_FROZEN_BN,
    T_OPTIM_IN_BWD, T_ACT_OFFLOAD, T_KBIT_PREPARE, T_ADAPTER_DTYPE, T_LOAD_DTYPE, T_EVAL_BATCH
};

const struct option vf_cli_train_options[] = {
    {"optimizer", required_argument, 0, T_OPTIMIZER},
    {"precision", required_argument, 0, T_PRECISION},
    {"grad-checkpoint", required_argument, 0, T_CKPT},
    {"grad-accum", required_argument, 0, T_GRAD_ACCUM},
    {"micro-batch", required_argument, 0, T_MICRO_BATCH},
    {"seq-len", required_argument, 0, T_SEQ_LEN},
    {"lora-rank", required_argument, 0, T_LORA_RANK},
    {"lora-targets", required_argument, 0, T_LORA_TARGETS},
    {"qlora", required_argument, 0, T_QLORA},
    {"zero", required_argument, 0, T_ZERO},
    {"fsdp", required_argument, 0, T_FSDP},
    {"ep", required_argument, 0, T_EP},
    {"offload", required_argument, 0, T_OFFLOAD},
    {"offload-device", required_argument, 0, T_OFFLOAD_DEVICE},
    {"states-only", no_argument, 0, T_STATES_ONLY},
    {"gpus-per-node", required_argument, 0, T_PER_NODE},
    {"optim-impl", required_argument, 0, T_OPTIM_IMPL},
    {"lora-dropout", required_argument, 0, T_LORA_DROPOUT},
    {"bnb-version", required_argument, 0, T_BNB_VERSION},
    {"grads-kept", no_argument, 0, T_GRADS_KEPT},
    {"torch-version", required_argument, 0, T_TORCH_VERSION},
    {"loss", required_argument, 0, T_LOSS},
    {"freeze", required_argument, 0, T_FREEZE},
    {"frozen-bn", no_argument, 0, T_FROZEN_BN},
    {"optimizer-in-backward", no_argument, 0, T_OPTIM_IN_BWD},
    {"activation-offload", no_argument, 0, T_ACT_OFFLOAD},
    {"kbit-prepare", no_argument, 0, T_KBIT_PREPARE},
    {"adapter-dtype", required_argument, 0, T_ADAPTER_DTYPE},
    {"load-dtype", required_argument, 0, T_LOAD_DTYPE},
    {"eval-batch", required_argument, 0, T_EVAL_BATCH},
    {0, 0, 0, 0},
};

void vf_cli_train_opts_help(FILE *f)
{
    fputs("  training (--train):\n"
          "  --optimizer O          adamw (default) | adam | adamw-8bit | paged-adamw-8bit | sgd |\n"
          "                         sgd-momentum | adafactor | lion | adagrad | paged-adamw (32-bit)\n"
          "  --optim-impl I         foreach (PyTorch's default on CUDA) | for-loop | fused |\n"
          "                         foreach-legacy (torch < 2.0)\n"
          "  --precision P          bf16-mixed (default) | fp16-mixed | fp32 | bf16 (pure, no master copy)\n"
          "  --grad-checkpoint R    none (default) | selective | full | unsloth (full, each block's input\n"
          "                         checkpoint offloaded to host memory: Unsloth use_gradient_checkpointing=\n"
          "                         \"unsloth\", its default)\n"
          "  --batch N              micro-batch per GPU (default 1; also --micro-batch N)\n"
          "  --context N            sequence length (also --seq-len N)\n"
          "                         (default 2048 or the model's, whichever is less)\n"
          "  --grad-accum N         micro-batches per optimizer step (default 1)\n"
          "  --lora-rank R          LoRA adapters of rank R; only they train\n"
          "  --lora-targets T       q,k,v,o,gate,up,down or all-linear (default q,v)\n"
          "  --lora-dropout P       PEFT's lora_dropout (default 0): a masked input copy per adapter\n"
          "  --adapter-dtype D      fp32 (default: PEFT's get_peft_model upcasts adapters on a 16-bit base,\n"
          "                         each adapter casting its input to fp32) | base (the base's dtype:\n"
          "                         autocast_adapter_dtype=False, PEFT < 0.12); ZeRO/FSDP: base\n"
          "  --load-dtype D         LoRA: 16 (default: from_pretrained(torch_dtype=bf16/fp16)) | fp32\n"
          "                         (no torch_dtype: transformers' default fp32; the frozen base at 4 bytes,\n"
          "                         trained under autocast); needs a mixed --precision\n"
          "  --qlora nf4|nf4-dq     4-bit NF4 base (with double quantization); needs --lora-rank\n"
          "  --kbit-prepare         under --qlora: PEFT's prepare_model_for_kbit_training (the parameters\n"
          "                         it does not quantize cast to fp32, an fp32 residual stream; full\n"
          "                         checkpointing unless --grad-checkpoint is given, as its default\n"
          "                         use_gradient_checkpointing=True)\n"
          "  --bnb-version V        bitsandbytes under --qlora (default current; < 0.43.2 keeps\n"
          "                         every 4-bit matmul's input for backward; under litgpt\n"
          "                         also through the next micro-batch's forward; < 0.43 refuses\n"
          "                         ZeRO-3 / FSDP full shard: no 4-bit quant_storage)\n"
          "  --zero 0|1|2|3         ZeRO stage; or --fsdp full|grad-op|no-shard\n"
          "  --ep N                 expert-parallel size (MoE); vLLM inference: --enable-expert-parallel,\n"
          "                         N = tp x data-parallel ranks\n"
          "  --offload optimizer|params|both   to --offload-device cpu (default) | nvme\n"
          "  --gpus-per-node N      host memory is reported per node (default min(gpus, 8))\n"
          "  --states-only          model states only (DeepSpeed's estimators for ZeRO 1-3)\n"
          "  --grads-kept           zero_grad() keeps zeroed gradients between steps (set_to_none=False,\n"
          "                         PyTorch < 2.0's default) instead of freeing them\n"
          "  --torch-version V      the PyTorch release that trains (default current; < 1.11: softmax\n"
          "                         and log_softmax keep their input for backward as well)\n"
          "  --loss L               full (default: HF's loss, the whole logits upcast to fp32) |\n"
          "                         chunked[:N] (torchtune CEWithChunkedOutputLoss, N chunks, default 8) |\n"
          "                         fused (Liger / Unsloth fused linear cross-entropy: no whole logits)\n"
          "  --optimizer-in-backward  each parameter stepped in backward as its gradient is ready, the\n"
          "                         gradient freed there (torchtune optimizer_in_bwd; no --grad-accum)\n"
          "  --activation-offload   saved activations to pinned host memory, a few in flight on the GPU\n"
          "                         (torchtune enable_activation_offloading, OffloadActivations)\n"
          "  --eval-batch N         also an evaluation step (Trainer.evaluate under torch.no_grad()) of N\n"
          "                         sequences per GPU (per_device_eval_batch_size); the verdict takes the\n"
          "                         larger of the training and evaluation steps\n"
          "  --freeze REGEX         graphs (.onnx): initializers whose names match this POSIX extended\n"
          "                         regular expression do not train (requires_grad=False; repeatable)\n"
          "  --frozen-bn            graphs: Conv -> Mul -> Add by [1,C,1,1] constants is torchvision's\n"
          "                         FrozenBatchNorm2d, whose constants are buffers (detection backbones)\n",
          f);
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static int pick(const char *opt, const char *arg, const char *const *names, size_t n, int *out, const char *why)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(arg, names[i]) == 0) {
            *out = (int)i;
            return 1;
        }
    return vf_cli_opt_bad(opt, arg, why);
}

/* A knob of two values: *second is whether arg names the second. */
static int pick2(const char *opt, const char *arg, const char *first, const char *second, bool *out)
{
    const char *const n[] = {first, second};
    char why[64];
    snprintf(why, sizeof why, "expected %s or %s", first, second);
    int k = 0;
    if (pick(opt, arg, n, 2, &k, why) < 0)
        return -1;
    *out = k == 1;
    return 1;
}

/* A MAJOR.MINOR[...] version knob copied into its fixed-size field. */
static int version_opt(const char *opt, const char *arg, char *dst, size_t n, const char *why)
{
    unsigned x, y;
    if (strlen(arg) >= n || sscanf(arg, "%u.%u", &x, &y) != 2)
        return vf_cli_opt_bad(opt, arg, why);
    snprintf(dst, n, "%s", arg);
    return 1;
}

/* The knobs that mean something only to a training step: given to an
 * inference estimate they would change nothing, so the parsers refuse them
 * (never a silent no-op). --ep, --bnb-version and --torch-version price
 * inference too. */
const char *vf_cli_train_only(int c)
{
    static const struct { int c; const char *name; } only[] = {
        {T_OPTIMIZER, "optimizer"},   {T_CKPT, "grad-checkpoint"},   {T_GRAD_ACCUM, "grad-accum"},
        {T_LORA_RANK, "lora-rank"},   {T_LORA_TARGETS, "lora-targets"}, {T_QLORA, "qlora"},
        {T_ZERO, "zero"},             {T_FSDP, "fsdp"},              {T_OFFLOAD, "offload"},
        {T_OFFLOAD_DEVICE, "offload-device"}, {T_STATES_ONLY, "states-only"}, {T_OPTIM_IMPL, "optim-impl"},
        {T_LORA_DROPOUT, "lora-dropout"}, {T_GRADS_KEPT, "grads-kept"}, {T_LOSS, "loss"},
        {T_FREEZE, "freeze"},         {T_FROZEN_BN, "frozen-bn"},    {T_OPTIM_IN_BWD, "optimizer-in-backward"},
        {T_ACT_OFFLOAD, "activation-offload"}, {T_KBIT_PREPARE, "kbit-prepare"},
        {T_ADAPTER_DTYPE, "adapter-dtype"}, {T_LOAD_DTYPE, "load-dtype"}, {T_EVAL_BATCH, "eval-batch"},
    };
    for (size_t i = 0; i < sizeof only / sizeof only[0]; i++)
        if (only[i].c == c)
            return only[i].name;
    return NULL;
}

int vf_cli_train_only_check(const char *cmd, const char *given, const vf_estimate_opts *o)
{
    if (!given || o->mode == VF_MODE_TRAINING)
        return -1;
    return vf_usage_error(cmd, "--%s is a training knob: add --train (an inference estimate would ignore it)", given);
}

int vf_cli_parse_train_opt(int c, const char *arg, vf_estimate_opts *o)
{
    vf_train_opts *t = &o->train;
    uint64_t v;
    int k = 0;
    switch (c) {
    case T_OPTIMIZER: {
        static const char *const n[] = {"adamw", "adam", "adamw-8bit", "paged-adamw-8bit", "sgd",
                                        "sgd-momentum", "adafactor", "lion", "adagrad", "paged-adamw"};
        if (pick("optimizer", arg, n, N_OF(n), &k, "unknown optimizer (see vramfit estimate --help)") < 0)
            return -1;
        t->optimizer = (vf_optimizer)k;
        return 1;
    }
    case T_OPTIM_IMPL: {
        static const char *const n[] = {"foreach", "for-loop", "fused", "foreach-legacy"};
        if (pick("optim-impl", arg, n, N_OF(n), &k, "expected foreach, for-loop, fused or foreach-legacy") < 0)
            return -1;
        t->optim_impl = (vf_optim_impl)k;
        return 1;
    }
    case T_PRECISION: {
        static const char *const n[] = {"fp32", "fp16-mixed", "bf16-mixed", "bf16"};
        if (pick("precision", arg, n, N_OF(n), &k, "expected fp32, fp16-mixed, bf16-mixed or bf16") < 0)
            return -1;
        t->precision = (vf_precision)k;
        return 1;
    }
    case T_CKPT: {
        static const char *const n[] = {"none", "selective", "full", "unsloth"};
        if (pick("grad-checkpoint", arg, n, N_OF(n), &k, "expected none, selective, full or unsloth") < 0)
            return -1;
        /* unsloth: full recomputation, the checkpoints offloaded to the host */
        t->recompute = k == 3 ? VF_RECOMPUTE_FULL : (vf_recompute)k;
        t->ckpt_offload = k == 3;
        /* said outright, none overrides --kbit-prepare's default checkpointing */
        t->kbit_no_ckpt = k == 0;
        return 1;
    }
    case T_GRAD_ACCUM:
        if (vf_cli_opt_number("grad-accum", arg, 1, 1u << 20, NULL, &v) < 0)
            return -1;
        t->grad_accum = (uint32_t)v;
        return 1;
    case T_EVAL_BATCH:
        if (vf_cli_opt_number("eval-batch", arg, 1, 1u << 24, NULL, &v) < 0)
            return -1;
        t->eval_batch = (uint32_t)v;
        return 1;
    case T_MICRO_BATCH:
        return vf_cli_opt_number("micro-batch", arg, 1, 1u << 24, NULL, &t->micro_batch);
    case T_SEQ_LEN:
        return vf_cli_opt_number("seq-len", arg, 1, 1ull << 30, NULL, &t->seq_len);
    case T_LORA_RANK:
        if (vf_cli_opt_number("lora-rank", arg, 1, 65536, NULL, &v) < 0)
            return -1;
        t->lora_rank = (uint32_t)v;
        return 1;
    case T_LORA_TARGETS:
        if (!arg[0] || strlen(arg) >= sizeof t->lora_targets)
            return vf_cli_opt_bad("lora-targets", arg, "expected q,k,v,o,gate,up,down or all-linear");
        memcpy(t->lora_targets, arg, strlen(arg) + 1);
        return 1;
    case T_QLORA:
        if (strcasecmp(arg, "nf4") && strcasecmp(arg, "nf4-dq"))
            return vf_cli_opt_bad("qlora", arg, "expected nf4 or nf4-dq");
        snprintf(t->qlora, sizeof t->qlora, "%s", strcasecmp(arg, "nf4") ? "nf4-dq" : "nf4");
        return 1;
    case T_ZERO:
        if (vf_cli_opt_number("zero", arg, 0, 3, NULL, &v) < 0)
            return -1;
        t->zero = (int)v;
        return 1;
    case T_FSDP: {
        static const char *const n[] = {"none", "full", "grad-op", "no-shard"};
        if (pick("fsdp", arg, n, N_OF(n), &k, "expected full, grad-op or no-shard") < 0)
            return -1;
        t->fsdp = k;
        return 1;
    }
    case T_EP:
        if (vf_cli_opt_number("ep", arg, 1, 4096, NULL, &v) < 0)
            return -1;
        o->ep = (uint32_t)v;
        return 1;
    case T_OFFLOAD: {
        static const char *const n[] = {"none", "optimizer", "params", "both"};
        if (pick("offload", arg, n, N_OF(n), &k, "expected optimizer, params or both") < 0)
            return -1;
        t->offload = (vf_offload)k;
        return 1;
    }
    case T_OFFLOAD_DEVICE:
        if (strcasecmp(arg, "cpu") && strcasecmp(arg, "nvme"))
            return vf_cli_opt_bad("offload-device", arg, "expected cpu or nvme");
        t->offload_nvme = strcasecmp(arg, "nvme") == 0;
        return 1;
    case T_LORA_DROPOUT: {
        char *end;
        double d = strtod(arg, &end);
        if (end == arg || *end || !(d >= 0 && d < 1))
            return vf_cli_opt_bad("lora-dropout", arg, "expected a probability in [0, 1)");
        t->lora_dropout = (float)d;
        return 1;
    }
    case T_BNB_VERSION:
        return version_opt("bnb-version", arg, t->bnb_version, sizeof t->bnb_version,
                           "expected a version such as 0.42.0");
    case T_STATES_ONLY:
        t->states_only = true;
        return 1;
    case T_GRADS_KEPT:
        o->grads_kept = true;
        return 1;
    case T_OPTIM_IN_BWD:
        t->optim_in_bwd = true;
        return 1;
    case T_ACT_OFFLOAD:
        t->act_offload = true;
        return 1;
    case T_KBIT_PREPARE:
        t->kbit_prepare = true;
        return 1;
    case T_ADAPTER_DTYPE:
        return pick2("adapter-dtype", arg, "fp32", "base", &t->adapter_base_dtype);
    case T_LOAD_DTYPE:
        return pick2("load-dtype", arg, "16", "fp32", &t->load_fp32);
    case T_TORCH_VERSION:
        return version_opt("torch-version", arg, t->torch_version, sizeof t->torch_version,
                           "expected a version such as 1.10");
    case T_LOSS: {
        const char *why = "expected full, chunked, chunked:N (1-4096) or fused";
        if (strncasecmp(arg, "chunked", 7) == 0 && (arg[7] == '\0' || arg[7] == ':')) {
            t->loss = VF_LOSS_CHUNKED;
            t->loss_chunks = 0;
            if (arg[7] == ':') {
                if (vf_cli_opt_number("loss", arg + 8, 1, 4096, NULL, &v) < 0)
                    return -1;
                t->loss_chunks = (uint32_t)v;
            }
            return 1;
        }
        static const char *const n[] = {"full", "", "fused"};
        if (!arg[0] || pick("loss", arg, n, N_OF(n), &k, why) < 0)
            return arg[0] ? -1 : vf_cli_opt_bad("loss", arg, why);
        t->loss = (vf_loss)k;
        return 1;
    }
    case T_FREEZE: {
        /* joined one a line for vf_estimate_opts.graph_freeze; lives as long as the process */
        static char joined[4096];
        size_t have = strlen(joined);
        if (!*arg || strchr(arg, '\n') || have + strlen(arg) + 2 > sizeof joined)
            return vf_cli_opt_bad("freeze", arg, "expected one regular expression (4095 bytes in all)");
        snprintf(joined + have, sizeof joined - have, "%s%s", have ? "\n" : "", arg);
        o->graph_freeze = joined;
        return 1;
    }
    case T_FROZEN_BN:
        o->graph_frozen_bn = true;
        return 1;
    case T_PER_NODE:
        if (vf_cli_opt_number("gpus-per-node", arg, 1, 4096, NULL, &v) < 0)
            return -1;
        t->gpus_per_node = (uint32_t)v;
        return 1;
    default:
        return 0;
    }
}
